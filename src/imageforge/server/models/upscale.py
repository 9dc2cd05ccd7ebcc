"""The Real-ESRGAN family (SRVGGNetCompact x4v3, RRDBNet x4plus, and exports like them): tiled upscaling.

- Tensor names, dtypes and the batch dimension are read from the session. Declared output shapes are not
  trusted (legacy exports label them with the input's symbols): the scale is the catalog entry's `scale`
  option, else measured once on a small probe, and every output is checked against it.
- Large images run as overlapping tiles blended with feathered weights (server/upscaling/tiling.py), so
  there are no seams, and the output is streamed in row bands to a sink: no float copy of the whole output exists.
- Tile size: `tile_size` is the core each run keeps; the model's context (`tile_margin`, its receptive
  radius, plus half of `tile_blend`) is added around it. Automatic (0): the whole image in one run when
  its activations fit a memory budget, else the largest core whose runs fit it; cores split each axis
  evenly, so the overlap work is as small as the budget allows.
  Batches of tiles only on CUDA, where they fill the device; on CPU one tile already uses every thread,
  and DirectML pins the batch dimension to 1.
- Alpha is upscaled separately, as a grey image through the same model (crisp edges, no colour bleeding
  into transparency), unless it is fully opaque, which costs nothing. The model's three output channels are
  clamped to [0, 1] and turned back into one with 0.299 R + 0.587 G + 0.114 B, as Real-ESRGAN's own code does
  (its output clamp, then OpenCV's BGR2GRAY).
- Scale 2 with a 4× model: the 4× rows are halved with Lanczos-3 as they are finished
  (server/upscaling/halving.py).
- Outputs are clamped to [0, 1]; the arena is shrunk only after the job's last tile (`last_frame`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...contract import Device, InputError, ModelUnavailableError
from ...contract.catalog import Family, ModelEntry
from ..inference import SessionHandle
from ..upscaling.halving import BandHalver
from ..upscaling.tiling import TileGrid, context_pixels, plan_tiles, run_tiled
from .base import Adapter

Sink = Callable[[int, np.ndarray], None]  # (first output row, clamped float32 rows [h, W, C])
OnTile = Callable[[int, int], None]  # (tiles done, tiles in the frame)

DEFAULT_MARGIN = 10  # input pixels of context each tile gets beyond what it contributes (Real-ESRGAN's tile_pad)
DEFAULT_BLEND = 16  # input pixels over which neighbouring tiles cross-fade
DEFAULT_BUDGET_MIB = 2048  # activation memory one run may use
# Peak run memory per source pixel of a tile, for a ×4 model (scaled by scale² for others). Measured with ONNX
# Runtime on CPU: RRDBNet x4plus ~15.6 KB (64 features at 2× and 4×), SRVGGNetCompact x4v3 ~1.1 KB (features
# stay at the source size). The default assumes the heavy kind; a catalog entry states its own.
DEFAULT_TILE_BYTES_X4 = 16384
MAX_BATCH = 8
TILE_MULTIPLE = 8
PROBE_SIZE = 16
ALPHA_FROM_RGB = np.array([0.299, 0.587, 0.114], np.float32)  # Real-ESRGAN: cv2 BGR2GRAY of the alpha's output


@dataclass(frozen=True)
class UpscalePlan:
    grid: TileGrid
    batch: int  # tiles per model run
    model_scale: int
    out_scale: int

    @property
    def tile_count(self) -> int:
        return self.grid.count


class UpscaleAdapter(Adapter):
    name = "upscale"
    family = Family("upscale")

    def __init__(self, entry: ModelEntry, handle: SessionHandle):
        super().__init__(entry, handle)
        if len(self.inputs) != 1 or not self.outputs:
            raise ModelUnavailableError(f"{entry.label} does not look like an upscaler (one image input expected).")
        (self.input_name,) = self.inputs
        self.output_name = self.outputs[0]
        shape = list(self.inputs[self.input_name].shape)
        if len(shape) != 4 or any(isinstance(dim, int) for dim in shape[2:]):
            raise ModelUnavailableError(f"{entry.label} needs a dynamic NCHW input to be tiled; re-export it.")
        self.batchable = not (isinstance(shape[0], int) and shape[0] == 1)
        self.dtype = self.input_dtype(self.input_name)
        options = entry.options
        self.margin = int(options.get("tile_margin", DEFAULT_MARGIN))
        self.blend = int(options.get("tile_blend", DEFAULT_BLEND))
        self.budget = int(options.get("tile_memory_mib", DEFAULT_BUDGET_MIB)) * 1024 * 1024
        self._tile_bytes = int(options["tile_bytes_per_pixel"]) if "tile_bytes_per_pixel" in options else None
        self._scale = int(options["scale"]) if "scale" in options else None

    @property
    def model_scale(self) -> int:
        """The model's factor: from the catalog, else measured once on a small probe (cheap, never last)."""
        if self._scale is None:
            probe = np.zeros((1, 3, PROBE_SIZE, PROBE_SIZE), dtype=self.dtype)
            output = self.run({self.input_name: probe}, last_run=False)[self.output_name]
            scale = output.shape[-1] // PROBE_SIZE if output.ndim == 4 else 0
            if scale < 1 or output.shape[-2:] != (PROBE_SIZE * scale, PROBE_SIZE * scale):
                raise ModelUnavailableError(f"{self.entry.label} did not return an upscaled image.")
            self._scale = scale
        return self._scale

    def plan(self, height: int, width: int, *, scale: int, tile_size: int = 0) -> UpscalePlan:
        """Tiles and batch for a height × width source. `tile_size` is the core each run keeps (the model's
        context comes on top of it); 0 chooses the largest core whose runs fit the memory budget."""
        model_scale = self.model_scale
        if scale not in (model_scale, model_scale // 2) or scale < 1:
            raise InputError(f"{self.entry.label} upscales {model_scale}×; choose scale {model_scale}.")
        pixel_bytes = self._tile_bytes or DEFAULT_TILE_BYTES_X4 * model_scale * model_scale // 16
        if tile_size:
            if tile_size <= self.blend and tile_size < max(height, width):
                raise InputError(f"'tile_size' must be 0 or more than {self.blend} for {self.entry.label}.")
            core = tile_size
        else:
            core = automatic_core(height, width, limit=self.run_limit(pixel_bytes), context=self.context)
        grid = plan_tiles(height, width, core=core, margin=self.margin, blend=self.blend)
        batch = 1
        if self.batchable and self.device is Device.CUDA:
            run_height, run_width = grid.largest_run
            tile_bytes = run_height * run_width * pixel_bytes
            batch = max(1, min(MAX_BATCH, self.budget // max(tile_bytes, 1), len(grid.columns)))
        return UpscalePlan(grid, batch, model_scale, scale)

    @property
    def context(self) -> int:
        """Source pixels a run sees beyond its core on each inner side (tiling.py)."""
        return context_pixels(self.margin, self.blend)

    def run_limit(self, pixel_bytes: int) -> int:
        """The largest run edge whose activations fit the memory budget (a multiple of 8, ≥ 64 + overlap)."""
        smallest = -(-(2 * self.context + 64) // TILE_MULTIPLE) * TILE_MULTIPLE
        return max(math.isqrt(self.budget // pixel_bytes) // TILE_MULTIPLE * TILE_MULTIPLE, smallest)

    def upscale(
        self,
        pixels: np.ndarray,
        plan: UpscalePlan,
        *,
        sink: Sink,
        on_tile: OnTile = lambda _done, _total: None,
        last_frame: bool = True,
    ) -> None:
        """Upscale straight display pixels (H, W, 3|4) in [0, 1]; finished rows go to `sink` in order."""
        height, width, channels = pixels.shape
        alpha = pixels[..., 3] if channels == 4 else None
        alpha_through_model = alpha is not None and bool((alpha < 1.0).any())
        source = pixels if alpha_through_model or alpha is None else pixels[..., :3]

        def finish(top: int, rows: np.ndarray) -> None:
            np.clip(rows, 0.0, 1.0, out=rows)
            if alpha is not None and not alpha_through_model:
                rows = np.concatenate([rows, np.ones((*rows.shape[:2], 1), dtype=np.float32)], axis=2)
            sink(top, rows)

        def clamp_then_halve(top: int, rows: np.ndarray) -> None:
            np.clip(rows, 0.0, 1.0, out=rows)
            halver.push(top, rows)

        target: Sink = finish
        if plan.out_scale != plan.model_scale:
            halver = BandHalver(height * plan.model_scale, width * plan.model_scale, finish)
            target = clamp_then_halve
        done = 0

        def model(tiles: np.ndarray) -> np.ndarray:
            nonlocal done
            done += tiles.shape[0]
            last = last_frame and done == plan.tile_count
            if tiles.shape[1] == 3:
                return self._run_tiles(tiles, last_run=last)
            colour, grey = tiles[:, :3], np.repeat(tiles[:, 3:], 3, axis=1)
            if plan.batch > 1:
                both = self._run_tiles(np.concatenate([colour, grey]), last_run=last)
                colour_out, grey_out = both[: tiles.shape[0]], both[tiles.shape[0] :]
            else:
                colour_out = self._run_tiles(colour, last_run=False)
                grey_out = self._run_tiles(grey, last_run=last)
            np.clip(grey_out, 0.0, 1.0, out=grey_out)  # each channel clamped first, as RealESRGANer does
            alpha_out = np.tensordot(ALPHA_FROM_RGB, grey_out, axes=([0], [1]))[:, None]
            return np.concatenate([colour_out, alpha_out.astype(np.float32, copy=False)], axis=1)

        run_tiled(source, plan.grid, model, scale=plan.model_scale, sink=target, batch=plan.batch, on_tile=on_tile)

    def _run_tiles(self, tiles: np.ndarray, *, last_run: bool) -> np.ndarray:
        count, _, tile_h, tile_w = tiles.shape
        feed = np.ascontiguousarray(tiles, dtype=self.dtype)
        output = self.run({self.input_name: feed}, last_run=last_run)[self.output_name]
        expected = (count, 3, tile_h * self.model_scale, tile_w * self.model_scale)
        if output.shape != expected:
            raise ModelUnavailableError(
                f"{self.entry.label} returned shape {list(output.shape)} for a tile; expected {list(expected)}."
            )
        return output.astype(np.float32, copy=False)


def automatic_core(height: int, width: int, *, limit: int, context: int) -> int:
    """The core for `tile_size` 0: the whole image when it fits one run of at most `limit` pixels, else the
    largest core whose runs (core + context on both sides) stay within `limit`. Cores split each axis evenly,
    so this also uses the fewest runs the budget allows."""
    if max(height, width) <= limit:
        return max(height, width)
    return limit - 2 * context
