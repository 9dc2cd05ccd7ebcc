"""A device that fails while a job runs is never silent: the job's provenance.json names the device that really
ran and carries the warning, and the "models" snapshot keeps it for the Server panel until the server restarts.

Real handler, real BlendJob JobContext, real ModelManager and adapter loading; only the accelerator is the fake
ONNX Runtime (DirectML cannot exist on Linux), failing on its first run as a removed GPU does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import numpy as np
from blendjob.server import JobContext

from imageforge.contract import JOB_SPECS, Device, JobId
from imageforge.contract.catalog import Family
from imageforge.contract.provenance import Provenance
from imageforge.contract.results import ResultName
from imageforge.server.handler import make_handler
from imageforge.server.inference import ModelManager
from imageforge.server.models.base import Adapter, load_adapter

from .conftest import make_entry
from .fake_onnxruntime import CPU, DML, RuntimeException

WARNING = (
    "DirectML failed while running Kit Echo (887A0005 device removed); running it on CPU until the server restarts."
)


class EchoAdapter(Adapter):
    """The smallest adapter: one input, the fake session's `output = 2 * input`."""

    name: ClassVar[str] = "kit-echo"
    family = Family("upscale")


def test_a_run_time_fallback_reaches_the_result_and_the_servers_snapshot(storage_root, fake_runtime, tmp_path):
    runtime = fake_runtime("Windows", DML)
    runtime.module.fail_run[DML] = [RuntimeException("887A0005 device removed")]
    models = ModelManager(storage_root, detect=lambda: runtime, threads=1)
    entry = make_entry("KIT_ECHO", Family("upscale"))
    entry = replace(entry, adapter="kit-echo")
    path = storage_root / "models" / entry.directory / entry.files[0].path
    path.parent.mkdir(parents=True)
    path.write_bytes(b"a fake ONNX Runtime reads nothing")

    def run(context, _params):
        adapter = load_adapter(context, entry, Device.DIRECTML)
        context.progress(0.5, "Running model")
        output = adapter.run({"input": np.ones((1, 3, 2, 2), np.float32)}, last_run=True)["output"]
        np.testing.assert_array_equal(output, 2.0)  # the same inputs ran again, on CPU
        context.progress(0.96, "Writing result")  # the job's next step replaces the warning's message
        (context.directory / "upscale.png").write_bytes(b"result")
        return {ResultName.UPSCALE: "upscale.png"}

    directory = tmp_path / "job"
    directory.mkdir()
    context = JobContext("job", "upscale-image", {}, {"models": models}, storage_root, directory)
    result = make_handler(JOB_SPECS[JobId.UPSCALE_IMAGE], run)(context, {"input": str(tmp_path / "in.png")})

    assert result == {ResultName.UPSCALE: "upscale.png", ResultName.PROVENANCE: "provenance.json"}
    assert context._snapshot()["message"] == "Writing result"  # what a poll would see after the fallback
    provenance = Provenance.read(directory / "provenance.json")
    assert provenance.devices == {"KIT_ECHO": "cpu"}
    assert (provenance.models[0].requested_device, provenance.models[0].provider) == ("directml", CPU)
    assert provenance.warnings == (WARNING,)
    assert f"[WARNING] {WARNING}" in (directory / "job.log").read_text(encoding="utf-8")
    assert models.snapshot()["device_warnings"] == [WARNING]

    # The next job on the pinned model warns again (its own provenance), and the snapshot keeps one line.
    again = tmp_path / "again"
    again.mkdir()
    context = JobContext("again", "upscale-image", {}, {"models": models}, storage_root, again)
    make_handler(JOB_SPECS[JobId.UPSCALE_IMAGE], run)(context, {"input": str(tmp_path / "in.png")})
    assert Provenance.read(again / "provenance.json").warnings == (WARNING,)
    assert models.snapshot()["device_warnings"] == [WARNING]
    models.close()
    assert ModelManager(storage_root, detect=lambda: runtime).snapshot()["device_warnings"] == []  # a restart
