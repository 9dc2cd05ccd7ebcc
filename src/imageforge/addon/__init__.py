"""The Blender add-on: preferences, operators, panels, scene helpers and the add-on's BlendJob runtime.

The extension's root package (`imageforge` from source, `bl_ext.<repo>.imageforge` when installed) only
delegates register()/unregister() to registration.py here. Blender still knows the extension by that root
name: preferences are stored under it (preferences.addon_package()), so they survived the move into addon/.
"""

EXTENSION_PACKAGE = __package__.rpartition(".")[0]  # the root package, one level above this one
