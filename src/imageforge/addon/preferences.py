"""Extension preferences: Storage Root, Device, Maximum AI Input Size, model per family, MoGe level, and the
job-file limits Clean Up Job Files applies (operators/job_files.py).

Every choice the user makes is stored in a hidden plain property (`stored_*`) and shown through a property
with get/set callbacks that validates it against what is valid now (choices.py). A value saved on another
machine, or for a model the catalog dropped, therefore reads as the default instead of raising or showing a
blank enum, and the saved value is kept until the user picks another one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import bpy

from ..client.environment import default_storage_root
from ..client.package_indexes import KNOWN_INDEXES
from ..client.server_runtimes import chosen_runtime
from ..client.setup_process import SetupChoices
from ..contract import Device
from ..contract.catalog import Catalog, Family, ModelFamily, builtin_families
from ..contract.jobs import MAX_INPUT_SIZE_DEFAULT, RESOLUTION_LEVEL_MAX
from ..contract.parameters import model_parameters, setting_parameters
from ..contract.server_clients import DEFAULT_LINGER_SECONDS, linger_seconds
from . import EXTENSION_PACKAGE, choices
from .blender_runtime import server_snapshot
from .health_snapshot import offered_devices


def addon_package() -> str:
    """The name Blender keys the extension's preferences by: the extension's ROOT package (`imageforge` from
    source, `bl_ext.<repo>.imageforge` when installed), not this `addon` subpackage, so that preferences
    saved before the add-on moved into addon/ still load."""
    return EXTENSION_PACKAGE


def get_preferences(context: bpy.types.Context | None = None) -> ImageForgePreferences | None:
    context = context or bpy.context
    addon = context.preferences.addons.get(addon_package())
    return addon.preferences if addon else None


def model_catalog() -> Catalog | None:
    """The catalog with the Storage Root's local overlay (models converted there, e.g. the DA3 camera model)."""
    return choices.catalog(storage_root())


def storage_root(path: Path | None = None) -> Path:
    """The configured Storage Root (default when unset). BlendJob passes `path` to save a new location."""
    preferences = get_preferences()
    if path is not None and preferences is not None:
        preferences.storage_root = str(path)
    configured = getattr(preferences, "storage_root", "") if preferences else ""
    return Path(bpy.path.abspath(configured)).resolve() if configured.strip() else default_storage_root()


def setup_choices() -> SetupChoices:
    """Where Set Up Server takes the server's packages from (the Package Index and Wheelhouse preferences)."""
    preferences = get_preferences()
    if preferences is None:
        return SetupChoices()
    chosen = preferences.package_index
    index = (
        preferences.package_index_url.strip()
        if chosen == "CUSTOM"
        else ("" if chosen == "AUTOMATIC" else chosen.lower())
    )
    wheelhouse = preferences.wheelhouse.strip()
    runtime = preferences.server_runtime.lower() if choices.openvino_offered(choices.current_platform()) else ""
    return SetupChoices(index=index, wheelhouse=bpy.path.abspath(wheelhouse) if wheelhouse else "", runtime=runtime)


PACKAGE_INDEX_ITEMS = [
    ("AUTOMATIC", "Automatic", "PyPI, then the Tsinghua and Aliyun mirrors, each in turn when one does not answer"),
    *((index.key.upper(), index.label, f"{index.url} first, then the automatic order") for index in KNOWN_INDEXES),
    ("CUSTOM", "Custom URL", "The index below first (e.g. your studio's), then the automatic order"),
]


def server_linger() -> float:
    """Seconds a job server with no client and no job stays (the preference; contract.server_clients clamps)."""
    preferences = get_preferences()
    return linger_seconds(getattr(preferences, "server_linger", None) if preferences else None)


# ---------------------------------------------------------------------------------------------- devices
_last_offered: list[list[Device]] = []  # what the server last reported, kept while it is stopped


def available_devices() -> list[Device]:
    """Device choices, default first: from the running server, else what it last said, else the platform."""
    offered = offered_devices(server_snapshot())
    if offered is not None:
        _last_offered[:] = [offered]
    if _last_offered:
        return choices.device_choices(_last_offered[0], choices.current_platform())
    return choices.device_choices(None, choices.current_platform(), chosen_runtime(storage_root()))


