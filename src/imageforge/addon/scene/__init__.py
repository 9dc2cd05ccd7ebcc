"""Landing job results in the Blender scene: images replaced in place, depth planes, cameras, cutouts.

Pure geometry (selection coordinates, depth grids, camera intrinsics) lives in modules without bpy so it can
be tested directly; the modules that create Blender data take those plain results and only build.
"""
