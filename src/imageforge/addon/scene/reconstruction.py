"""A reconstructed video in the scene: one collection named after the clip holding the camera path, its point cloud
and the empty both hang from.

The empty ("<clip> Scene") is the reconstruction's frame: the camera path's Blender frame (scene/camera_path.py),
placed at the 3D cursor facing +Y. The camera is keyed in that frame and the points' mesh is in it, so levelling
and scaling change the empty's matrix only: the camera path and the points always move together, as Blender's
own tracking tools (Set Floor, Set Scale) move a solved camera's parent. The empty keeps what the tools need:
the model (whether depth is relative), the ground plane in its frame, the scale applied, the COLMAP folder.

The points are a mesh (one vertex per point, an sRGB byte colour attribute "Color") drawn through a Geometry
Nodes modifier (Mesh to Points with a Radius input, then the point material, which shows "Color"): the mesh
stays editable (select two points to scale by their distance, delete stray ones) and every supported Blender
renders the points in EEVEE and Cycles.
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np
from mathutils import Matrix

from .ground_plane import Plane, plane_from_list
from .materials import new_node_material
from .point_cloud import PointCloud

TAG = "imageforge_reconstruction"  # on the empty: a group of the values below
NODE_GROUP = "ImageForge Points"
MATERIAL = "ImageForge Point Colour"
COLOUR_ATTRIBUTE = "Color"
MODIFIER = "Points"
RADIUS = "Radius"
RADIUS_FRACTION = 0.004  # automatic radius: of the points' median distance from the first camera
METRIC_MODELS = ("METRIC", "NESTED")  # Depth Anything 3 models whose depth is in metres (by catalog key)


def new_collection(context: bpy.types.Context, name: str) -> bpy.types.Collection:
    """A collection named after the clip (Blender adds .001 if taken), in the scene's top collection."""
    collection = bpy.data.collections.new(name)
    collection[TAG] = True
    context.scene.collection.children.link(collection)
    return collection


def reconstruction_root(collection: bpy.types.Collection, name: str, matrix: Matrix, model: str) -> bpy.types.Object:
    root = bpy.data.objects.new(name, None)
    root.empty_display_type = "PLAIN_AXES"
    root.empty_display_size = 0.25
    root.matrix_world = matrix
    root[TAG] = {"model": model, "scale": 1.0}
    collection.objects.link(root)
    return root


def parent_to(obj: bpy.types.Object, root: bpy.types.Object) -> None:
    """Hang `obj` from `root` so its own matrix is in the reconstruction's frame."""
    obj.parent = root
    obj.matrix_parent_inverse = Matrix.Identity(4)


def automatic_radius(cloud: PointCloud) -> float:
    distance = float(np.median(np.linalg.norm(cloud.positions, axis=1))) if len(cloud) else 1.0
    return max(RADIUS_FRACTION * distance, 1e-5)


def point_cloud_object(
    collection: bpy.types.Collection, name: str, cloud: PointCloud, radius: float, root: bpy.types.Object
) -> bpy.types.Object:
    """The points as a mesh of vertices with their colour, drawn as points of `radius`, hung from `root`."""
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(cloud))
    mesh.vertices.foreach_set("co", cloud.positions.astype(np.float32).ravel())
    colour = mesh.color_attributes.new(COLOUR_ATTRIBUTE, "BYTE_COLOR", "POINT")
    rgba = np.ones((len(cloud), 4), np.float32)
    rgba[:, :3] = cloud.colours / 255.0
    colour.data.foreach_set("color_srgb", rgba.ravel())
    mesh.color_attributes.active_color = colour
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    collection.objects.link(obj)
    parent_to(obj, root)
    modifier = obj.modifiers.new(MODIFIER, "NODES")
    modifier.node_group = points_node_group()
    set_point_radius(obj, radius)
    return obj


def points_node_group() -> bpy.types.NodeTree:
    """Mesh to Points (vertices) with a Radius input, then the point material: shared by every point cloud."""
    existing = bpy.data.node_groups.get(NODE_GROUP)
    if existing is not None and existing.get(TAG):
        return existing
    group = bpy.data.node_groups.new(NODE_GROUP, "GeometryNodeTree")
    group[TAG] = True
    interface = group.interface
    interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    radius = interface.new_socket(RADIUS, in_out="INPUT", socket_type="NodeSocketFloat")
    radius.default_value, radius.min_value, radius.subtype = 0.01, 0.0, "DISTANCE"
    interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    if hasattr(group, "is_modifier"):
        group.is_modifier = True
    nodes, links = group.nodes, group.links
    given = nodes.new("NodeGroupInput")
    to_points = nodes.new("GeometryNodeMeshToPoints")
    to_points.mode = "VERTICES"
    material = nodes.new("GeometryNodeSetMaterial")
    material.inputs["Material"].default_value = point_material()
    result = nodes.new("NodeGroupOutput")
    for index, node in enumerate((given, to_points, material, result)):
        node.location = (220 * index, 0)
    links.new(given.outputs["Geometry"], to_points.inputs["Mesh"])
    links.new(given.outputs[RADIUS], to_points.inputs["Radius"])
    links.new(to_points.outputs["Points"], material.inputs["Geometry"])
    links.new(material.outputs["Geometry"], result.inputs["Geometry"])
    return group