EnumItem = tuple[str, str, str, int]
_enum_items: dict[str, list[EnumItem]] = {}  # Blender needs dynamic item strings kept alive by Python


def _device_items(_self: ImageForgePreferences, _context: bpy.types.Context) -> list[EnumItem]:
    items = [
        (device.value, device.label, f"Run models on {device.label}", index)
        for index, device in enumerate(available_devices())
    ]
    _enum_items["device"] = items
    return items


def _get_device(self: ImageForgePreferences) -> int:
    devices = available_devices()
    return devices.index(choices.valid_device(self.stored_device, devices))


def _set_device(self: ImageForgePreferences, value: int) -> None:
    devices = available_devices()
    if 0 <= value < len(devices):
        self.stored_device = devices[value].value


# ----------------------------------------------------------------------------------------------- models
def _model_items(family: Family) -> Callable[[ImageForgePreferences, bpy.types.Context], list[EnumItem]]:
    def items(_self: ImageForgePreferences, _context: bpy.types.Context) -> list[EnumItem]:
        found = choices.model_choices(family, model_catalog())
        listed = [
            (choice.key, f"{choice.label} (default)" if choice.default else choice.label, choice.key, index)
            for index, choice in enumerate(found)
        ]
        _enum_items[family] = listed or [("NONE", "No Model", "The model catalog has none", 0)]
        return _enum_items[family]

    return items


def model_property_name(family: Family) -> str:
    """`model_<family>`: the enum the preferences show for a family."""
    return f"model_{family}"


def stored_model_name(family: Family) -> str:
    """`stored_model_<family>`: the hidden text the family's choice is saved in (its saved value outlives any
    change of the catalog)."""
    return f"stored_model_{family}"


def _model_accessors(
    family: Family,
) -> tuple[Callable[[ImageForgePreferences], int], Callable[[ImageForgePreferences, int], None]]:
    stored_name = stored_model_name(family)

    def get(self: ImageForgePreferences) -> int:
        found = choices.model_choices(family, model_catalog())
        key = choices.valid_model(getattr(self, stored_name), found)
        return next((index for index, choice in enumerate(found) if choice.key == key), 0)

    def set_(self: ImageForgePreferences, value: int) -> None:
        found = choices.model_choices(family, model_catalog())
        if 0 <= value < len(found):
            setattr(self, stored_name, found[value].key)

    return get, set_


def _model_property(family: ModelFamily) -> Any:
    get, set_ = _model_accessors(family.key)
    return bpy.props.EnumProperty(
        name=family.label,
        description=f"Model used for {family.label.lower()} jobs",
        items=_model_items(family.key),
        get=get,
        set=set_,
    )


def _stored(name: str) -> Any:
    return bpy.props.StringProperty(name=name, default="", options={"HIDDEN"})


def family_properties() -> dict[str, object]:
    """Two properties per family of the catalog, in its order: the shown choice `model_<family>` and the stored
    key `stored_model_<family>` (for "background": "Background Removal" and "Stored Background Model")."""
    properties: dict[str, object] = {}
    for family in builtin_families():
        properties[model_property_name(family.key)] = _model_property(family)
    for family in builtin_families():
        properties[stored_model_name(family.key)] = _stored(f"Stored {family.short_label} Model")
    return properties


# ------------------------------------------------------------------------------------------ numbers
def _get_max_input_size(self: ImageForgePreferences) -> int:
    return choices.valid_max_input_size(self.stored_max_input_size)


def _set_max_input_size(self: ImageForgePreferences, value: int) -> None:
    self.stored_max_input_size = choices.chosen_max_input_size(value)


def _get_resolution_level(self: ImageForgePreferences) -> int:
    return choices.valid_resolution_level(self.stored_resolution_level)


def _set_resolution_level(self: ImageForgePreferences, value: int) -> None:
    self.stored_resolution_level = min(max(value, 0), RESOLUTION_LEVEL_MAX)


