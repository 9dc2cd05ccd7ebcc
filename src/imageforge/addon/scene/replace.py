"""Replace an image's content in place with a job's result, keeping what the user set on it.

In place means the same datablock: every material, empty and editor that shows it shows the result, its
name, colour space and alpha mode stay, and the new pixels are packed into the .blend so that clearing the
server's job files never breaks the scene. The original file on disk is never touched.
"""

from __future__ import annotations

from pathlib import Path

import bpy
import numpy as np

from ...contract import InputError
from .pixels import loaded_image, read_data_file, read_pixels, save_pixels


class ResultSizeError(InputError):
    """A result's pixels do not match the image they land on (the user resized it while the job ran); the
    image is left as it was, and running the tool again fixes it (a WARNING, like every InputError)."""


def _size_error(what: str, shape: tuple[int, ...], image: bpy.types.Image) -> ResultSizeError:
    return ResultSizeError(
        f"The {what} is {shape[1]}×{shape[0]} but image '{image.name}' is {image.size[0]}×{image.size[1]} now; "
        "run the tool again."
    )


def replace_from_file(image: bpy.types.Image, result: Path, *, pack: bool = True) -> None:
    """Point the image at the result file, load and pack it (unless `pack` is False: the image then reads the
    file); colour space and alpha mode as before.

    The result is read into a temporary datablock first: a file Blender cannot read raises OSError and leaves
    the image exactly as it was (a generated or painted image would lose its pixels once pointed at a file).
    The colour space is kept only when the result is stored like the original (both byte or both float):
    an 8-bit PNG result of a float EXR must be read as the PNG it is.
    """
    with loaded_image(result, data=False):
        pass  # readable, with pixels
    colorspace = image.colorspace_settings.name
    alpha_mode = image.alpha_mode
    was_float = image.is_float
    source, filepath = image.source, image.filepath
    image.source = "FILE"
    image.filepath = str(result)
    image.reload()
    if image.size[0] == 0:  # unreadable after all (changed on disk since): point the image back
        image.source, image.filepath = source, filepath
        image.reload()
        raise OSError(f"Blender cannot read the result file {Path(result).name}.")
    if image.is_float == was_float:
        image.colorspace_settings.name = colorspace
    image.alpha_mode = alpha_mode
    if pack:
        image.pack()


def multiply_alpha(image: bpy.types.Image, matte: np.ndarray, directory: Path, mask: np.ndarray | None = None) -> None:
    """Multiply a float image by a matte (height, width) in Blender: HDR values never pass through the server.

    Float pixels are premultiplied, so colour and alpha are multiplied alike. With `mask`, only pixels where
    it is true change.
    """
    pixels = read_pixels(image)
    if matte.shape != pixels.shape[:2]:
        raise _size_error("matte", matte.shape, image)
    factor = np.clip(matte, 0.0, 1.0).astype(np.float32)
    if mask is not None:
        factor = np.where(mask, factor, 1.0)
    _replace_with_pixels(image, pixels * factor[..., None], directory)


def replace_within(image: bpy.types.Image, replacement: np.ndarray, mask: np.ndarray, directory: Path) -> None:
    """Take `replacement`'s RGBA (as read by read_data_file) where `mask` is true, keep the image elsewhere.

    For byte images: a byte PNG read as data holds raw values, like the byte image's own pixels.
    """
    pixels = read_pixels(image)
    if replacement.shape != pixels.shape:
        raise _size_error("result", replacement.shape, image)
    _replace_with_pixels(image, np.where(mask[..., None], replacement, pixels), directory)


def keep_within(image: bpy.types.Image, replacement: np.ndarray, mask: np.ndarray, directory: Path) -> None:
    """Take `replacement`'s RGBA where `mask` is true; elsewhere the image becomes transparent (its colour kept,
    alpha 0): what lies outside a selection is background."""
    pixels = read_pixels(image)
    if replacement.shape != pixels.shape:
        raise _size_error("result", replacement.shape, image)
    cleared = pixels.copy()
    cleared[..., 3] = 0.0
    _replace_with_pixels(image, np.where(mask[..., None], replacement, cleared), directory)


def _replace_with_pixels(image: bpy.types.Image, pixels: np.ndarray, directory: Path) -> None:
    """Write the new pixels to a file next to the job's results, then replace from that file.

    Packing a changed buffer directly (Image.pack on a dirty image) re-encodes it and was seen to drop the
    alpha channel of byte images; packing a written file keeps every value. The pixels go to the file, never
    into the image itself, so a file that cannot be written leaves the image as it was.
    """
    if pixels.shape[:2] != (image.size[1], image.size[0]):
        raise _size_error("result", pixels.shape, image)
    path = Path(directory) / f"landed-{_safe(image.name)}"
    landed = save_pixels(pixels, path, is_float=image.is_float, name=image.name)
    replace_from_file(image, landed)


def _safe(name: str) -> str:
    return "".join(character if character.isalnum() else "_" for character in name)[:64]


def matte_from_file(path: Path) -> np.ndarray:
    """A matte file (single-channel PNG or EXR) as (height, width) float32 in 0..1."""
    return read_data_file(path)[..., 0]
