"""Result writers: JSON and NPZ, each atomic (see atomic.py).

PNG lives in png_stream.py (the one PNG encoder and its policy), float EXR in exr.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .atomic import atomic_file


def write_json(path: Path, data: Any) -> Path:
    """Atomically write JSON (UTF-8, indented); NaN or infinity is a bug and raises ValueError."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    with atomic_file(Path(path)) as temporary:
        temporary.write_text(text + "\n", encoding="utf-8")
    return Path(path)


def write_npz(path: Path, arrays: Mapping[str, np.ndarray], *, compressed: bool = True) -> Path:
    """Atomically write named arrays to a .npz (compressed by default); returns `path`."""
    save = np.savez_compressed if compressed else np.savez
    with atomic_file(Path(path)) as temporary, open(temporary, "wb") as handle:
        # numpy types **kwds as possibly its allow_pickle flag; these are only array names.
        save(handle, **{name: np.asarray(array) for name, array in arrays.items()})  # type: ignore[arg-type]
    return Path(path)
