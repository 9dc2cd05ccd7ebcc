"""What a still carries besides its pixels that a result should keep: its colour profile and its EXIF.

Pixels are always processed in stored order (Blender shows them so; stills.py ignores EXIF orientation and
profiles on purpose), so a result lines up with its source pixel for pixel. Copying the source's ICC profile and
EXIF block (orientation included) into the result makes every other viewer show the result as it shows the
source: the same rotation, the same colours. Read from the header only, with Pillow; a file without either, or
one Pillow cannot read them from (EXR, HDR, 16-bit colour through PyAV), gives nothing to copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image as PILImage

EXIF_PREFIX = b"Exif\x00\x00"  # JPEG's APP1 marker text, not part of the PNG eXIf chunk


@dataclass(frozen=True)
class StillMetadata:
    icc_profile: bytes | None = None
    exif: bytes | None = None  # the TIFF-structured EXIF block, as PNG's eXIf chunk holds it

    @property
    def empty(self) -> bool:
        return self.icc_profile is None and self.exif is None

    def describe(self) -> str:
        kept = [name for name, value in (("colour profile", self.icc_profile), ("EXIF", self.exif)) if value]
        return "kept the source's " + " and ".join(kept) if kept else "the source has no colour profile or EXIF"


NONE = StillMetadata()


def read_metadata(path: Path) -> StillMetadata:
    try:
        with PILImage.open(path) as image:
            icc = image.info.get("icc_profile") or None
            exif = image.getexif()
            raw = exif.tobytes() if len(exif) else None
    except (OSError, ValueError, SyntaxError):
        return NONE
    if raw is not None and raw.startswith(EXIF_PREFIX):
        raw = raw[len(EXIF_PREFIX) :]
    return StillMetadata(icc if isinstance(icc, bytes) else None, raw)
