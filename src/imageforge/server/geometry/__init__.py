"""Geometry in NumPy: camera intrinsics, MoGe-2 post-processing, camera-path alignment, memory estimates."""
