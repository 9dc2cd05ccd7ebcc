"""segment-image's result document, and a click beside the job queue (openspec/0026).

`SegmentResult` is `segment.json`: the mask's score, every candidate's score, which was kept, the image's
SHA-256, the model and the device that really ran, and the mask as a selection for the tools (run lengths).

A click: the add-on (or any client) first runs segment-image once on the image (that encodes it; the server keeps
the embedding), then POSTs each further prompt to `CLICK_PATH` as a `ClickRequest` naming that embedding (the
SHA-256, model and device segment.json gave). The server answers a `ClickAnswer` at once, never queued:
`ok` with the mask; `busy` while a job runs (`why` names it; ask again shortly); `stale` when it keeps no
embedding for that key (the image changed, or another image, model or device came since: run segment-image
again); `invalid` for prompts that cannot segment the image (`why` is the sentence).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .errors import InputError
from .json_fields import JsonFields
from .parameters import Selection
from .segment_prompts import Clicks, MultimaskMode, PromptBox

CLICK_PATH = "/imageforge/segment/click"
SEGMENT_RESULT_VERSION = 1


@dataclass(frozen=True)
class SegmentResult:
    score: float
    scores: tuple[float, ...]
    chosen: int
    multimask: bool
    image_sha256: str
    model: str
    device: str
    selection: Selection  # a mask selection of the image's size

    def to_json(self) -> dict[str, Any]:
        return {
            "version": SEGMENT_RESULT_VERSION,
            "score": self.score,
            "scores": list(self.scores),
            "chosen": self.chosen,
            "multimask": self.multimask,
            "image_sha256": self.image_sha256,
            "model": self.model,
            "device": self.device,
            "selection": self.selection.to_dict(),
        }

    @classmethod
    def from_json(cls, raw: object) -> SegmentResult:
        fields = JsonFields(raw, "The segment result")
        fields.version(SEGMENT_RESULT_VERSION)
        scores = tuple(float(value) for value in fields.array("scores", non_empty=True))
        chosen = fields.integer("chosen")
        if chosen >= len(scores):
            raise fields.problem(f"chosen must name one of the {len(scores)} scores (found {chosen})")
        selection = Selection.parse("selection", fields.raw.get("selection"))
        if selection.mask is None:
            raise fields.problem("selection must be a mask")
        return cls(
            score=fields.number("score", default=None),
            scores=scores,
            chosen=chosen,
            multimask=fields.flag("multimask"),
            image_sha256=fields.text("image_sha256"),
            model=fields.text("model"),
            device=fields.text("device"),
            selection=selection,
        )


@dataclass(frozen=True)
class ClickRequest:
    image_sha256: str
    model: str
    device: str
    points: Clicks
    box: PromptBox | None = None
    multimask: MultimaskMode = MultimaskMode.AUTO

    def to_json(self) -> dict[str, Any]:
        return {
            "image_sha256": self.image_sha256,
            "model": self.model,
            "device": self.device,
            "points": self.points.to_list(),
            "box": None if self.box is None else self.box.to_list(),
            "multimask": self.multimask.value,
        }

    @classmethod
    def from_json(cls, raw: object) -> ClickRequest:
        fields = JsonFields(raw, "The click")
        box = fields.raw.get("box")
        mode = fields.raw.get("multimask", MultimaskMode.AUTO.value)
        if mode not in {member.value for member in MultimaskMode}:
            raise InputError(f"The click: multimask must be auto, on or off (found {mode!r}).")
        return cls(
            image_sha256=fields.text("image_sha256"),
            model=fields.text("model"),
            device=fields.text("device"),
            points=Clicks.parse("points", fields.raw.get("points", [])),
            box=None if box is None else PromptBox.parse("box", box),
            multimask=MultimaskMode(mode),
        )


class ClickState(StrEnum):
    OK = "ok"
    BUSY = "busy"
    STALE = "stale"
    INVALID = "invalid"


@dataclass(frozen=True)
class ClickAnswer:
    state: ClickState
    why: str = ""
    score: float = 0.0
    scores: tuple[float, ...] = ()
    chosen: int = 0
    selection: Selection | None = None  # with OK: the mask (run lengths at the image's size)
    decoder_seconds: float = 0.0  # the decoder and the upsampling, measured in the server

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "why": self.why,
            "score": self.score,
            "scores": list(self.scores),
            "chosen": self.chosen,
            "selection": None if self.selection is None else self.selection.to_dict(),
            "decoder_seconds": self.decoder_seconds,
        }

    @classmethod
    def from_json(cls, raw: object) -> ClickAnswer:
        fields = JsonFields(raw, "The click's answer")
        state = fields.raw.get("state")
        if state not in {member.value for member in ClickState}:
            raise InputError(f"The click's answer has an unknown state {state!r}.")
        selection = fields.raw.get("selection")
        return cls(
            state=ClickState(state),
            why=str(fields.raw.get("why", "")),
            score=float(fields.raw.get("score", 0.0)),
            scores=tuple(float(value) for value in fields.raw.get("scores", [])),
            chosen=int(fields.raw.get("chosen", 0)),
            selection=None if selection is None else Selection.parse("selection", selection),
            decoder_seconds=float(fields.raw.get("decoder_seconds", 0.0)),
        )
