"""Running MoGe-2 on a still: the display pixels over black at the analysis size, one model run, its log line.

The depth-plane and cutout jobs both analyse the whole image this way (a cutout crops afterwards, so the
model sees the context around the object and its camera stays the photo's camera).
"""

from __future__ import annotations

import numpy as np

from ...contract.errors import InputError
from ...contract.sizes import geometry_size_problem
from ..media import MediaSource, fit_long_edge_size
from ..models.display import over_black, over_black_at
from ..models.moge2 import MoGe2Adapter, MoGeResult
from .progress import JobProgress, Stage


def check_analysable(source: MediaSource, max_input_size: int) -> None:
    """Refuse, from the headers and before any model is loaded, a still too small for a camera (contract/sizes.py)."""
    if (problem := geometry_size_problem((source.width, source.height), max_input_size)) is not None:
        raise InputError(problem)


def geometry_rgb(pixels: np.ndarray, max_input_size: int) -> np.ndarray:
    """Display pixels over black at MoGe-2's analysis size: what the adapter's prepare makes of them (its own
    resize is then a no-op), composited per channel so no full-size RGB copy is made (3 GiB at 16384²)."""
    height, width = pixels.shape[:2]
    analysed = fit_long_edge_size((width, height), max_input_size)
    if analysed == (width, height):
        return over_black(pixels)
    scaled: np.ndarray = np.clip(over_black_at(pixels, analysed), 0.0, 1.0)
    return scaled


def analyse(
    progress: JobProgress,
    stage: Stage,
    adapter: MoGe2Adapter,
    rgb: np.ndarray,
    max_input_size: int,
    resolution_level: int,
) -> MoGeResult:
    """Run MoGe-2 once on display RGB composited over black, as the job's `stage`, and log what it analysed."""
    progress.enter(stage, f"Running {adapter.entry.label}")
    result = adapter.analyse(rgb, max_input_size=max_input_size, resolution_level=resolution_level)
    progress.context.log(
        f"Analysed {result.analysed_size[0]}×{result.analysed_size[1]} with {result.num_tokens} tokens; "
        f"valid {result.frame.valid.mean():.1%}; timings { ({k: round(v, 3) for k, v in result.timings.items()}) }"
    )
    return result
