"""generate-multiview-cameras' point cloud (points.ply) and COLMAP export (colmap.zip) on the kit DA3 model.

The kit model's answer is known (tests/server/jobs/test_multiview.py): view i at world-to-camera
[I | (0.1·i, 0, 0)], a 64 px focal centred in the 64 × 48 frames, and a constant depth per frame (its colour).
The PLY is read back by `plyfile`, the COLMAP model by COLMAP's own reader (`pycolmap`, test dependency only),
whose projection of every point must land on the pixel it came from and where cameras.json puts it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pycolmap
from plyfile import PlyData

from imageforge.contract import JobId
from imageforge.contract.cameras import MultiviewCameras
from imageforge.contract.results import ResultName

from .geometry_kit import jobs_fixture, use_catalog_fixture  # noqa: F401  (fixtures)
from .test_multiview import BASELINE, da3_catalog_fixture, expected_depth, sequence_fixture  # noqa: F401  (fixtures)

JOB = JobId.GENERATE_MULTIVIEW_CAMERAS
EVERY_PIXEL = {"point_frame_step": 1, "point_confidence": 0.0, "point_tear_ratio": 0.0, "max_points": 10**6}


def read_ply(path: Path) -> tuple[np.ndarray, np.ndarray]:
    vertex = PlyData.read(str(path))["vertex"]
    assert [prop.name for prop in vertex.properties] == ["x", "y", "z", "red", "green", "blue"]
    points = np.stack([vertex["x"], vertex["y"], vertex["z"]], axis=1)
    return points, np.stack([vertex["red"], vertex["green"], vertex["blue"]], axis=1)


def project(cameras: MultiviewCameras, position: int, points: np.ndarray) -> np.ndarray:
    """Where cameras.json's pinhole puts world points in frame `position` (continuous pixels)."""
    frame = cameras.frames[position]
    pose = np.asarray(frame.extrinsics)
    camera = points @ pose[:, :3].T + pose[:, 3]
    return np.stack(
        [camera[:, 0] / camera[:, 2] * frame.fx + frame.cx, camera[:, 1] / camera[:, 2] * frame.fy + frame.cy], 1
    )


def test_points_are_every_pixel_back_projected_in_the_path_s_world_with_their_colour(jobs, da3_catalog, sequence):
    da3_catalog()
    folder, palette = sequence
    outcome = jobs.run(JOB, {"input": str(folder), "points": True, **EVERY_PIXEL})
    assert outcome.state == "succeeded", outcome.error
    assert outcome.result[ResultName.POINTS] == "points.ply" and ResultName.COLMAP not in outcome.result
    points, colours = read_ply(outcome.file(ResultName.POINTS))
    assert points.shape == (8 * 64 * 48, 3) and points.dtype == np.float32
    for index in range(8):  # frame i: a plane at its depth, seen from (−0.1·i, 0, 0)… in world x, shifted by −t
        mine = slice(index * 64 * 48, (index + 1) * 64 * 48)
        depth = expected_depth(palette[index])
        np.testing.assert_allclose(points[mine, 2], depth, atol=2e-3)
        x = points[mine, 0] + BASELINE * index  # undo the camera's translation
        np.testing.assert_allclose(x.min(), (0.5 - 32) / 64 * depth, atol=2e-3)
        np.testing.assert_allclose(x.max(), (63.5 - 32) / 64 * depth, atol=2e-3)
        assert (colours[mine] == np.round(palette[index] * 255)).all()


def test_max_points_spreads_the_budget_over_the_point_frames(jobs, da3_catalog, sequence):
    da3_catalog()
    parameters = {"input": str(sequence[0]), "points": True, **EVERY_PIXEL, "max_points": 800, "point_frame_step": 2}
    outcome = jobs.run(JOB, parameters)
    assert outcome.state == "succeeded", outcome.error
    points, _ = read_ply(outcome.file(ResultName.POINTS))
    assert len(points) == 800  # frames 1, 3, 5, 7: 200 each
    expected = sorted(round(expected_depth(sequence[1][index]), 2) for index in (0, 2, 4, 6) for _ in range(200))
    assert sorted(np.round(points[:, 2].astype(np.float64), 2)) == expected


def test_the_colmap_export_reads_back_in_colmap_and_reprojects_onto_its_pixels(jobs, da3_catalog, sequence, tmp_path):
    da3_catalog()
    parameters = {"input": str(sequence[0]), "export": "colmap", **EVERY_PIXEL, "max_points": 2000}
    outcome = jobs.run(JOB, parameters)
    assert outcome.state == "succeeded", outcome.error
    assert {ResultName.POINTS, ResultName.COLMAP} <= set(outcome.result)  # the export implies the cloud
    with zipfile.ZipFile(outcome.file(ResultName.COLMAP)) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "colmap")
    assert {"sparse/0/cameras.txt", "sparse/0/images.txt", "sparse/0/points3D.txt"} <= names
    assert {f"images/frame_{number:06d}.png" for number in range(1, 9)} <= names
    cameras = MultiviewCameras.read(outcome.file(ResultName.CAMERAS))
    model = pycolmap.Reconstruction(str(tmp_path / "colmap" / "sparse" / "0"))
    assert (len(model.cameras), len(model.images), len(model.points3D)) == (8, 8, 2000)
    worst = 0.0
    for image_id, image in model.images.items():
        camera = model.cameras[image.camera_id]
        assert (camera.model.name, camera.width, camera.height) == ("PINHOLE", 64, 48)
        assert image.name == f"frame_{image_id:06d}.png"
        pose = image.cam_from_world() if callable(image.cam_from_world) else image.cam_from_world
        observed = [point for point in image.points2D if point.has_point3D()]
        assert observed
        xyz = np.array([model.points3D[point.point3D_id].xyz for point in observed])
        theirs = np.array([camera.img_from_cam(pose * row) for row in xyz])[:, :2]
        ours = project(cameras, image_id - 1, xyz)
        pixels = np.array([point.xy for point in observed])
        worst = max(worst, float(np.abs(theirs - pixels).max()), float(np.abs(ours - pixels).max()))
    assert worst < 0.01, (
        worst
    )  # (the issue asks 0.5 px) COLMAP's own projection and ours land on the pixel centre each point came from
    print(f"worst COLMAP re-projection: {worst:.2e} px")
