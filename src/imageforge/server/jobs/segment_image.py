"""segment-image: SAM 2.1 masks an object from clicks and a box; the image's embedding is kept for the next click.

The image is encoded once (seconds on a CPU) and its embedding kept in the "segment_embeddings" resource, keyed
by the SHA-256 of the file, the model and the device (job_steps/segment_embeddings.py): a second run on the same
file with other clicks only runs the decoder, and so do the clicks that the add-on sends beside the queue
(server/click_route.py). Prompts are checked against the image before any model is prepared
(contract/segment_prompts.py): every point on the image, a positive point or a box.

Results: `mask`, a grey 8-bit PNG at the input size (255 on the object), and `segment`, the JSON the tools and
the clicks read (contract/segment_click.py `SegmentResult`: score, candidates' scores, the embedding's key, the
mask as run lengths).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...contract import InputError, ModelUnavailableError
from ...contract.catalog import load_catalog
from ...contract.jobs import SEGMENT_IMAGE, SegmentImageParams
from ...contract.parameters import Selection
from ...contract.results import ResultName
from ...contract.segment_click import SegmentResult
from ...contract.segment_prompts import prompt_problem, wants_multimask
from ...contract.selection_geometry import MaskRuns
from ..job_context import JobContext, JobResults, resource_of
from ..job_runners import runs
from ..job_steps.model_loading import log_model_time, prepare_adapter
from ..job_steps.progress import PREPARING, READING, JobProgress, JobStages, Stage
from ..job_steps.segment_embeddings import EmbeddingKey, SegmentEmbeddings, content_sha256
from ..media import open_input, write_json, write_png
from ..models.display import display_pixels
from ..models.sam2 import Sam2Adapter

NO_MODEL = (
    "Click Select needs a SAM 2.1 model converted once on this machine: the Models panel's Prepare Click Select "
    "model… button, or 'imageforge models convert SAM2_TINY' (or SAM2_SMALL)."
)


ENCODING = Stage("Encoding the image", 75)  # the image encoder, once per image (then reused from memory)
MASKING = Stage("Masking", 10)
STAGES = JobStages(PREPARING, READING, ENCODING, MASKING)


@runs(SEGMENT_IMAGE)
def run_segment_image(context: JobContext, params: SegmentImageParams) -> JobResults:
    source = open_input(params.input, still_only=True)  # headers only: a bad file fails before any model
    size = (source.width, source.height)
    problem = prompt_problem(params.points, params.box, *size)
    if problem is not None:
        raise InputError(problem)
    if params.model is None and not load_catalog(storage_root=context.storage_root).has_family(Sam2Adapter.family):
        raise ModelUnavailableError(NO_MODEL)
    progress = JobProgress(context, STAGES)
    adapter = prepare_adapter(context, progress, params.model, params.device, Sam2Adapter)
    progress.enter(READING)
    key = EmbeddingKey(content_sha256(params.input), adapter.entry.key, adapter.device.value)
    store = resource_of(context, "segment_embeddings", SegmentEmbeddings)
    kept = store.get(key)
    if kept is not None:
        progress.enter(ENCODING, "Image already encoded")  # the same stages either way: a cancel finds them all
        embedding = kept.embedding
        context.log(f"Embedding of {key.image_sha256[:12]} reused ({adapter.entry.key} on {key.device})")
    else:
        pixels = display_pixels(source.read_still())
        progress.enter(ENCODING, "Encoding the image (once per image)")
        embedding = adapter.encode(pixels, last_run=False)
        store.put(key, embedding, adapter)
    progress.enter(MASKING)
    multimask = wants_multimask(params.multimask, params.points, params.box)
    prediction = adapter.predict(embedding, params.points, params.box, multimask=multimask)
    mask = prediction.mask(size)
    progress.writing()
    directory = Path(context.directory)
    write_png(directory / "mask.png", mask.astype(np.float32), bits=8)
    runs = MaskRuns.encode(mask.astype(np.uint8).tobytes(), *size)
    result = SegmentResult(
        score=prediction.score,
        scores=tuple(float(value) for value in prediction.scores),
        chosen=prediction.chosen,
        multimask=prediction.multimask,
        image_sha256=key.image_sha256,
        model=key.model,
        device=key.device,
        selection=Selection(mask=runs),
    )
    write_json(directory / "segment.json", result.to_json())
    context.log(f"Mask: {runs.area} pixels, score {prediction.score:.4f} (candidates {list(result.scores)})")
    log_model_time(context, progress, adapter)
    return {ResultName.MASK: "mask.png", ResultName.SEGMENT: "segment.json"}