class ImageForgePreferences(bpy.types.AddonPreferences):
    bl_idname = addon_package()

    storage_root: bpy.props.StringProperty(
        name="Storage Root",
        description="Folder for the server environment, models and job files (empty: ~/.imageforge). "
        "Change it with Move…, which moves the files and restarts the server",
        subtype="DIR_PATH",
        default="",
    )
    device: bpy.props.EnumProperty(
        name="Device",
        description="Where models run. Only devices the installed ONNX Runtime offers are listed",
        items=_device_items,
        get=_get_device,
        set=_set_device,
    )
    max_input_size: bpy.props.IntProperty(
        name="Maximum AI Input Size",
        description="Longest image edge the models analyse, in steps of 256 px; lower it if memory runs out",
        min=choices.MAX_INPUT_SIZE_MIN,
        max=choices.MAX_INPUT_SIZE_LIMIT,
        subtype="PIXEL",
        get=_get_max_input_size,
        set=_set_max_input_size,
    )
    resolution_level: bpy.props.IntProperty(
        name="MoGe Resolution Level",
        description="Detail of depth planes and cutouts (0-9): higher is finer and slower",
        min=0,
        max=RESOLUTION_LEVEL_MAX,
        get=_get_resolution_level,
        set=_set_resolution_level,
    )
    job_files_max_age_days: bpy.props.IntProperty(
        name="Maximum Age",
        description="Clean Up Job Files deletes finished job folders older than this many days "
        "(folders holding files an open .blend uses are kept)",
        default=30,
        min=0,
        max=3650,
    )
    server_linger: bpy.props.FloatProperty(
        name="Keep Server Running",
        description="Seconds the job server stays after no Blender and no imageforge command uses it, keeping "
        "the loaded model warm for the next job (Blender instances and the CLI share one server per folder)",
        default=DEFAULT_LINGER_SECONDS,
        min=0.0,
        soft_max=600.0,
        step=500,
        precision=0,
    )
    job_files_max_size_gb: bpy.props.FloatProperty(
        name="Maximum Total Size",
        description="Clean Up Job Files then deletes the oldest job folders until the rest fit in this many GB",
        default=5.0,
        min=0.0,
        soft_max=1000.0,
        step=100,
        precision=1,
    )
    texture_results: bpy.props.EnumProperty(
        name="Texture Results",
        description="Where Upscale Textures of Selected Objects puts each upscaled image",
        items=(
            ("PACK", "Pack into the .blend", "The upscaled pixels are packed into the .blend file"),
            (
                "SAVE_BESIDE",
                "Save Beside the Original",
                "Saved next to the original file as <name>_<scale>x.png (never replacing a file); "
                "images without a file of their own are packed",
            ),
        ),
        default="PACK",
    )
    # model_<family> and stored_model_<family> for every family of the catalog: added below (family_properties)
    stored_device: _stored("Stored Device")
    stored_max_input_size: bpy.props.IntProperty(default=MAX_INPUT_SIZE_DEFAULT, options={"HIDDEN"})
    stored_resolution_level: bpy.props.IntProperty(default=choices.RESOLUTION_LEVEL_DEFAULT, options={"HIDDEN"})

    package_index: bpy.props.EnumProperty(
        name="Package Index",
        description="Where Set Up Server downloads the server's Python packages first; every file is checked "
        "against its pinned SHA-256 whichever index serves it",
        items=PACKAGE_INDEX_ITEMS,
        default="AUTOMATIC",
    )
    package_index_url: bpy.props.StringProperty(
        name="Index URL", description="A PEP 503 simple index, e.g. https://pypi.studio.example/simple", default=""
    )
    wheelhouse: bpy.props.StringProperty(
        name="Wheelhouse",
        description="A folder of wheels ('imageforge setup --export-wheelhouse'): Set Up Server installs from it "
        "alone, with no network",
        subtype="DIR_PATH",
        default="",
    )

    server_runtime: bpy.props.EnumProperty(
        name="Server Runtime",
        description="Which ONNX Runtime build Set Up Server installs (a change rebuilds the server environment)",
        items=[
            ("DEFAULT", "Platform Default", "The platform's own build: CUDA on Linux, DirectML on Windows, and CPU"),
            (
                "OPENVINO",
                "Intel OpenVINO",
                "Intel's build: the Intel OpenVINO device (Intel GPUs, any x86-64 CPU) "
                "and CPU, without CUDA or DirectML; Automatic keeps CPU where OpenVINO is not faster",
            ),
        ],  # fmt: skip
        default="DEFAULT",
    )

    def draw(self, _context: bpy.types.Context) -> None:
        self.draw_storage(self.layout.box())
        self.draw_setup(self.layout.box())
        self.draw_inference(self.layout.box())
        self.draw_models(self.layout.box())

    def draw_storage(self, layout: bpy.types.UILayout) -> None:
        layout.label(text="Storage Root", icon="FILE_FOLDER")
        row = layout.row(align=True)
        path = row.row(align=True)
        path.enabled = False  # changed only through the migrate flow, which moves the files with it
        path.prop(self, "storage_root", text="")
        row.operator("imageforge.migrate_server", text="Move…", icon="FORWARD")
        layout.label(text=str(storage_root()))
        row = layout.row(align=True)
        row.label(text="Job Files", icon="TRASH")
        row.prop(self, "job_files_max_age_days", text="Max Age (days)")
        row.prop(self, "job_files_max_size_gb", text="Max Size (GB)")
        layout.prop(self, "server_linger", text="Keep Server Running (s)")

    def draw_setup(self, layout: bpy.types.UILayout) -> None:
        layout.label(text="Set Up Server", icon="IMPORT")
        layout.prop(self, "package_index")
        if self.package_index == "CUSTOM":
            layout.prop(self, "package_index_url")
        layout.prop(self, "wheelhouse")
        if choices.openvino_offered(choices.current_platform()):
            layout.prop(self, "server_runtime")

    def draw_inference(self, layout: bpy.types.UILayout) -> None:
        layout.prop(self, "device")
        layout.prop(self, "max_input_size")
        layout.prop(self, "resolution_level")
        layout.prop(self, "texture_results")

    def draw_models(self, layout: bpy.types.UILayout) -> None:
        layout.label(text="Models", icon="FILE_3D")
        for family in builtin_families():
            layout.prop(self, model_property_name(family.key))


