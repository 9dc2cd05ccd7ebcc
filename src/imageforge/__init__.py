"""ImageForge: local AI image tools for Blender (extension entry point).

`bpy` is imported only inside register()/unregister(): the job server process imports this package
too (for `imageforge.contract` and `imageforge.server`), and it has no Blender.
"""


def register() -> None:
    from . import registration

    registration.register()


def unregister() -> None:
    from . import registration

    registration.unregister()
