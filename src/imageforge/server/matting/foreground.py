"""Foreground colour estimation: the object's own colour where its matte is soft, so that a cut-out composited
over any background shows no fringe of the one it was photographed on.

A pixel with 0 < alpha < 1 holds I = alpha F + (1 − alpha) B: the object's colour F mixed with the old
background's B. Written with the matte as alpha and I as colour, the old background stays in the edge (green
hair from a green wall). This module solves for F with the multi-level method of Germer, Uelwer, Conrad and
Harmeling, "Fast Multi-Level Foreground Estimation" (ICPR 2020), the method pymatting's
`estimate_foreground_ml` implements (its defaults are ours but one; docs/parity.md has the agreement):

- per pixel, F and B minimise (alpha F + (1 − alpha) B − I)² plus, towards each of the 4 neighbours n,
  (eps + |alpha − alpha_n|) (|F − F_n|² + |B − B_n|²): a 2×2 linear system per pixel and colour channel;
- solved coarse to fine: level i of n = ceil(log2(max(w, h))) has size w^(i/n) × h^(i/n) (nearest samples of
  the image and matte), starts from the level below (nearest) and the mean colours of alpha > 0.9 and < 0.1,
  and runs 10 iterations up to 32 px, 2 above; ours runs 1 on the levels with a side above 512 px (`LARGE_SIZE`:
  at 2048² the two tiled levels, most of the cost), which moves the estimate 0.0031 from pymatting's inside the
  soft band instead of 0.0030 and takes 0.7 of the CPU time (docs/benchmarks.md).

Ours, not a copy: the iterations are red-black Gauss–Seidel sweeps in NumPy (pymatting's are in-place loops
compiled by numba; plain Jacobi sweeps converge at half the speed and measured 0.007–0.009 from pymatting inside
the soft band, red-black 0.002–0.004). A half-sweep computes only its colour's pixels, as two strided views
(even and odd rows) of a planar state, so NumPy's loops run along rows (docs/benchmarks.md: 1.6× less CPU than
whole-array sweeps that kept half, same result bit for bit), and the levels above `WHOLE_LEVEL_PIXELS` are
computed only in tiles that hold a soft pixel, each from the region of the level below it needs (a level's
sweeps carry a value 2 × `iterations` pixels, so a halo that wide makes every tile's core exactly the
whole-level result). Each quarter's coefficients and each sweep's sums are computed in place into arrays made
once per level (no temporary per operation), and F and B travel between levels as one planar array. So the cost
follows the soft band, not the image, and the memory at the 16384² limit is a few tiles, not levels of the whole image.
Colour is replaced only inside the soft band; opaque and transparent pixels keep theirs, in float, so 16-bit
and float sources keep their precision.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

REGULARIZATION = 1e-5
SMALL_ITERATIONS = 10
BIG_ITERATIONS = 2
SMALL_SIZE = 32
LARGE_ITERATIONS = 1  # levels with a side above LARGE_SIZE: one sweep (docs/benchmarks.md: the cost, the parity)
LARGE_SIZE = 512
GRADIENT_WEIGHT = 1.0
WHOLE_LEVEL_PIXELS = 1 << 18  # levels up to 512² are held whole; larger ones go tile by tile where the matte is soft
TILE = 128  # output tile edge of the full-resolution level
MEAN_BAND_PIXELS = 1 << 20  # pixels read at a time for the mean colours and the soft count


@dataclass(frozen=True)
class ForegroundEstimate:
    """What an estimation did, for the job log: how many pixels were soft, whether colour was replaced."""

    soft_pixels: int
    levels: int
    tiles: int
    seconds: float

    @property
    def skipped(self) -> bool:
        return self.soft_pixels == 0

    def describe(self) -> str:
        if self.skipped:
            return "Foreground colour: the matte has no soft pixel, colour kept as it is"
        return (
            f"Foreground colour estimated on {self.soft_pixels} soft pixel(s): {self.levels} levels, "
            f"{self.tiles} full-resolution tile(s), {self.seconds:.2f} s"
        )


@dataclass(frozen=True)
class _Level:
    width: int
    height: int
    iterations: int


def estimate_foreground(
    colour: np.ndarray,
    alpha: np.ndarray,
    *,
    out: np.ndarray | None = None,
    regularization: float = REGULARIZATION,
    small_iterations: int = SMALL_ITERATIONS,
    big_iterations: int = BIG_ITERATIONS,
    small_size: int = SMALL_SIZE,
    large_iterations: int = LARGE_ITERATIONS,
    large_size: int = LARGE_SIZE,
    gradient_weight: float = GRADIENT_WEIGHT,
    whole_level_pixels: int = WHOLE_LEVEL_PIXELS,
    tile: int = TILE,
) -> ForegroundEstimate:
    """Write the estimated foreground colour into `out[..., :3]` (default: `colour` itself) where
    0 < alpha < 1. `colour` is (H, W, 3|4) straight colour in [0, 1] (alpha channel ignored), `alpha` (H, W).
    An alpha with no soft pixel changes nothing (the estimate is skipped, not failed)."""
    started = time.perf_counter()
    height, width = alpha.shape
    if colour.shape[:2] != (height, width) or colour.ndim != 3 or colour.shape[2] < 3:
        raise ValueError(f"colour {colour.shape} does not match alpha {alpha.shape}")
    target = colour if out is None else out
    soft, foreground_mean, background_mean = _soft_count_and_means(colour, alpha)
    levels = _levels(width, height, (small_iterations, big_iterations, large_iterations), (small_size, large_size))
    if soft == 0:
        return ForegroundEstimate(0, len(levels), 0, time.perf_counter() - started)
    solver = _Solver(colour, alpha, levels, regularization, gradient_weight, whole_level_pixels)
    solver.solve_whole(foreground_mean, background_mean)
    tiles = 0
    last = len(levels) - 1
    if solver.whole_until == last:
        _write_soft(target, alpha, solver.whole[:3], (0, height, 0, width))
    else:
        # Tiles go row by row; a tile row's result is written only once no tile still to come reads those
        # source rows (the tiled levels reach `solver.reach` rows beyond a tile), since `target` may be `colour`.
        pending: list[tuple[tuple[int, int, int, int], np.ndarray]] = []
        for top in range(0, height, tile):
            while pending and pending[0][0][1] <= top - solver.reach:
                _write_soft(target, alpha, pending[0][1], pending[0][0])
                pending.pop(0)
            for box in _tiles_with_soft_pixels(alpha, top, tile):
                pending.append((box, solver.region(last, box)[:3].copy()))  # F only: B's half is freed
                tiles += 1
        for box, estimate in pending:
            _write_soft(target, alpha, estimate, box)
    return ForegroundEstimate(soft, len(levels), tiles, time.perf_counter() - started)


def _levels(width: int, height: int, iterations: tuple[int, int, int], sizes: tuple[int, int]) -> list[_Level]:
    """The pyramid, coarse to fine, with each level's iterations: `iterations[0]` up to `sizes[0]` px a side,
    `iterations[2]` above `sizes[1]`, `iterations[1]` between."""
    count = max(1, math.ceil(math.log2(max(width, height, 2))))
    levels = []
    for index in range(count + 1):
        w, h = round(width ** (index / count)), round(height ** (index / count))
        side = max(w, h)
        kind = 0 if side <= sizes[0] else 2 if side > sizes[1] else 1
        levels.append(_Level(w, h, iterations[kind]))
    return levels


def _soft_count_and_means(colour: np.ndarray, alpha: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """Soft pixels, and the mean colour where alpha > 0.9 and < 0.1 (the coarsest level's start), band-wise."""
    height, width = alpha.shape
    soft = 0
    sums = np.zeros((2, 3), np.float64)
    counts = np.zeros(2, np.float64)
    band = max(1, MEAN_BAND_PIXELS // max(1, width))
    for top in range(0, height, band):
        a = alpha[top : top + band]
        soft += int(np.count_nonzero((a > 0) & (a < 1)))
        # Both sums as one product of the two 0/1 masks with the band's pixels (BLAS, no gathered copy).
        masks = np.stack([a > 0.9, a < 0.1]).reshape(2, -1).astype(np.float32)
        pixels = colour[top : top + band].reshape(-1, colour.shape[2])
        sums += (masks @ np.asarray(pixels, np.float32))[:, :3]
        counts += masks.sum(axis=1, dtype=np.float64)
    means = (sums / (counts[:, None] + 1e-5)).astype(np.float32)  # as Germer et al.'s code: empty sets give ~0
    return soft, means[0], means[1]


def _tiles_with_soft_pixels(alpha: np.ndarray, top: int, tile: int) -> Iterator[tuple[int, int, int, int]]:
    """The tiles of the tile row at `top` that hold a soft pixel, as (top, bottom, left, right)."""
    height, width = alpha.shape
    for left in range(0, width, tile):
        box = alpha[top : top + tile, left : left + tile]
        if np.any((box > 0) & (box < 1)):
            yield top, min(height, top + tile), left, min(width, left + tile)


def _write_soft(target: np.ndarray, alpha: np.ndarray, estimate: np.ndarray, box: tuple[int, int, int, int]) -> None:
    """`estimate`: F on `box`, channels first."""
    top, bottom, left, right = box
    a = alpha[top:bottom, left:right]
    soft = (a > 0) & (a < 1)
    target[top:bottom, left:right, :3][soft] = np.moveaxis(estimate, 0, 2)[soft]


class _Solver:
    """The levels of one estimation: those up to `whole_level_pixels` solved whole, the rest by region."""

    def __init__(
        self,
        colour: np.ndarray,
        alpha: np.ndarray,
        levels: list[_Level],
        regularization: float,
        gradient_weight: float,
        whole_level_pixels: int,
    ):
        self.colour, self.alpha, self.levels = colour, alpha, levels
        self.regularization, self.gradient_weight = np.float32(regularization), np.float32(gradient_weight)
        self.whole_until = 0
        for index, level in enumerate(levels):
            if level.width * level.height <= whole_level_pixels:
                self.whole_until = index
        self.whole = np.empty((6, 0, 0), np.float32)  # F's and B's channels of the last whole level
        height = alpha.shape[0]
        # Source rows a tiled level reads beyond a tile: its halo (and one row of nearest sampling) in source rows.
        self.reach = sum((_halo(level) + 1) * -(-height // level.height) for level in levels[self.whole_until + 1 :])

    def solve_whole(self, foreground_mean: np.ndarray, background_mean: np.ndarray) -> None:
        state = np.concatenate([foreground_mean, background_mean]).astype(np.float32).reshape(6, 1, 1)
        previous = (1, 1)
        for index in range(self.whole_until + 1):
            level = self.levels[index]
            box = (0, level.height, 0, level.width)
            rows = np.arange(level.height) * previous[1] // level.height
            columns = np.arange(level.width) * previous[0] // level.width
            state = self._iterate(index, box, state, rows, columns)
            previous = (level.width, level.height)
        self.whole = state

    def region(self, index: int, box: tuple[int, int, int, int]) -> np.ndarray:
        """F's and B's channels (6, h, w) of level `index` on `box` (top, bottom, left, right), exactly as the
        whole level would be."""
        top, bottom, left, right = box
        if index <= self.whole_until:
            return self.whole[:, top:bottom, left:right]
        level, below = self.levels[index], self.levels[index - 1]
        halo = _halo(level)
        grown = (
            max(0, top - halo),
            min(level.height, bottom + halo),
            max(0, left - halo),
            min(level.width, right + halo),
        )
        rows = np.arange(grown[0], grown[1]) * below.height // level.height
        columns = np.arange(grown[2], grown[3]) * below.width // level.width
        start = self.region(index - 1, (int(rows[0]), int(rows[-1]) + 1, int(columns[0]), int(columns[-1]) + 1))
        state = self._iterate(index, grown, start, rows - rows[0], columns - columns[0])
        return state[:, top - grown[0] : bottom - grown[0], left - grown[2] : right - grown[2]]

    def _sampled(self, index: int, box: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Image and matte of level `index` on `box`: nearest samples of the source (the source itself on top)."""
        level = self.levels[index]
        height, width = self.alpha.shape
        top, bottom, left, right = box
        if (level.width, level.height) == (width, height):
            return (
                np.asarray(self.colour[top:bottom, left:right, :3], np.float32),
                np.asarray(self.alpha[top:bottom, left:right], np.float32),
            )
        rows = np.arange(top, bottom) * height // level.height
        columns = np.arange(left, right) * width // level.width
        grid = np.ix_(rows, columns)
        return (
            np.asarray(self.colour[..., :3][grid], np.float32),
            np.asarray(self.alpha[grid], np.float32),
        )

    def _iterate(
        self, index: int, box: tuple[int, int, int, int], start: np.ndarray, rows: np.ndarray, columns: np.ndarray
    ) -> np.ndarray:
        """The level's red-black Gauss–Seidel sweeps on `box` (pixels of one checkerboard colour, then of the
        other, each from its neighbours' latest values), from the level below's state `start` sampled at
        `rows` × `columns` (nearest); edges clamped to the box. Returns the box's F and B, channels first (a view
        of the padded state: no copy).

        A half-sweep computes only the pixels of its colour: those are, in every other row, every other column,
        so each colour is two strided views of the edge-padded state (even and odd rows), and so are their four
        neighbours. The state is planar (F's and B's six channels first), so every NumPy loop runs along a row."""
        image, a = self._sampled(index, box)
        height, width = a.shape
        # F and B in one edge-padded planar buffer: one pass per neighbour, no padding per sweep.
        state = np.empty((6, height + 2, width + 2), np.float32)
        state[:, 1:-1, 1:-1] = start.take(rows, axis=1).take(columns, axis=2)
        _clamp_edges(state)
        phase = (box[0] + box[2]) % 2  # the first colour holds the pixels whose global row + column is even
        padded = np.pad(a, 1, mode="edge")
        planar = np.moveaxis(image, 2, 0)
        sweeps = [
            [self._part(planar, a, padded, state, row, (phase + row + colour) % 2) for row in (0, 1)]
            for colour in (0, 1)
        ]
        for _ in range(self.levels[index].iterations):
            for parts in sweeps:
                for part in parts:
                    part.update()
                _clamp_edges(state)
        return state[:, 1:-1, 1:-1]

    def _part(
        self, image: np.ndarray, a: np.ndarray, padded: np.ndarray, state: np.ndarray, row: int, column: int
    ) -> _Part:
        """The pixels of rows `row`, `row` + 2, … and columns `column`, `column` + 2, … of a level's box
        (`image`: its colour, channels first; `padded`: its matte, edge-padded by one pixel)."""
        height, width = a.shape
        here = np.s_[row:height:2, column:width:2]
        alpha = a[here]
        views = [np.s_[1 + row + dy : 1 + height + dy : 2, 1 + column + dx : 1 + width + dx : 2] for dy, dx in _OFFSETS]
        weights = []
        for view in views:  # eps + |Δalpha| towards each neighbour, computed in place
            weight = np.subtract(alpha, padded[view])
            np.abs(weight, out=weight)
            weight *= self.gradient_weight
            weight += self.regularization
            weights.append(weight)
        total = weights[0] + weights[1]
        total += weights[2]
        total += weights[3]
        a1 = 1.0 - alpha
        a00, a11, a01 = alpha * alpha, a1 * a1, alpha * a1
        a00 += total
        a11 += total
        inverse = a00 * a11
        inverse -= a01 * a01
        np.divide(1.0, inverse, out=inverse)  # = 1 / (total (a² + (1 − a)² + total)) > 0
        colour = image[(slice(None), *here)]
        base = np.empty((6, *alpha.shape), np.float32)  # F's, B's
        np.multiply(alpha, colour, out=base[:3])
        np.multiply(a1, colour, out=base[3:])
        a01 *= inverse
        np.negative(a01, out=a01)
        a00 *= inverse
        a11 *= inverse
        return _Part(
            state,
            np.s_[:, 1 + row : 1 + height : 2, 1 + column : 1 + width : 2],
            [(slice(None), *view) for view in views],
            weights,
            base,
            (a11, a01, a00),  # the inverse of [[a00, a01], [a01, a11]], row by row
        )


class _Part:
    """One strided quarter of a level's box (one colour, one row parity): its coefficients and scratch."""

    def __init__(
        self,
        state: np.ndarray,
        here: tuple[slice, ...],
        views: list[tuple[slice, ...]],
        weights: list[np.ndarray],
        base: np.ndarray,
        solve: tuple[np.ndarray, np.ndarray, np.ndarray],
    ):
        self.state, self.here, self.views, self.weights, self.base = state, here, views, weights, base
        self.b00, self.b01, self.b11 = solve
        self.total = np.empty_like(base)
        self.term = np.empty_like(base)
        self.scratch = np.empty_like(base[:3])

    def update(self) -> None:
        """Each pixel's F and B from its neighbours' current values: the per-pixel 2×2 solve, clipped to [0, 1]."""
        total, term, state, scratch = self.total, self.term, self.state, self.scratch
        np.multiply(self.weights[0], state[self.views[0]], out=term)
        np.add(self.base, term, out=total)
        for weight, view in zip(self.weights[1:], self.views[1:], strict=True):
            np.multiply(weight, state[view], out=term)
            total += term
        sum_f, sum_b = total[:3], total[3:]
        solved_f, solved_b = term[:3], term[3:]
        np.multiply(self.b00, sum_f, out=solved_f)
        np.multiply(self.b01, sum_b, out=scratch)
        solved_f += scratch
        np.multiply(self.b01, sum_f, out=solved_b)
        np.multiply(self.b11, sum_b, out=scratch)
        solved_b += scratch
        np.clip(term, 0.0, 1.0, out=state[self.here])


def _clamp_edges(state: np.ndarray) -> None:
    """Refresh a planar edge-padded buffer's border from the pixels inside it (pad mode 'edge', in place)."""
    state[:, 0, 1:-1] = state[:, 1, 1:-1]
    state[:, -1, 1:-1] = state[:, -2, 1:-1]
    state[:, :, 0] = state[:, :, 1]
    state[:, :, -1] = state[:, :, -2]


def _halo(level: _Level) -> int:
    """How far a level's sweeps carry a value: each iteration's two half-sweeps move it one pixel each."""
    return 2 * level.iterations


# The left, right, upper and lower neighbour of a pixel, as (row, column) offsets.
_OFFSETS = ((0, -1), (0, 1), (-1, 0), (1, 0))