ImageForgePreferences.__annotations__.update(family_properties())  # read by Blender when the class registers


# ------------------------------------------------------------------------------ what jobs are sent
def job_device(preferences: ImageForgePreferences | None) -> Device:
    devices = available_devices()
    return choices.valid_device(preferences.stored_device if preferences else "", devices)


def job_model(preferences: ImageForgePreferences | None, family: Family) -> str | None:
    stored = getattr(preferences, stored_model_name(family), "") if preferences else ""
    return choices.valid_model(stored, choices.model_choices(family, model_catalog()))


def job_max_input_size(preferences: ImageForgePreferences | None) -> int:
    return choices.valid_max_input_size(preferences.stored_max_input_size if preferences else None)


def job_resolution_level(preferences: ImageForgePreferences | None) -> int:
    return choices.valid_resolution_level(preferences.stored_resolution_level if preferences else None)


_SETTINGS = {"device": job_device, "max_input_size": job_max_input_size, "resolution_level": job_resolution_level}
P = TypeVar("P")


def job_parameters(parameters: type[P], **given: Any) -> P:
    """A job's parameter dataclass with `given`, and every other field the preferences decide: the contract marks
    them (`param(setting=...)`: Device, Maximum AI Input Size, MoGe Resolution Level; `param(family=...)`: the
    model chosen for that family)."""
    preferences = get_preferences()
    values: dict[str, Any] = {
        name: _SETTINGS[setting](preferences) for name, setting in setting_parameters(parameters).items()
    }
    for name, family in model_parameters(parameters).items():
        values[name] = job_model(preferences, Family(family))
    values.update(given)
    return parameters(**values)


def texture_results(preferences: ImageForgePreferences | None) -> str:
    """PACK or SAVE_BESIDE (scene/texture_images.TextureResults)."""
    return preferences.texture_results if preferences else "PACK"