def point_material() -> bpy.types.Material:
    """Diffuse points coloured by their "Color" attribute (the frame's colour), unlit enough to read in any light."""
    existing = bpy.data.materials.get(MATERIAL)
    if existing is not None and existing.get(TAG):
        return existing
    material = new_node_material(MATERIAL)
    material[TAG] = True
    tree = material.node_tree
    bsdf = next(node for node in tree.nodes if node.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Roughness"].default_value = 1.0
    attribute = tree.nodes.new("ShaderNodeAttribute")
    attribute.attribute_type = "GEOMETRY"
    attribute.attribute_name = COLOUR_ATTRIBUTE
    attribute.location = (-320, 200)
    tree.links.new(attribute.outputs["Color"], bsdf.inputs["Base Color"])
    tree.links.new(attribute.outputs["Color"], bsdf.inputs["Emission Color"])
    bsdf.inputs["Emission Strength"].default_value = 0.5
    return material


def radius_identifier(group: bpy.types.NodeTree) -> str:
    return str(group.interface.items_tree[RADIUS].identifier)


def points_modifier(obj: bpy.types.Object) -> Any:
    modifier = obj.modifiers.get(MODIFIER)
    if modifier is None or modifier.type != "NODES" or modifier.node_group is None:
        return None
    return modifier if RADIUS in modifier.node_group.interface.items_tree else None


def radius_property(obj: bpy.types.Object) -> tuple[Any, str]:
    """(owner, property path) of the point cloud's Radius input, for layout.prop and reading or writing it.
    Blender 5.2 keeps a modifier's inputs as `properties.inputs.<identifier>.value`; 4.5 as ID properties."""
    modifier = points_modifier(obj)
    identifier = radius_identifier(modifier.node_group)
    properties = getattr(modifier, "properties", None)
    if properties is not None and hasattr(properties, "inputs"):
        return getattr(properties.inputs, identifier), "value"
    return modifier, f'["{identifier}"]'


def point_radius(obj: bpy.types.Object) -> float:
    owner, path = radius_property(obj)
    return float(owner.path_resolve(path))


def set_point_radius(obj: bpy.types.Object, radius: float) -> None:
    owner, path = radius_property(obj)
    if path == "value":
        owner.value = float(radius)
    else:
        owner[path[2:-2]] = float(radius)
    obj.update_tag()


def find_root(obj: bpy.types.Object | None) -> bpy.types.Object | None:
    """The reconstruction `obj` belongs to (itself or a parent), or None."""
    while obj is not None:
        if TAG in obj:
            return obj
        obj = obj.parent
    return None


def points_of(root: bpy.types.Object) -> bpy.types.Object | None:
    return next((child for child in root.children if child.type == "MESH" and points_modifier(child)), None)


def camera_of(root: bpy.types.Object) -> bpy.types.Object | None:
    return next((child for child in root.children if child.type == "CAMERA"), None)


def local_points(obj: bpy.types.Object) -> np.ndarray:
    """(n, 3) vertex positions of the point cloud mesh in the reconstruction's frame."""
    mesh = obj.data
    positions = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", positions)
    return positions.reshape(-1, 3).astype(np.float64)


def selected_points(obj: bpy.types.Object) -> np.ndarray:
    """The selected vertices' positions in the reconstruction's frame (Edit Mode's selection, written back)."""
    if obj.mode == "EDIT":
        obj.update_from_editmode()
    mesh = obj.data
    selected = np.zeros(len(mesh.vertices), bool)
    mesh.vertices.foreach_get("select", selected)
    return local_points(obj)[selected]


def settings(root: bpy.types.Object) -> Any:
    return root[TAG]


def ground(root: bpy.types.Object) -> Plane | None:
    stored = settings(root).get("ground")
    return None if stored is None else plane_from_list(list(stored))


def store_ground(root: bpy.types.Object, plane: Plane) -> None:
    settings(root)["ground"] = plane.as_list()


def is_metric(root: bpy.types.Object) -> bool:
    model = str(settings(root).get("model", ""))
    return any(mark in model.upper() for mark in METRIC_MODELS)


def world_matrix(root: bpy.types.Object) -> np.ndarray:
    return np.array(root.matrix_world)


def set_world_matrix(root: bpy.types.Object, matrix: np.ndarray) -> None:
    root.matrix_world = Matrix(matrix.tolist())


def uniform_scale(root: bpy.types.Object) -> float:
    """The reconstruction's scale (levelling and scaling keep it uniform)."""
    return float(np.cbrt(abs(np.linalg.det(world_matrix(root)[:3, :3]))))
