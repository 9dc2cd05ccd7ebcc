"""Click Select in real Blender: clicks become prompts, the mask comes from the server thread, Enter stores it on
the image and runs Cutout with it; the overlay drawn on the GPU (5.x, as the lasso overlay)."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import bpy
import gpu
import numpy as np
import pytest
from mathutils import Matrix
from scenes import image_object, load_photo, photo_pixels

from imageforge.contract.parameters import Selection
from imageforge.contract.segment_click import ClickAnswer, ClickState, SegmentResult
from imageforge.contract.selection_geometry import MaskRuns

WIDTH, HEIGHT = 40, 30


def disc_mask(points, box=None) -> np.ndarray:
    """The stand-in server's mask: a disc of radius 6 around each positive point, minus one around each negative."""
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH] + 0.5
    mask = np.zeros((HEIGHT, WIDTH), bool)
    for x, y, label in points:
        near = np.hypot(xs - x, ys - y) < 6
        mask = (mask | near) if label == 1 else (mask & ~near)
    if box is not None:
        x0, y0, x1, y1 = box
        mask |= (xs >= x0) & (xs < x1) & (ys >= y0) & (ys < y1)
    return mask


def runs(mask: np.ndarray) -> MaskRuns:
    return MaskRuns.encode(mask.astype(np.uint8).tobytes(), WIDTH, HEIGHT)


@pytest.fixture
def clicks(job_server, tmp_path):
    """A photo on an image plane; the stand-in server encodes with segment-image and answers clicks with discs."""
    image = load_photo(tmp_path / "photo.png", photo_pixels(WIDTH, HEIGHT))
    image.name = "Photo"
    image_object(image)
    asked = []

    def segment(parameters, directory):
        mask = disc_mask(parameters["points"], parameters.get("box"))
        result = SegmentResult(0.9, (0.9,), 0, False, "ab" * 32, "KIT_SAM2", "cpu", Selection(mask=runs(mask)))
        (directory / "segment.json").write_text(json.dumps(result.to_json()))
        (directory / "mask.png").write_bytes(b"")
        return {"mask": "mask.png", "segment": "segment.json"}

    def click(request):
        asked.append(request)
        if getattr(job_server, "busy_once", False):
            job_server.busy_once = False
            return ClickAnswer(ClickState.BUSY, why="Waiting for Upscale Image to finish")
        mask = disc_mask(request.points.to_list(), None if request.box is None else request.box.to_list())
        return ClickAnswer(ClickState.OK, score=0.8, selection=Selection(mask=runs(mask)) if mask.any() else None)

    job_server.producers["segment-image"] = segment
    job_server.click = click
    job_server.ensure = lambda timeout=0: None
    return SimpleNamespace(image=image, asked=asked)


def operator():
    from imageforge.addon.operators.click_select import IMAGEFORGE_OT_click_select

    return IMAGEFORGE_OT_click_select.running


def settle(running, *, until=lambda state: not state.waiting) -> None:
    """Timer ticks until the session's thread has answered (modal never fires headless)."""
    for _ in range(400):
        assert running.modal(bpy.context, SimpleNamespace(type="TIMER")) == {"RUNNING_MODAL"}
        if until(running._session.state()):
            return
        time.sleep(0.01)
    raise AssertionError(f"no answer: {running._session.state()}")


def submitted_by_the_tool() -> None:
    """The job operator Enter started submits from its own thread: wait for it."""
    from imageforge.addon import blender_runtime

    job = blender_runtime.get_runtime().active_job
    assert job is not None, "Enter started no tool"
    if job.start_thread is not None:
        job.start_thread.join(timeout=5.0)


def accept_when_answered(running) -> None:
    """Timer ticks until a script-started Click Select has accepted its first mask, then the tool's submission."""
    for _ in range(400):
        if running.modal(bpy.context, SimpleNamespace(type="TIMER")) != {"RUNNING_MODAL"}:
            break
        time.sleep(0.01)
    submitted_by_the_tool()


