"""Give a storage root a ready converter environment and random weights of the real architectures, offline:
a DA3-Small safetensors, and a SAM 2.1 Hiera Tiny checkpoint (`{"model": state_dict}`, as Meta publishes).

The environment is built once per set of pins by the production code (`server.conversion.environment`) from
the local wheelhouse of tests/kit/converter_wheels.py (torch's CPU wheel and the other pinned wheels, fetched
by `bash tests/sync`), into the test cache; each test's storage root links it as `converters/<digest>`, where
the convert-model job finds it ready. The weights are made by tests/kit/da3_weights.py with that
environment's own torch, once per pins, and kept beside it; the SAM 2.1 one by the converter's own
`sam2_export.random_checkpoint` in that environment (every parameter and buffer random, seeded).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

from imageforge.contract.conversions import WHEELHOUSE_VARIABLE, load_conversions
from imageforge.server.conversion.environment import converters_root, ensure_environment, ready_python, uv_step
from tests.kit.converter_wheels import WHEELHOUSE, missing
from tests.kit.server_env import cache_root

WEIGHTS_SCRIPT = Path(__file__).with_name("da3_weights.py")
CONVERTER_SCRIPTS = Path(__file__).resolve().parents[2] / "src" / "imageforge" / "converter"
SAM2_SEED = 3


def wheelhouse() -> Path:
    left = missing(WHEELHOUSE)
    if left:  # not a skip: CI syncs them, and a silently skipped conversion test proves nothing
        raise RuntimeError(f"{WHEELHOUSE} lacks {', '.join(left)}: run `bash tests/sync` (it downloads them).")
    return WHEELHOUSE


def cached_converter() -> tuple[Path, Path]:
    """(the cached storage root holding the ready converter environment, the random DA3-Small weights)."""
    environment = load_conversions().environment
    root = cache_root() / f"converter-{environment.digest}"
    root.mkdir(parents=True, exist_ok=True)
    weights = root / "da3-small-random-filled.safetensors"  # every parameter random (da3_weights.py)
    with (root.parent / f".{root.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        python = ready_python(root, environment)
        if python is None:
            os.environ[WHEELHOUSE_VARIABLE] = str(wheelhouse())
            try:
                python = ensure_environment(root, environment, uv_step(root / "uv.log", lambda: False), print)
            finally:
                del os.environ[WHEELHOUSE_VARIABLE]
        if not weights.is_file():
            partial = weights.with_suffix(".part")
            subprocess.run([str(python), str(WEIGHTS_SCRIPT), "da3-small", str(partial)], check=True, timeout=600)
            partial.replace(weights)
    return root, weights


def sam2_tiny_checkpoint() -> Path:
    """A random-weight checkpoint of the real SAM 2.1 Hiera Tiny, made once per pins beside the environment."""
    cached, _ = cached_converter()
    checkpoint = cached / f"sam2.1-hiera-tiny-random-{SAM2_SEED}.pt"
    with (cached.parent / f".{cached.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not checkpoint.is_file():
            python = ready_python(cached, load_conversions().environment)
            assert python is not None
            partial = checkpoint.with_suffix(".part")
            code = (
                "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import sam2_export; "
                "sam2_export.random_checkpoint('tiny', int(sys.argv[2]), Path(sys.argv[3]))"
            )
            command = [str(python), "-c", code, str(CONVERTER_SCRIPTS), str(SAM2_SEED), str(partial)]
            subprocess.run(command, check=True, timeout=600)
            partial.replace(checkpoint)
    return checkpoint


def install_converter(storage_root: Path) -> Path:
    """Link the cached converter environment into `storage_root`; returns the random DA3-Small weights."""
    cached, weights = cached_converter()
    digest = load_conversions().environment.digest
    link = converters_root(storage_root) / digest
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(converters_root(cached) / digest, target_is_directory=True)
    return weights
