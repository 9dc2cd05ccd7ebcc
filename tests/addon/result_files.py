"""Write job result files exactly in the formats contract/jobs.py documents, with Blender's own image API.

Arrays are top row first (image order), as the jobs' pixel coordinates are; Blender stores rows bottom-up,
so every writer flips once. A throwaway scene carries the render settings save_render() needs, with the Raw
view transform so data values are written untouched.
"""

from __future__ import annotations

import json
from pathlib import Path

import bpy
import numpy as np


def _image(name: str, pixels: np.ndarray, *, float_buffer: bool) -> bpy.types.Image:
    height, width = pixels.shape[:2]
    rgba = np.ones((height, width, 4), dtype=np.float32)
    if pixels.ndim == 2:
        rgba[..., :3] = pixels[..., None]
    else:
        rgba[..., : pixels.shape[2]] = pixels
    image = bpy.data.images.new(name, width, height, alpha=True, float_buffer=float_buffer)
    image.colorspace_settings.is_data = True
    image.alpha_mode = "CHANNEL_PACKED"
    image.pixels.foreach_set(np.flipud(rgba).ravel())
    return image


def _save_render(image: bpy.types.Image, path: Path, **settings: str) -> Path:
    scene = bpy.data.scenes.new(".result-writer")
    try:
        scene.view_settings.view_transform = "Raw"
        for name, value in settings.items():
            setattr(scene.render.image_settings, name, value)
        image.save_render(str(path), scene=scene)
    finally:
        bpy.data.scenes.remove(scene)
        bpy.data.images.remove(image)
    return path


def write_png_rgba(path: Path, pixels: np.ndarray) -> Path:
    """8-bit RGBA PNG from (h, w, 4) values in 0..1 (stored as value × 255, straight alpha)."""
    image = _image(path.stem, pixels, float_buffer=False)
    try:
        image.filepath_raw = str(path)
        image.file_format = "PNG"
        image.save()
    finally:
        bpy.data.images.remove(image)
    return path


def write_png_rgb(path: Path, pixels: np.ndarray) -> Path:
    return _save_render(_image(path.stem, pixels, float_buffer=True), path, file_format="PNG", color_mode="RGB")


def write_png_gray16(path: Path, values: np.ndarray) -> Path:
    """Single-channel 16-bit PNG (a matte) from (h, w) values in 0..1."""
    image = _image(path.stem, values, float_buffer=True)
    return _save_render(image, path, file_format="PNG", color_mode="BW", color_depth="16")


def write_exr(path: Path, pixels: np.ndarray) -> Path:
    """Float32 ZIP EXR: (h, w, 4) as RGBA, or (h, w) as a grey matte."""
    image = _image(path.stem, pixels, float_buffer=True)
    mode = "BW" if pixels.ndim == 2 else "RGBA"
    return _save_render(image, path, file_format="OPEN_EXR", color_mode=mode, color_depth="32", exr_codec="ZIP")


def write_json(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def write_points_ply(path: Path, points: np.ndarray, colours: np.ndarray) -> Path:
    """points.ply as docs/jobs.md documents it: binary little-endian, x y z float32 and red green blue uchar."""
    vertex = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1")])
    records = np.empty(len(points), vertex)
    for axis, name in enumerate("xyz"):
        records[name] = points[:, axis]
    for axis, name in enumerate(("red", "green", "blue")):
        records[name] = colours[:, axis]
    header = (
        "ply\nformat binary_little_endian 1.0\ncomment written by a test\n"
        f"element vertex {len(points)}\n"
        "property float x\nproperty float y\nproperty float z\n"
        "property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n"
    )
    path.write_bytes(header.encode("ascii") + records.tobytes())
    return path


def cameras_document(
    size: tuple[int, int],
    numbers: tuple[int, ...],
    extrinsics: list[np.ndarray],
    focals: tuple[float, ...],
    centre: tuple[float, float],
) -> dict:
    """cameras.json as the server writes it (contract/cameras.py): one window, fx = fy per frame."""
    from imageforge.contract.cameras import FrameCamera, MultiviewCameras

    return MultiviewCameras(
        convention="world-to-camera [R | t], OpenCV camera axes",
        model="DA3_SMALL",
        image_size=size,
        model_size=504,
        windows=((0, len(numbers) - 1),),
        frames=tuple(
            FrameCamera(number, tuple(tuple(row) for row in pose.tolist()), focal, focal, *centre)
            for number, pose, focal in zip(numbers, extrinsics, focals, strict=True)
        ),
    ).to_json()