def event(kind, value="PRESS", x=0, y=0, **keys):
    return SimpleNamespace(
        type=kind, value=value, mouse_region_x=x, mouse_region_y=y, **{"shift": False, "ctrl": False, **keys}
    )


def test_clicks_shift_clicks_a_box_and_undo_make_the_prompts_and_enter_runs_cutout(clicks, job_server, reports):
    started = bpy.ops.imageforge.click_select(
        "EXEC_DEFAULT", image_name="Photo", points="[[10, 10, 1]]", action="CUTOUT"
    )
    assert started == {"RUNNING_MODAL"}
    running = operator()
    running._interactive, running._pick = True, lambda x, y: (float(x), float(y))  # region pixels = image pixels
    settle(running, until=lambda state: state.mask is not None)
    assert job_server.submitted[0][0] == "segment-image"  # the first prompt encodes the image
    assert job_server.submitted[0][1]["points"] == [[10.0, 10.0, 1]]

    running.modal(bpy.context, event("LEFTMOUSE", x=30, y=20))
    running.modal(bpy.context, event("LEFTMOUSE", "RELEASE", x=30, y=20))  # a click: positive
    running.modal(bpy.context, event("RIGHTMOUSE", x=12, y=12))  # negative
    settle(running)
    assert clicks.asked[-1].points.to_list() == [[10.0, 10.0, 1], [30.0, 20.0, 1], [12.0, 12.0, 0]]
    running.modal(bpy.context, event("LEFTMOUSE", x=2, y=2))
    running.modal(bpy.context, event("MOUSEMOVE", x=8, y=9))
    running.modal(bpy.context, event("LEFTMOUSE", "RELEASE", x=8, y=9))  # a drag: a box
    settle(running)
    assert clicks.asked[-1].box.to_list() == [2.0, 2.0, 8.0, 9.0]
    running.modal(bpy.context, event("Z", ctrl=True))  # the box taken back
    settle(running)
    assert clicks.asked[-1].box is None and len(clicks.asked[-1].points.points) == 3
    expected = disc_mask([[10, 10, 1], [30, 20, 1], [12, 12, 0]])
    assert np.array_equal(np.frombuffer(running._session.state().mask.to_bytes(), np.uint8).reshape(30, 40), expected)
    assert running.modal(bpy.context, event("WHEELUPMOUSE")) == {"PASS_THROUGH"}  # zooming still works

    job_server.producers["generate-cutout-artifacts"] = lambda parameters, directory: None
    assert running.modal(bpy.context, event("RET")) == {"FINISHED"}
    stored = json.loads(clicks.image["imageforge_selection"])
    assert stored == {"mask": {"width": WIDTH, "height": HEIGHT, "runs": list(runs(expected).runs)}}
    submitted_by_the_tool()
    assert reports == []
    job_type, parameters = job_server.submitted[-1]
    assert job_type == "generate-cutout-artifacts" and parameters["selection"] == stored  # Cutout got the mask
    assert operator() is None


def test_a_busy_server_is_waited_for_and_said_in_the_status(clicks, job_server):
    bpy.ops.imageforge.click_select("EXEC_DEFAULT", image_name="Photo", points="[[10, 10, 1]]")
    running = operator()
    running._interactive, running._pick = True, lambda x, y: (float(x), float(y))
    settle(running, until=lambda state: state.mask is not None)
    job_server.busy_once = True
    running.modal(bpy.context, event("RIGHTMOUSE", x=11, y=11))
    settle(running, until=lambda state: "Upscale Image" in state.message)
    settle(running)  # asked again after the busy answer
    assert [request.points.to_list()[-1] for request in clicks.asked] == [[11.0, 11.0, 0], [11.0, 11.0, 0]]
    assert running.modal(bpy.context, event("ESC")) == {"CANCELLED"}
    assert "imageforge_selection" not in clicks.image  # Esc stores nothing


def test_a_point_off_the_image_is_refused_before_anything_is_sent(clicks, job_server, reports):
    assert bpy.ops.imageforge.click_select("EXEC_DEFAULT", image_name="Photo", points="[[50, 10, 1]]") == {"CANCELLED"}
    assert not job_server.submitted


