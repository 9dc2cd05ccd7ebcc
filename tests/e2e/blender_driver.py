"""Runs inside real Blender (`bpy`, Python 3.11 or 3.13): the user's whole path through the built ImageForge extension.

Started by test_extension_end_to_end.py as `python blender_driver.py <spec.json>`. It installs the zip with
`package_install_files`, points the Storage Root preference at a root whose server environment is ready,
starts the job server with the add-on's Start Server operator, builds a small scene, runs every job operator
the add-on has, and writes what landed in the scene to `<output>/report.json` (arrays as .npy files beside
it). It asserts nothing itself: the test compares the report with the kit models' known functions in the
Python 3.12 environment, which has the references (and NumPy 2) that bpy's interpreter cannot load.

Headless Blender never calls `modal()` and never fires timers, so the driver does what Blender's event loop
would: after `bpy.ops.imageforge.<tool>()` returns RUNNING_MODAL, it sends the running operator TIMER events
until it finishes (real submit, status polling, response() and cleanup()), and it calls the runtime's poll
callback where BlendJob's poll timer would run. bpy 4.5 can deadlock at interpreter exit, so after disabling
the add-on (which stops the server) the driver leaves with os._exit.

Deprecation warnings raised while it runs go into the report, so that an API a Blender release deprecates
fails the test under that release.

Spec keys: zip, storage_root, output, images {name: path}, selections {tool: selection}, step_model (the
geometry model with a depth jump, for the depth plane that tears and the Parallax Shot); movie (a video file);
camera_model (what Prepare DA3 camera model… converts: the real convert-model job) and camera_frames (the frame
folder Camera Path from Video then runs on, with the converted model); ground_model and ground_frames (the kit
DA3 and frames whose depth is a known ground: Camera Path from Video's reconstruction, levelled, exported as
COLMAP into colmap_folder, then scaled by the camera's height).
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import re
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import bpy
import numpy as np
from bpy_extras.object_utils import world_to_camera_view

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "addon"))
from scenes import empty_scene, image_object  # noqa: E402  (the add-on suite's scene builders)

MODULE = "bl_ext.user_default.imageforge"
START_TIMEOUT = 90.0
JOB_TIMEOUT = 120.0
CONVERT_TIMEOUT = 900.0  # a real DA3-Small export and its check against torch: minutes of CPU


class Driver:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.output = Path(spec["output"])
        self.report: dict[str, Any] = {"blender": bpy.app.version_string, "jobs": {}}
        self.runtime: Any = None  # the installed extension's BlendJob runtime, once installed
        self.retirement: Any = None  # its client.retirement module (waits for a stopped server to exit)

    # -- arrays and Blender data as plain values -------------------------------------------------------------

    def save_array(self, name: str, values: np.ndarray) -> str:
        path = self.output / f"{name}.npy"
        np.save(path, np.ascontiguousarray(values))
        return path.name

    def image(self, image: bpy.types.Image, name: str) -> dict[str, Any]:
        """An image's state and its pixels, top row first (Blender stores rows bottom-up)."""
        width, height = image.size
        pixels = np.empty(width * height * 4, dtype=np.float32)
        image.pixels.foreach_get(pixels)
        return {
            "name": image.name,
            "size": [width, height],
            "packed": image.packed_file is not None,
            "is_float": image.is_float,
            "colorspace": image.colorspace_settings.name,
            "alpha_mode": image.alpha_mode,
            "pixels": self.save_array(name, np.flipud(pixels.reshape(height, width, 4))),
        }

    @staticmethod
    def material(material: bpy.types.Material) -> dict[str, Any]:
        tree = material.node_tree
        return {
            "name": material.name,
            "nodes": sorted(node.bl_idname for node in tree.nodes),
            "links": sorted(
                [link.from_node.bl_idname, link.from_socket.name, link.to_node.bl_idname, link.to_socket.name]
                for link in tree.links
            ),
            "images": sorted(node.image.name for node in tree.nodes if node.type == "TEX_IMAGE" and node.image),
            "normal_space": next((node.space for node in tree.nodes if node.type == "NORMAL_MAP"), None),
        }

    def mesh(self, obj: bpy.types.Object, name: str, camera: bpy.types.Object) -> dict[str, Any]:
        """Vertex positions in `camera`'s local axes and each vertex seen through it, in render pixels."""
        mesh = obj.data
        local = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.vertices.foreach_get("co", local)
        to_camera = camera.matrix_world.inverted() @ obj.matrix_world
        scene = bpy.context.scene
        width, height = scene.render.resolution_x, scene.render.resolution_y
        in_camera, seen = [], []
        for vertex in mesh.vertices:
            in_camera.append(tuple(to_camera @ vertex.co))
            view = world_to_camera_view(scene, camera, obj.matrix_world @ vertex.co)
            seen.append((view.x * width, (1.0 - view.y) * height, view.z))
        faces = np.array([polygon.vertices[:] for polygon in mesh.polygons], dtype=np.int64).reshape(-1, 4)
        return {
            "name": obj.name,
            "vertices": len(mesh.vertices),
            "faces": len(mesh.polygons),
            "face_vertices": self.save_array(f"{name}-faces", faces),
            "uv_layers": [layer.name for layer in mesh.uv_layers],
            "in_camera": self.save_array(f"{name}-in-camera", np.array(in_camera)),
            "seen": self.save_array(f"{name}-seen", np.array(seen)),
            "materials": [self.material(material) for material in mesh.materials],
        }

    # -- Blender's event loop, by hand -----------------------------------------------------------------------

    def drive(self, call: Any, timeout: float = JOB_TIMEOUT, **properties: Any) -> dict[str, Any]:
        """Run a job operator to its end as Blender's modal event loop would; its outcome and status message."""
        started = time.monotonic()
        outcome = call("EXEC_DEFAULT", **properties)
        if outcome == {"RUNNING_MODAL"}:
            job = self.runtime.active_job
            operator = job.operator
            deadline = time.monotonic() + timeout
            while outcome == {"RUNNING_MODAL"}:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{call.idname()} did not finish within {timeout:.0f} s")
                time.sleep(operator.poll_interval)  # the operator's own timer interval
                outcome = operator.modal(bpy.context, SimpleNamespace(type="TIMER"))
        return {
            "outcome": sorted(outcome),
            "message": self.runtime.message,
            "active_job_left": self.runtime.active_job is not None,
            "seconds": round(time.monotonic() - started, 3),
        }

    def poll_server(self) -> dict[str, Any]:
        """What BlendJob's poll timer does every few seconds: refresh the server snapshot."""
        self.runtime._poll_server()
        return dict(self.runtime.server.snapshot)

    @staticmethod
    def undo_steps() -> list[str]:
        """Names in the undo history, oldest first (print_undo_steps writes to the C stdout)."""
        sys.stdout.flush()
        with tempfile.TemporaryFile() as capture:
            saved = os.dup(1)
            os.dup2(capture.fileno(), 1)
            try:
                bpy.context.window_manager.print_undo_steps()
                ctypes.CDLL(None).fflush(None)
            finally:
                os.dup2(saved, 1)
                os.close(saved)
            capture.seek(0)
            text = capture.read().decode("utf-8", errors="replace")
        return re.findall(r"name='([^']*)'", text)

    # -- the user's path ---------------------------------------------------------------------------------------

    def install(self) -> None:
        started = time.monotonic()
        result = bpy.ops.extensions.package_install_files(
            filepath=self.spec["zip"], repo="user_default", enable_on_install=True
        )
        folder = Path(sys.modules[MODULE].__file__).parent
        self.report["install"] = {
            "outcome": sorted(result),
            "folder": str(folder),
            "seconds": round(time.monotonic() - started, 3),
        }
        self.runtime = sys.modules[f"{MODULE}.addon.blender_runtime"].get_runtime()
        self.retirement = sys.modules[f"{MODULE}.client.retirement"]
        preferences = bpy.context.preferences.addons[MODULE].preferences
        preferences.storage_root = self.spec["storage_root"]  # the Storage Root preference, not the variable
        preferences.server_linger = 2.0  # the shared server exits 2 s after its last client (default 20 s)
        self.report["storage_root"] = str(self.runtime.storage_root())

    def start_server(self) -> None:
        self.report["server_before_start"] = self.poll_server()["state"]
        started = time.monotonic()
        result = bpy.ops.imageforge.start_server()
        snapshot = self.poll_server()
        while snapshot["state"] != "READY" and time.monotonic() - started < START_TIMEOUT:
            time.sleep(0.1)
            snapshot = self.poll_server()
        record = json.loads((self.runtime.storage_root() / "server-process.json").read_text(encoding="utf-8"))
        self.report["server"] = {
            "outcome": sorted(result),
            "state": snapshot["state"],
            "message": snapshot.get("message"),
            "pid": record.get("pid"),
            "devices": (snapshot.get("resources") or {}).get("models", {}).get("devices"),
            "seconds": round(time.monotonic() - started, 3),
        }
        if snapshot["state"] != "READY":
            raise RuntimeError(f"The server did not become ready: {snapshot}")

    def build_scene(self) -> None:
        empty_scene()
        images = {}
        for name, path in self.spec["images"].items():
            images[name] = bpy.data.images.load(path, check_existing=False)
            images[name].name = name
        self.empty = bpy.data.objects.new("Background Empty", None)
        self.empty.empty_display_type = "IMAGE"
        self.empty.data = images["Background"]
        bpy.context.collection.objects.link(self.empty)
        self.upscale_plane = image_object(images["Upscale"], "Upscale Plane")
        self.photo_plane = image_object(images["Photo"], "Photo Plane")
        self.step_plane = image_object(images["Step"], "Step Plane")
        bpy.context.scene.cursor.location = (1.0, -2.0, 0.5)
        bpy.ops.ed.undo_push(message="Scene ready")

    def activate(self, obj: bpy.types.Object) -> None:
        for other in bpy.context.view_layer.objects:
            other.select_set(other == obj)
        bpy.context.view_layer.objects.active = obj

    def run_jobs(self) -> None:
        ops, jobs, selections = bpy.ops.imageforge, self.report["jobs"], self.spec["selections"]

        jobs["download_model"] = self.drive(ops.download_model, model="KIT_BEN2")

        self.activate(self.empty)  # Remove Background on an image empty's picture
        jobs["remove_background"] = self.drive(ops.remove_background)
        jobs["remove_background"]["image"] = self.image(self.empty.data, "background")

        self.activate(self.upscale_plane)  # Upscale on the image texture of the active object's material
        jobs["upscale_image"] = self.drive(ops.upscale_image, scale="4")
        material = self.upscale_plane.active_material
        jobs["upscale_image"]["image"] = self.image(material.node_tree.nodes["Image Texture"].image, "upscale")

        # Refine Selection and Cutout as the selection drawer runs them: the image by name, the drawn selection.
        refine = json.dumps(selections["refine"])
        jobs["refine_selection"] = self.drive(ops.refine_selection, image_name="Refine", selection=refine, padding=64)
        jobs["refine_selection"]["image"] = self.image(bpy.data.images["Refine"], "refine")

        self.activate(self.photo_plane)  # Convert to Depth Plane on the active object's image
        jobs["depth_plane"] = self.drive(ops.depth_plane, subdivisions=4)
        camera = bpy.data.objects["Photo Camera"]
        plane = bpy.data.objects["Photo Depth Plane"]
        lens = camera.data
        jobs["depth_plane"].update(
            mesh=self.mesh(plane, "depth-plane", camera),
            camera={
                "lens": lens.lens,
                "sensor_fit": lens.sensor_fit,
                "sensor_width": lens.sensor_width,
                "shift": [lens.shift_x, lens.shift_y],
                "focus_distance": lens.dof.focus_distance,
                "location": list(camera.location),
                "same_matrix_as_plane": camera.matrix_world == plane.matrix_world,
                "is_scene_camera": bpy.context.scene.camera == camera,
            },
            resolution=[bpy.context.scene.render.resolution_x, bpy.context.scene.render.resolution_y],
            normal=self.image(bpy.data.images["Photo Normal"], "depth-plane-normal"),
        )

        cutout = json.dumps(selections["cutout"])
        jobs["cutout"] = self.drive(
            ops.cutout, image_name="Photo", selection=cutout, refine=False, displace=True, subdivisions=6
        )
        jobs["cutout"].update(
            mesh=self.mesh(bpy.data.objects["Photo Cutout"], "cutout", camera),  # seen through the photo's camera
            image=self.image(bpy.data.images["Photo Cutout"], "cutout"),
            normal=self.image(bpy.data.images["Photo Cutout Normal"], "cutout-normal"),
            # Fill Behind (on by default): the depth plane of the photo now shows the clean plate on the filled depth.
            plane_after=self.mesh(plane, "depth-plane-filled", camera),
            plate=self.image(bpy.data.images["Photo Clean Plate"], "clean-plate"),
        )
        self.parallax(jobs)

    def click_select(self, jobs: dict[str, Any]) -> None:
        """Click Select on the photo (the server encodes it once, a click answers the mask), then Enter: Cutout,
        and again on the step image with Parallax Shot. Its points come as EXEC_DEFAULT takes them."""
        ops = bpy.ops.imageforge
        click = self.spec["click"]
        for action, image_name in (("CUTOUT", "Photo"), ("PARALLAX", "Step")):
            before = set(bpy.data.objects.keys())
            started = time.monotonic()
            outcome = ops.click_select(
                "EXEC_DEFAULT", image_name=image_name, points=json.dumps(click["points"]), action=action
            )
            running = sys.modules[f"{MODULE}.addon.operators.click_select"].IMAGEFORGE_OT_click_select.running
            deadline = time.monotonic() + JOB_TIMEOUT
            while outcome == {"RUNNING_MODAL"}:
                if time.monotonic() > deadline:
                    raise TimeoutError("Click Select did not finish")
                time.sleep(0.05)
                outcome = running.modal(bpy.context, SimpleNamespace(type="TIMER"))
            record: dict[str, Any] = {"outcome": sorted(outcome), "seconds": round(time.monotonic() - started, 3)}
            record["selection"] = json.loads(bpy.data.images[image_name]["imageforge_selection"])
            if self.runtime.active_job is not None:  # the tool Enter started, driven like any job operator
                operator = self.runtime.active_job.operator
                tool = {"RUNNING_MODAL"}
                while tool == {"RUNNING_MODAL"}:
                    if time.monotonic() > deadline + JOB_TIMEOUT:
                        raise TimeoutError(f"{action} after Click Select did not finish")
                    time.sleep(operator.poll_interval)
                    tool = operator.modal(bpy.context, SimpleNamespace(type="TIMER"))
                record["tool"] = {"outcome": sorted(tool), "message": self.runtime.message}
            record["active_job_left"] = self.runtime.active_job is not None
            record["new_objects"] = sorted(set(bpy.data.objects.keys()) - before)
            jobs[f"click_select_{action.lower()}"] = record

    def parallax(self, jobs: dict[str, Any]) -> None:
        """A synthetic depth jump (the kit's plane with a card in front): the depth plane tears along it, and a
        Parallax Shot of the card fills the background behind it and moves the camera."""
        ops = bpy.ops.imageforge
        preferences = bpy.context.preferences.addons[MODULE].preferences
        preferences.model_geometry = self.spec["step_model"]
        self.activate(self.step_plane)
        jobs["step_depth_plane"] = self.drive(ops.depth_plane, subdivisions=5)
        step_camera = bpy.data.objects["Step Camera"]
        jobs["step_depth_plane"]["mesh"] = self.mesh(bpy.data.objects["Step Depth Plane"], "step-plane", step_camera)
        selection = json.dumps(self.spec["selections"]["parallax"])
        jobs["parallax_shot"] = self.drive(
            ops.parallax_shot, image_name="Step", selection=selection, refine=False, subdivisions=5
        )
        scene = bpy.context.scene
        camera = scene.camera
        path = []
        for frame in (scene.frame_start, scene.frame_start + 47):
            scene.frame_set(frame)
            path.append(list(camera.matrix_world.translation))
        scene.frame_set(scene.frame_start)
        jobs["parallax_shot"].update(
            camera={"name": camera.name, "path": path, "frame_end": scene.frame_end},
            background=self.mesh(bpy.data.objects["Step Background"], "parallax-background", camera),
            cutout=self.mesh(bpy.data.objects["Step Cutout"], "parallax-cutout", camera),
            plate=self.image(bpy.data.images["Step Clean Plate"], "parallax-plate"),
        )

    def run_frame_and_batch_jobs(self) -> None:
        """After the undo check: a movie strip's frames and the textures of a selected object (issue 13)."""
        ops, jobs = bpy.ops.imageforge, self.report["jobs"]
        scene = bpy.context.scene
        editor = scene.sequence_editor_create()
        sequencer = importlib.import_module(f"{MODULE}.addon.scene.sequencer")  # the version-proof strip timing
        strips = editor.strips
        strip = strips.new_movie("Take", self.spec["movie"], 1, 5)
        sequencer.trim(strip, 1, 0)  # scene frames 6.. show the movie from its second frame
        editor.active_strip = strip
        jobs["vse_strip"] = self.drive(ops.remove_background_frames)
        landed = strips["Take Cutout"]
        folder = Path(bpy.path.abspath(landed.directory))
        jobs["vse_strip"]["strip"] = {
            "type": landed.type,
            "channel": landed.channel,
            "span": list(sequencer.span(landed)),
            "files": [str(folder / element.filename) for element in landed.elements],
            "source": [strip.channel, *sequencer.span(strip), strip.type],
        }

        texture = bpy.data.images.load(self.spec["images"]["Background"], check_existing=False)
        texture.name = "Texture"
        plane = image_object(texture, "Textured Plane")
        self.activate(plane)
        jobs["upscale_textures"] = self.drive(ops.upscale_textures, scale="2")
        jobs["upscale_textures"]["image"] = self.image(bpy.data.images["Texture"], "texture")
        jobs["upscale_textures"]["same_datablock"] = (
            plane.active_material.node_tree.nodes["Image Texture"].image == bpy.data.images["Texture"]
        )
        self.report["undo_after_batches"] = self.undo_steps()[-2:]

    def reconstruction_record(self, name: str, stage: str = "landed") -> dict[str, Any]:
        """The collection Camera Path from Video made: its objects, the points in the world, the camera's matrix at
        the first frame, the ground stored on its empty."""
        collection = bpy.data.collections[name]
        objects = {obj.type: obj for obj in collection.objects}
        root, camera, points = objects["EMPTY"], objects["CAMERA"], objects.get("MESH")
        scene = bpy.context.scene
        scene.frame_set(scene.frame_start)
        record: dict[str, Any] = {
            "objects": sorted(obj.name for obj in collection.objects),
            "parents": sorted({obj.parent.name for obj in collection.objects if obj.parent}),
            "camera": [list(row) for row in camera.matrix_world],
            "ground": list(root["imageforge_reconstruction"].get("ground", [])),
        }
        if points is not None:
            mesh = points.data
            local = np.empty(len(mesh.vertices) * 3, np.float32)
            mesh.vertices.foreach_get("co", local)
            matrix = np.array(points.matrix_world)
            world = local.reshape(-1, 3) @ matrix[:3, :3].T + matrix[:3, 3]
            record["points"] = self.save_array(f"{name}-{stage}-points", world)
            record["modifier"] = [modifier.type for modifier in points.modifiers]
        return record

    def reconstruction(self) -> None:
        """Camera Path from Video on the kit DA3 and a clip whose depth is a known ground: points, levelled ground,
        the COLMAP folder; then Scale Scene to a 1.6 camera height."""
        ops, jobs = bpy.ops.imageforge, self.report["jobs"]
        preferences = bpy.context.preferences.addons[MODULE].preferences
        chosen = preferences.stored_model_multiview  # given back after: Prepare DA3 camera model… decides it then
        preferences.model_multiview = self.spec["ground_model"]
        empty_scene()
        scene = bpy.context.scene
        scene.imageforge_video_path = self.spec["ground_frames"]
        job = self.drive(ops.camera_path_from_video, export_colmap=True, colmap_folder=self.spec["colmap_folder"])
        jobs["reconstruction"] = job
        name = Path(self.spec["ground_frames"]).name
        job["landed"] = self.reconstruction_record(name)
        root = bpy.data.objects[f"{name} Scene"]
        self.activate(root)
        job["scale"] = sorted(ops.scale_scene(known="CAMERA_HEIGHT", length=1.6))
        job["scaled"] = self.reconstruction_record(name, "scaled")
        job["undo"] = self.undo_steps()[-2:]
        scene.imageforge_video_path = ""
        preferences.stored_model_multiview = chosen

    def camera_path(self) -> None:
        """Prepare DA3 camera model… (the real conversion), then Camera Path from Video on the model it made."""
        ops, jobs = bpy.ops.imageforge, self.report["jobs"]
        jobs["prepare_camera_model"] = self.drive(
            ops.prepare_camera_model, timeout=CONVERT_TIMEOUT, model=self.spec["camera_model"]
        )
        models = importlib.import_module(f"{MODULE}.addon.preferences")
        multiview = importlib.import_module(f"{MODULE}.contract.catalog").Family("multiview")
        jobs["prepare_camera_model"]["camera_model"] = models.job_model(models.get_preferences(), multiview)
        empty_scene()
        bpy.context.scene.imageforge_video_path = self.spec["camera_frames"]
        jobs["camera_path"] = self.drive(ops.camera_path_from_video)
        (camera,) = [obj for obj in bpy.data.objects if obj.type == "CAMERA"]
        scene = bpy.context.scene
        matrices = []
        for frame in range(scene.frame_start, scene.frame_end + 1):
            scene.frame_set(frame)
            matrices.append([list(row) for row in camera.matrix_world])
        jobs["camera_path"]["camera"] = {
            "name": camera.name,
            "lens": camera.data.lens,
            "frames": [scene.frame_start, scene.frame_end],
            "matrices": self.save_array("camera-path", np.array(matrices)),
        }
        jobs["camera_path"]["landed"] = self.reconstruction_record(Path(self.spec["camera_frames"]).name)

    def undo(self) -> None:
        steps = self.undo_steps()
        bpy.ops.ed.undo()
        self.report["undo"] = {
            "steps": steps,
            "after_one_undo": sorted(obj.name for obj in bpy.data.objects),
        }

    def shut_down(self) -> None:
        """Disable the add-on as a user would: Blender leaves the shared server, which exits after its linger
        time with no other client; wait until the process is gone."""
        import addon_utils  # Blender's module: importable only once bpy is

        root = self.runtime.storage_root()
        server = json.loads((root / "server-process.json").read_text(encoding="utf-8"))["pid"]
        started = time.monotonic()
        addon_utils.disable(MODULE, default_set=True)
        retired = self.retirement.wait_until_retired(root, timeout=30)
        while Path(f"/proc/{server}").exists() and time.monotonic() - started < 60:
            time.sleep(0.05)
        self.report["shutdown"] = {
            "retired": retired and not Path(f"/proc/{server}").exists(),
            "process_record_left": (root / "server-process.json").exists(),
            "types_left": sorted(name for name in dir(bpy.types) if name.startswith("IMAGEFORGE_")),
            "seconds": round(time.monotonic() - started, 3),
        }

    def run(self) -> None:
        # Recorded, never raised: Blender's RNA warns from C and would leave an "error" filter's exception pending.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                self.install()
                try:
                    self.start_server()
                    self.build_scene()
                    self.run_jobs()
                    self.undo()
                    self.click_select(self.report["jobs"])  # after the undo check: its own steps follow
                    self.run_frame_and_batch_jobs()
                    self.reconstruction()
                    self.camera_path()
                finally:
                    self.shut_down()
            finally:
                self.report["deprecations"] = [
                    {"file": warning.filename, "line": warning.lineno, "message": str(warning.message)}
                    for warning in caught
                    if issubclass(warning.category, DeprecationWarning | PendingDeprecationWarning)
                ]


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    driver = Driver(spec)
    try:
        driver.run()
    except BaseException:  # the report carries the traceback to the test
        driver.report["error"] = traceback.format_exc()
    finally:
        (driver.output / "report.json").write_text(json.dumps(driver.report, indent=2), encoding="utf-8")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
