"""Writes the small pymatting reference the test suite compares our foreground estimation with.

    /work/envs/<parity env>/bin/python bench/parity/pymatting_reference.py     # pymatting==1.1.16, numba

pymatting is a test-only reference (never in the server environment); the suite has no numba, so the reference
output for one small hair composite (tests/kit/hair_composite.py) is kept as tests/server/matting/
pymatting_reference.npz (image, alpha, pymatting's foreground with its defaults). A second, larger one,
pymatting_reference_large.npz, is 1024×768: large enough that its top level goes tile by tile and runs the
large levels' single sweep; it keeps only pymatting's foreground on the soft pixels, as 16-bit steps (the suite
makes the same composite again; the matte's soft count and sum are kept to check that it did). The full-size
parity row runs pymatting itself (bench/parity/run.py foreground).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pymatting import estimate_foreground_ml  # noqa: E402
from tests.kit.hair_composite import hair_composite  # noqa: E402

TARGET = ROOT / "tests" / "server" / "matting" / "pymatting_reference.npz"
LARGE = ROOT / "tests" / "server" / "matting" / "pymatting_reference_large.npz"
LARGE_COMPOSITE = {"width": 1024, "height": 768, "strands": 60, "seed": 11}


def main() -> None:
    composite = hair_composite(96, 72, strands=24, seed=7)
    foreground = estimate_foreground_ml(composite.image, composite.alpha)
    np.savez_compressed(TARGET, image=composite.image, alpha=composite.alpha, foreground=foreground.astype(np.float32))
    print(f"wrote {TARGET} ({TARGET.stat().st_size} bytes)")
    large = hair_composite(**LARGE_COMPOSITE)
    soft = large.soft
    steps = np.round(estimate_foreground_ml(large.image, large.alpha)[soft] * 65535).astype(np.uint16)
    np.savez_compressed(
        LARGE,
        foreground_soft=steps,
        soft_count=int(soft.sum()),
        alpha_sum=float(large.alpha.sum(dtype=np.float64)),
        **LARGE_COMPOSITE,
    )
    print(f"wrote {LARGE} ({LARGE.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
