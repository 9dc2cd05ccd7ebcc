"""Materials for results: the photo (or cutout) as colour and alpha, and the job's normal map.

Results always get a new material: the user's own materials, possibly shared by other objects, are never
edited. Normal maps from the geometry jobs are camera-space in OpenCV axes, encoded (n + 1) / 2; for the
Normal Map node's Object space they are converted once, when loaded, to the mesh's local (Blender camera)
axes by flipping y and z, and packed.
"""

from __future__ import annotations

from pathlib import Path

import bpy

from .pixels import read_pixels, write_pixels


def normal_image(path: Path, name: str, *, camera_space: bool) -> bpy.types.Image:
    """Load a normal map as packed Non-Color data; `camera_space`: convert OpenCV axes to Blender's."""
    image = bpy.data.images.load(str(path), check_existing=False)
    image.name = name
    image.colorspace_settings.is_data = True
    image.alpha_mode = "CHANNEL_PACKED"
    if camera_space:
        pixels = read_pixels(image)
        pixels[..., 1:3] = 1.0 - pixels[..., 1:3]
        write_pixels(image, pixels)
    image.pack()
    return image


def new_node_material(name: str) -> bpy.types.Material:
    """A material with a node tree on every supported Blender: 4.5 needs `use_nodes`, which 5.0 deprecates
    (always on there; setting it warns). The add-on's one Blender version check."""
    material = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):
        material.use_nodes = True
    return material


def photo_material(
    name: str,
    image: bpy.types.Image,
    *,
    normal: bpy.types.Image | None = None,
    normal_space: str = "OBJECT",
) -> bpy.types.Material:
    """Principled BSDF with the image as Base Color and Alpha, and an optional normal map."""
    material = new_node_material(name)
    tree = material.node_tree
    bsdf = next(node for node in tree.nodes if node.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Roughness"].default_value = 1.0
    colour = tree.nodes.new("ShaderNodeTexImage")
    colour.image = image
    colour.location = (-420, 300)
    colour.interpolation = "Linear"
    colour.extension = "EXTEND"
    tree.links.new(colour.outputs["Color"], bsdf.inputs["Base Color"])
    tree.links.new(colour.outputs["Alpha"], bsdf.inputs["Alpha"])
    if normal is not None:
        texture = tree.nodes.new("ShaderNodeTexImage")
        texture.image = normal
        texture.location = (-620, -200)
        texture.extension = "EXTEND"
        normal_map = tree.nodes.new("ShaderNodeNormalMap")
        normal_map.space = normal_space
        normal_map.location = (-300, -200)
        tree.links.new(texture.outputs["Color"], normal_map.inputs["Color"])
        tree.links.new(normal_map.outputs["Normal"], bsdf.inputs["Normal"])
    tree.nodes.active = colour
    material.surface_render_method = "DITHERED"  # EEVEE's alpha from the image (every supported Blender: 4.2+)
    return material


def load_packed_image(path: Path, name: str) -> bpy.types.Image:
    image = bpy.data.images.load(str(path), check_existing=False)
    image.name = name
    image.pack()
    return image
