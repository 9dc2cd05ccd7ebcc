"""The versioned documents a job writes for the other side: depth metadata and the multi-view camera path."""

from __future__ import annotations

import json
import math

import pytest

from imageforge.contract import InputError
from imageforge.contract.cameras import CAMERAS_VERSION, FrameCamera, MultiviewCameras
from imageforge.contract.depth_metadata import DEPTH_METADATA_VERSION, DepthMetadata

METADATA = DepthMetadata((640, 480), (320, 240), 500.0, 500.0, 320.0, 250.0, 2.5)
TURN = math.radians(30)
CAMERAS = MultiviewCameras(
    convention="world-to-camera [R | t], OpenCV camera axes",
    model="DA3_SMALL",
    image_size=(64, 48),
    model_size=504,
    windows=((0, 1),),
    frames=(
        FrameCamera(3, ((1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0)), 60.0, 60.0, 32.0, 24.0),
        FrameCamera(
            7,
            ((math.cos(TURN), 0, math.sin(TURN), 0.5), (0, 1, 0, 0), (-math.sin(TURN), 0, math.cos(TURN), 0.1)),
            61.0,
            61.0,
            31.5,
            24.5,
        ),
    ),
)


def through_json(document: dict) -> dict:
    return json.loads(json.dumps(document))


def test_depth_metadata_round_trips_in_the_layout_written_before_versions():
    document = through_json(METADATA.to_json())
    assert document == {
        "version": 1,
        "image_size": [640, 480],
        "analysed_size": [320, 240],
        "fx": 500.0,
        "fy": 500.0,
        "cx": 320.0,
        "cy": 250.0,
        "reference_depth": 2.5,
    }
    assert DepthMetadata.from_json(document) == METADATA


def test_cameras_round_trip():
    document = through_json(CAMERAS.to_json())
    assert document["version"] == CAMERAS_VERSION == 1
    assert document["frames"][0] == {
        "frame": 3,
        "extrinsics": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]],
        "intrinsics": {"fx": 60.0, "fy": 60.0, "cx": 32.0, "cy": 24.0},
    }
    assert MultiviewCameras.from_json(document) == CAMERAS


@pytest.mark.parametrize(("kind", "value"), [(DepthMetadata, METADATA), (MultiviewCameras, CAMERAS)])
def test_a_file_without_version_is_version_1(kind, value):
    document = through_json(value.to_json())
    del document["version"]
    assert kind.from_json(document) == value


@pytest.mark.parametrize(
    ("kind", "value", "what", "newest"),
    [
        (DepthMetadata, METADATA, "The depth metadata", DEPTH_METADATA_VERSION),
        (MultiviewCameras, CAMERAS, "The camera path", CAMERAS_VERSION),
    ],
)
def test_a_newer_version_is_refused_with_what_to_do(kind, value, what, newest):
    with pytest.raises(InputError) as caught:
        kind.from_json({**value.to_json(), "version": newest + 1})
    assert str(caught.value) == (
        f"{what} has layout version {newest + 1}, newer than this ImageForge reads ({newest}); update the add-on."
    )
    with pytest.raises(InputError, match=f"^{what}: version must be a whole number from 1 \\(found '1'\\)\\.$"):
        kind.from_json({**value.to_json(), "version": "1"})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"fx": None}, "The depth metadata: fx is missing."),
        ({"fy": 0}, "The depth metadata: fy must be a positive number (found 0)."),
        ({"fy": "f" * 100}, f"The depth metadata: fy must be a positive number (found '{'f' * 36}...)."),  # cut short
        ({"cx": float("nan")}, "The depth metadata: cx must be a finite number (found nan)."),
        ({"reference_depth": True}, "The depth metadata: reference_depth must be a positive number (found True)."),
        ({"image_size": [640]}, "The depth metadata: image_size must be [width, height] in pixels (found [640])."),
        (
            {"analysed_size": ["320", 240]},
            "The depth metadata: analysed_size must be [width, height] in pixels (found ['320', 240]).",
        ),  # fmt: skip
    ],
)
def test_depth_metadata_names_the_wrong_field_in_one_sentence(change, message):
    document = {**METADATA.to_json(), **change}
    document = {name: value for name, value in document.items() if value is not None}
    with pytest.raises(InputError) as caught:
        DepthMetadata.from_json(document)
    assert str(caught.value) == message


def test_a_document_that_is_not_an_object_is_refused():
    with pytest.raises(InputError, match=r"^The depth metadata is not a JSON object\.$"):
        DepthMetadata.from_json([1, 2])
    with pytest.raises(InputError, match=r"^The camera path is not a JSON object\.$"):
        MultiviewCameras.from_json("cameras")


def frame_change(position: int, **change) -> dict:
    document = CAMERAS.to_json()
    document["frames"][position] = {**document["frames"][position], **change}
    return document


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({**CAMERAS.to_json(), "frames": []}, "The camera path: frames must be a non-empty list (found [])."),
        (
            {**CAMERAS.to_json(), "image_size": [16]},
            "The camera path: image_size must be [width, height] in pixels (found [16]).",
        ),  # fmt: skip
        (
            {**CAMERAS.to_json(), "frames": CAMERAS.to_json()["frames"][::-1]},
            "The camera path: frame numbers do not increase.",
        ),
        (
            frame_change(1, intrinsics={"fx": 0, "fy": 1, "cx": 0, "cy": 0}),
            "The camera path, frame 7, intrinsics: fx must be a positive number (found 0).",
        ),
        (
            frame_change(1, extrinsics=[[3, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]),
            "The camera path, frame 7: extrinsics do not hold a rotation.",
        ),
        (
            frame_change(0, extrinsics=[[-1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]),  # a mirror
            "The camera path, frame 3: extrinsics do not hold a rotation.",
        ),
        (
            frame_change(0, extrinsics=[[1, 0, 0], [0, 1, 0], [0, 0, 1]]),
            "The camera path, frame 3: extrinsics must be a 3×4 matrix of finite numbers "
            "(found [[1, 0, 0], [0, 1, 0], [0, 0, 1]]).",
        ),
        (frame_change(0, frame="3"), "The camera path, frame #1: frame must be a whole number from 0 (found '3')."),
        (
            {**CAMERAS.to_json(), "model_size": None},
            "The camera path: model_size must be a whole number from 1 (found None).",
        ),
    ],
)
def test_cameras_name_the_wrong_field_in_one_sentence(document, message):
    with pytest.raises(InputError) as caught:
        MultiviewCameras.from_json(document)
    assert str(caught.value) == message


def test_reading_a_missing_or_broken_file_is_one_sentence(tmp_path):
    with pytest.raises(InputError, match=r"^Cannot read the depth metadata depth_metadata\.json: "):
        DepthMetadata.read(tmp_path / "depth_metadata.json")
    (tmp_path / "cameras.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match=r"^Cannot read the camera path cameras\.json: "):
        MultiviewCameras.read(tmp_path / "cameras.json")
