"""ImageForge: local AI image tools for Blender (extension entry point).

This package holds only the extension's register()/unregister(); the add-on itself is `addon/`. `bpy` is
imported only inside them: the job server process imports this package too (for `imageforge.contract` and
`imageforge.server`), and it has no Blender.
"""


def register() -> None:
    from .addon import registration

    registration.register()


def unregister() -> None:
    from .addon import registration

    registration.unregister()
