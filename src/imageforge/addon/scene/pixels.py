"""Move pixels between files, Blender images and NumPy arrays without colour surprises.

Blender's `Image.pixels` returns raw values for byte images (byte / 255, no colour transform), scene-linear
premultiplied values for float images, and stores rows bottom-up. Everything here hands out arrays in image
order (row 0 = top, matching the pixel coordinates the jobs use) and reads data files (mattes, depth, normals)
as Non-Color with channel-packed alpha, so Blender neither linearises nor un-premultiplies them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import bpy
import numpy as np


def read_pixels(image: bpy.types.Image) -> np.ndarray:
    """(height, width, 4) float32, top row first."""
    width, height = image.size
    flat = np.empty(width * height * 4, dtype=np.float32)
    image.pixels.foreach_get(flat)
    return np.flipud(flat.reshape(height, width, 4))


def write_pixels(image: bpy.types.Image, pixels: np.ndarray) -> None:
    """Write (height, width, 4) top-row-first pixels into `image` (same size) and mark it changed."""
    height, width = pixels.shape[:2]
    if tuple(image.size) != (width, height):
        raise ValueError(f"Pixel array is {width}×{height}, image '{image.name}' is {image.size[0]}×{image.size[1]}")
    image.pixels.foreach_set(np.ascontiguousarray(np.flipud(pixels), dtype=np.float32).ravel())
    image.update()


@contextlib.contextmanager
def loaded_image(path: Path, *, data: bool) -> Iterator[bpy.types.Image]:
    """A temporary image datablock for `path`, removed afterwards. `data`: read values as stored.

    A file Blender cannot read raises OSError.
    """
    try:
        image = bpy.data.images.load(str(path), check_existing=False)
    except RuntimeError as error:
        raise OSError(f"Blender cannot read the result file {Path(path).name}.") from error
    try:
        if data:
            image.colorspace_settings.is_data = True
            image.alpha_mode = "CHANNEL_PACKED"
        if image.size[0] == 0 or image.size[1] == 0:
            raise OSError(f"Blender cannot read the result file {Path(path).name}.")
        yield image
    finally:
        bpy.data.images.remove(image)


def read_data_file(path: Path) -> np.ndarray:
    """A data image (EXR depth, PNG matte or normal map) as stored: (height, width, 4) float32, top row first.

    8-bit files read as value / 255 and 16-bit files as value / 65535; single-channel files come back with the
    value in R, G and B and A = 1.
    """
    with loaded_image(path, data=True) as image:
        return read_pixels(image)


def export_pixels(image: bpy.types.Image, path: Path) -> Path:
    """Write the image's current pixels to `path` (PNG for byte images, 32-bit EXR for float ones).

    Goes through a temporary copy (save_pixels): `Image.save(filepath=...)` on the user's image would clear its
    unsaved changes flag and turn generated images into file images.
    """
    return save_pixels(read_pixels(image), path, is_float=image.is_float, name=image.name)


def save_pixels(pixels: np.ndarray, path: Path, *, is_float: bool, name: str) -> Path:
    """Write (height, width, 4) top-row-first values as stored in a Blender image (raw bytes / 255, or
    scene-linear premultiplied floats) to `path`: PNG when not `is_float`, else 32-bit EXR.

    A temporary datablock holds them as data with channel-packed alpha, so they are written without colour or
    alpha conversion. `name` is the image's, for the message when Blender cannot write the file (OSError).
    """
    height, width = pixels.shape[:2]
    path = Path(path).with_suffix(".exr" if is_float else ".png")
    copy = bpy.data.images.new(f".imageforge-export-{name}", width, height, alpha=True, float_buffer=is_float)
    try:
        copy.colorspace_settings.is_data = True
        copy.alpha_mode = "CHANNEL_PACKED"
        write_pixels(copy, pixels)
        copy.filepath_raw = str(path)
        copy.file_format = "OPEN_EXR" if is_float else "PNG"
        try:
            copy.save()
        except RuntimeError as error:  # Blender's only signal that the file could not be written
            raise OSError(f"Blender could not write the pixels of '{name}' to {path}.") from error
    finally:
        bpy.data.images.remove(copy)
    return path