def test_the_selection_is_stored_with_the_image_and_parallax_shot_takes_it(clicks, job_server):
    bpy.ops.imageforge.click_select("EXEC_DEFAULT", image_name="Photo", points="[[20, 15, 1]]", action="PARALLAX")
    accept_when_answered(operator())
    stored = json.loads(clicks.image["imageforge_selection"])
    assert stored["mask"]["width"] == WIDTH
    assert any(parameters.get("selection") == stored for _job, parameters in job_server.submitted[1:])


def test_the_mask_overlay_is_tinted_where_the_mask_is():
    from imageforge.addon.operators.click_select import MASK_COLOUR, mask_overlay_pixels

    mask = np.zeros((HEIGHT, WIDTH), bool)
    mask[0:5, 0:10] = True  # the top-left corner of the image
    pixels = mask_overlay_pixels(runs(mask))
    assert pixels.shape == (HEIGHT, WIDTH, 4)
    assert np.allclose(pixels[-5:, :10], MASK_COLOUR) and not pixels[:-5].any()  # GPU rows run bottom-up
    big = mask_overlay_pixels(MaskRuns(3000, 2000, (0, 3000 * 2000)))
    assert big.shape == (667, 1000, 4)  # reduced by a stride of 3


@pytest.fixture(scope="module")
def offscreen():
    if bpy.app.version < (5, 0, 0):
        pytest.skip(f"Blender {bpy.app.version_string} cannot draw in background mode (gpu.init arrived in 5.0)")
    gpu.init()
    buffer = gpu.types.GPUOffScreen(64, 64)
    yield buffer
    buffer.free()


def test_the_mask_is_drawn_over_the_image_on_the_gpu(offscreen):
    from imageforge.addon.operators.click_select import MASK_COLOUR, draw_mask, mask_overlay_pixels, mask_texture

    mask = np.zeros((HEIGHT, WIDTH), bool)
    mask[:, : WIDTH // 2] = True  # the left half
    texture = mask_texture(mask_overlay_pixels(runs(mask)))
    with offscreen.bind():
        framebuffer = gpu.state.active_framebuffer_get()
        framebuffer.clear(color=(0.0, 0.0, 0.0, 0.0))
        with gpu.matrix.push_pop(), gpu.matrix.push_pop_projection():
            gpu.matrix.load_identity()
            projection = Matrix.Identity(4)
            projection[0][0] = projection[1][1] = 2 / 64
            projection[0][3] = projection[1][3] = -1.0
            gpu.matrix.load_projection_matrix(projection)
            draw_mask(texture, [(8.0, 8.0), (48.0, 8.0), (48.0, 38.0), (8.0, 38.0)])  # the image's quad
        drawn = np.array(framebuffer.read_color(0, 0, 64, 64, 4, 0, "FLOAT").to_list(), np.float32).reshape(64, 64, 4)
    tinted = drawn[..., 3] > 0.1
    assert tinted[10:36, 9:27].all() and not tinted[10:36, 29:47].any()  # the left half of the quad only
    assert not tinted[:7].any() and not tinted[40:].any() and not tinted[:, :7].any()
    np.testing.assert_allclose(drawn[20, 15, 3], MASK_COLOUR[3], atol=0.05)


@pytest.mark.parametrize(
    ("action", "job"),
    [("REMOVE", "refine-image-selection"), ("FILL", "inpaint-image"), ("REFINE", "refine-image-selection")],
)
def test_enter_runs_every_selection_tool_with_the_mask(clicks, job_server, action, job):
    """Remove Background in Selection, Fill Selection and Refine Selection take Click Select's mask as Cutout does."""
    bpy.ops.imageforge.click_select("EXEC_DEFAULT", image_name="Photo", points="[[20, 15, 1]]", action=action)
    accept_when_answered(operator())
    stored = json.loads(clicks.image["imageforge_selection"])
    assert stored == {"mask": {"width": WIDTH, "height": HEIGHT, "runs": list(runs(disc_mask([[20, 15, 1]])).runs)}}
    job_type, parameters = job_server.submitted[-1]
    assert job_type == job and parameters["selection"] == stored
