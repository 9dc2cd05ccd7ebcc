"""What a point cloud costs in Blender: landing it (Camera Path from Video's points object), finding the ground,
and the evaluated point cloud's memory, for 50k, 200k (the default Maximum Points) and 1M points.

Run under a Blender's own Python (bpy from PyPI), one command:

    .venv-blender-5-2/bin/python bench/point_cloud_landing.py

Synthetic points: 60 % on a ground 0.8 below the camera, the rest anywhere in view. Times are the best of three
on this machine; ratios to the 200k row are printed beside them. The viewport's drawing cost needs a GPU and a
window, which a headless bpy has not: the memory column (positions, colours, radii of the evaluated cloud) is
what the GPU is handed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Matrix  # noqa: E402

from imageforge.addon.scene import reconstruction  # noqa: E402
from imageforge.addon.scene.ground_plane import fit_ground  # noqa: E402
from imageforge.addon.scene.point_cloud import PointCloud  # noqa: E402

COUNTS = (50_000, 200_000, 1_000_000)
RUNS = 3


def synthetic(count: int) -> PointCloud:
    rng = np.random.default_rng(0)
    ground = int(count * 0.6)
    on = np.stack([rng.uniform(-2, 2, ground), np.full(ground, -0.8), -rng.uniform(1.5, 8, ground)], axis=1)
    off = np.stack([rng.uniform(-2, 2, count - ground), rng.uniform(-0.6, 2, count - ground),
                    -rng.uniform(1.5, 8, count - ground)], axis=1)  # fmt: skip
    positions = np.concatenate([on, off]).astype(np.float32)
    return PointCloud(positions, rng.integers(0, 256, (count, 3), dtype=np.uint8))


def best(action) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    rows = []
    for count in COUNTS:
        cloud = synthetic(count)
        collection = bpy.data.collections.new("bench")
        bpy.context.scene.collection.children.link(collection)
        root = reconstruction.reconstruction_root(collection, "bench Scene", Matrix.Identity(4), "DA3_SMALL")

        def land(cloud=cloud, collection=collection, root=root) -> None:
            obj = reconstruction.point_cloud_object(collection, "bench Points", cloud, 0.01, root)
            geometry = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
            assert len(geometry.pointcloud.points) == len(cloud)
            mesh = obj.data
            bpy.data.objects.remove(obj)
            bpy.data.meshes.remove(mesh)

        landing = best(land)
        ground = best(lambda cloud=cloud: fit_ground(cloud.positions))
        evaluated_bytes = count * (12 + 4 + 4)  # float3 position, byte colour, float radius
        rows.append((count, landing, ground, evaluated_bytes))
        bpy.data.objects.remove(root)
        bpy.data.collections.remove(collection)
    reference = next(row for row in rows if row[0] == 200_000)
    print(f"Blender {bpy.app.version_string}, best of {RUNS}")
    print(f"{'points':>10} {'land s':>8} {'×200k':>6} {'ground s':>9} {'×200k':>6} {'cloud MB':>9}")
    for count, landing, ground, size in rows:
        print(
            f"{count:>10,} {landing:>8.3f} {landing / reference[1]:>6.2f} {ground:>9.3f} "
            f"{ground / reference[2]:>6.2f} {size / 1e6:>9.1f}"
        )


if __name__ == "__main__":
    main()
