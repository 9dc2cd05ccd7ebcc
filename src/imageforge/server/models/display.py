"""What an image model sees: display-referred colour in [0, 1], whatever the source stored.

BEN2 and the Real-ESRGAN family were trained on 8-bit sRGB photographs. Integer sources (8/16-bit PNG,
JPEG, video) already hold display-encoded values in [0, 1]. Float sources (EXR renders, Radiance HDR) hold
scene-linear light, often above 1 and premultiplied: fed raw, mid-tones look dark to the model and
highlights are cut off arbitrarily. So float colour is un-premultiplied, encoded with the sRGB transfer
function and clipped before a model sees it, and a result written as PNG is display-encoded the same way.
"""

from __future__ import annotations

import numpy as np
from PIL import Image as PILImage

from ..media import Image, SampleKind, resize

EIGHT_BIT_BAND_PIXELS = 1 << 22  # source pixels quantised at a time (16 MiB of float32 per channel)


def srgb_encode(linear: np.ndarray) -> np.ndarray:
    """Scene-linear values to sRGB-encoded [0, 1] (clipped), float32."""
    x = np.clip(linear, 0.0, 1.0).astype(np.float32, copy=False)
    encoded: np.ndarray = np.where(x <= 0.0031308, x * 12.92, 1.055 * np.power(x, 1.0 / 2.4) - 0.055)
    return encoded.astype(np.float32)


def display_pixels(image: Image) -> np.ndarray:
    """Straight colour in [0, 1], display-encoded, with the source alpha kept: (H, W, 3) or (H, W, 4)."""
    straight = image.straight()
    if image.sample_kind is not SampleKind.FLOAT:
        return straight.pixels
    rgb = srgb_encode(straight.rgb)
    if not straight.has_alpha:
        return rgb
    alpha = np.clip(straight.pixels[..., 3:4], 0.0, 1.0)
    return np.concatenate([rgb, alpha], axis=2)


def over_black(pixels: np.ndarray) -> np.ndarray:
    """Display pixels (H, W, 3|4) composited over black: the RGB a background model analyses."""
    if pixels.shape[2] == 3:
        return pixels
    composited: np.ndarray = pixels[..., :3] * pixels[..., 3:4]
    return composited


def over_black_at(pixels: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """`resize(over_black(pixels), size)`, composited one channel at a time.

    The same values, without the full-size RGB copy over_black makes of an RGBA image (3 GiB at 16384²)
    when all a model needs is its analysis size.
    """
    if pixels.shape[2] == 3:
        return resize(pixels, size)
    width, height = size
    out = np.empty((height, width, 3), dtype=np.float32)
    for channel in range(3):
        out[..., channel] = resize(pixels[..., channel] * pixels[..., 3], size)
    return out


def over_black_8bit(pixels: np.ndarray) -> PILImage.Image:
    """Display pixels (H, W, 3|4) over black as the 8-bit RGB image a model's official code opens.

    Models trained on 8-bit photographs are fed by code that resizes the 8-bit image itself (PIL, two passes,
    rounding to 8 bits between them); doing that on the same 8-bit values reproduces their input exactly,
    which resizing in float never does. Values are rounded, so an 8-bit source (k / 255) comes back as k.
    Filled band by band: no full-size float copy of the composite.
    """
    height, width = pixels.shape[:2]
    image = PILImage.new("RGB", (width, height))
    band = max(1, EIGHT_BIT_BAND_PIXELS // max(1, width))
    for top in range(0, height, band):
        rgb = over_black(pixels[top : top + band])
        quantised = np.rint(np.clip(rgb, 0.0, 1.0) * 255.0).astype(np.uint8)
        image.paste(PILImage.fromarray(np.ascontiguousarray(quantised), "RGB"), (0, top))
    return image
