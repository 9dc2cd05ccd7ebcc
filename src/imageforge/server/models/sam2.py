"""SAM 2.1 (Segment Anything 2.1, Hiera Tiny or Small): masks from clicks and boxes, as `SAM2ImagePredictor`.

Two graphs (converter/sam2_export.py writes them; catalog options `encoder` and `decoder` name the files):
- the image encoder, once per image: RGB in [0, 1] resized to 1024 × 1024 without keeping the aspect (torchvision's
  antialiased bilinear, sam2_resize.py), ImageNet mean/std → three feature maps, the `Embedding`;
- the prompt encoder + mask decoder, once per click: points scaled by 1024/width and 1024/height (a box as two
  corner points labelled 2 and 3, first) → the four mask tokens' 256² logits and predicted IoU scores.

Then as the predictor: with `multimask` the three candidates (tokens 1–3) and their scores; without, token 0 unless
its stability score (IoU of logits > δ and > −δ) is below the threshold, then the best-scored candidate. The
chosen logits are upsampled to the image (bilinear, half-pixel centres) and thresholded at 0. The optional hole and
sprinkle filling of the predictor is off by default there and not done here. An alpha channel is ignored (the
model sees RGB, as the predictor given a PIL image converted to RGB does).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...contract import ModelUnavailableError
from ...contract.catalog import Family
from ...contract.segment_prompts import Clicks, PromptBox
from .base import Adapter
from .sam2_resize import antialiased_bilinear, positive_mask

INPUT_SIZE = 1024
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
FEATURES = ("high_res_feats_0", "high_res_feats_1", "image_embed")
DECODER_INPUTS = {*FEATURES, "point_coords", "point_labels"}
DECODER_OUTPUTS = ("masks", "iou_predictions")
BOX_LABELS = (2.0, 3.0)  # the corners' labels the predictor gives a box
STABILITY_DELTA, STABILITY_THRESHOLD = 0.05, 0.98  # build_sam2's defaults; a catalog entry may name its own


@dataclass(frozen=True)
class Embedding:
    """One image's encoder output, and the image size it was made from."""

    features: dict[str, np.ndarray]
    size: tuple[int, int]  # width, height

    @property
    def nbytes(self) -> int:
        return sum(array.nbytes for array in self.features.values())


@dataclass(frozen=True)
class Prediction:
    """The decoder's answer: the candidates' low-resolution logits and scores, and which one is the mask."""

    logits: np.ndarray  # (candidates, 256, 256) float32
    scores: np.ndarray  # (candidates,) float32
    chosen: int
    multimask: bool

    @property
    def score(self) -> float:
        return float(self.scores[self.chosen])

    def mask(self, size: tuple[int, int], candidate: int | None = None) -> np.ndarray:
        """(height, width) booleans: the candidate's logits upsampled to `size` and thresholded at 0."""
        index = self.chosen if candidate is None else candidate
        return positive_mask(self.logits[index], size)


class Sam2Adapter(Adapter):
    name = "sam2"
    family = Family("segment")
    graph_roles = ("encoder", "decoder")

    def bind_graphs(self) -> None:
        encoder, decoder = self.graphs["encoder"].session, self.graphs["decoder"].session
        encoder_inputs = encoder.get_inputs()
        outputs = {item.name for item in encoder.get_outputs()}
        if len(encoder_inputs) != 1 or not set(FEATURES) <= outputs:
            raise ModelUnavailableError(f"{self.entry.label} does not look like a SAM 2 image encoder export.")
        decoder_inputs = {item.name for item in decoder.get_inputs()}
        if decoder_inputs != DECODER_INPUTS or not set(DECODER_OUTPUTS) <= {o.name for o in decoder.get_outputs()}:
            raise ModelUnavailableError(
                f"{self.entry.label} does not look like a SAM 2 mask decoder export (imageforge models convert)."
            )
        self.image_input = encoder_inputs[0].name
        self.stability_delta = float(self.entry.options.get("stability_delta", STABILITY_DELTA))
        self.stability_threshold = float(self.entry.options.get("stability_threshold", STABILITY_THRESHOLD))

    @property
    def decoder_device(self) -> str:
        return self.graphs["decoder"].device.value

    def encode(self, pixels: np.ndarray, *, last_run: bool = True) -> Embedding:
        """Display `pixels` (H, W, 3|4) in [0, 1] → the image's embedding."""
        height, width = pixels.shape[:2]
        outputs = self.run({self.image_input: model_input(pixels)}, last_run=last_run, graph="encoder")
        return Embedding({name: np.asarray(outputs[name], np.float32) for name in FEATURES}, (width, height))

    def predict(
        self, embedding: Embedding, points: Clicks, box: PromptBox | None, *, multimask: bool, last_run: bool = True
    ) -> Prediction:
        coords, labels = prompt_tensors(points, box, embedding.size)
        feeds = {**embedding.features, "point_coords": coords, "point_labels": labels}
        outputs = self.run(feeds, last_run=last_run, graph="decoder")
        logits = np.asarray(outputs["masks"], np.float32)[0]
        scores = np.asarray(outputs["iou_predictions"], np.float32)[0]
        if logits.shape[0] != 4 or scores.shape != (4,):
            raise ModelUnavailableError(f"{self.entry.label} returned {logits.shape[0]} masks; expected 4.")
        return choose(logits, scores, multimask, self.stability_delta, self.stability_threshold)


def model_input(pixels: np.ndarray) -> np.ndarray:
    """[1, 3, 1024, 1024] float32: RGB resized as torchvision's Resize, then ImageNet-normalised."""
    rgb = np.ascontiguousarray(pixels[..., :3], dtype=np.float32)
    resized = antialiased_bilinear(rgb, (INPUT_SIZE, INPUT_SIZE))
    normalised = (resized - MEAN) / STD
    return np.ascontiguousarray(normalised.transpose(2, 0, 1)[None], dtype=np.float32)


def prompt_tensors(points: Clicks, box: PromptBox | None, size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """point_coords [1, N, 2] in the model input's pixels and point_labels [1, N], a box's corners first."""
    width, height = size
    coords: list[tuple[float, float]] = []
    labels: list[float] = []
    if box is not None:
        coords += [(box.x0, box.y0), (box.x1, box.y1)]
        labels += BOX_LABELS
    for click in points.points:
        coords.append((click.x, click.y))
        labels.append(1.0 if click.positive else 0.0)
    scaled = np.asarray(coords, np.float32).reshape(-1, 2) / np.array([width, height], np.float32)
    return (scaled * np.float32(INPUT_SIZE))[None], np.asarray(labels, np.float32)[None]


def choose(logits: np.ndarray, scores: np.ndarray, multimask: bool, delta: float, threshold: float) -> Prediction:
    """The predictor's selection: candidates 1–3 with multimask, else token 0 or, when unstable, the best one."""
    if multimask:
        candidates, candidate_scores = logits[1:], scores[1:]
        return Prediction(candidates, candidate_scores, int(np.argmax(candidate_scores)), True)
    if stability(logits[0], delta) >= threshold:
        return Prediction(logits[:1], scores[:1], 0, False)
    best = 1 + int(np.argmax(scores[1:]))
    return Prediction(logits[best : best + 1], scores[best : best + 1], 0, False)


def stability(logits: np.ndarray, delta: float) -> float:
    """IoU of the mask thresholded at +δ and at −δ (1 for an empty one), as the mask decoder computes it."""
    union = int(np.count_nonzero(logits > -delta))
    return float(np.float32(np.count_nonzero(logits > delta)) / np.float32(union)) if union else 1.0
