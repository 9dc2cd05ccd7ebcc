"""ImageForgeRuntime: BlendJob's JobRuntime (operators, status bar, poll timer, setup and migration) with
ImageForge's own controller as its `server` and ImageForge's launcher as the server command.

BlendJob's runtime takes no controller or command factory, so this subclass sets `server` after BlendJob's
constructor and overrides only public methods: `server_controller` (the controller setup and migration use),
`setup_controller` and `migrate_controller` (refused into a folder others can write), and `operator_classes`
(Stop asks first when others use the server: a subclass of BlendJob's Stop Server operator with an `invoke`),
and `install_command` (the add-on's installer, client/setup_process.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import blendjob
from blendjob import JobRuntime
from blendjob.environment import environment_digest, environment_python, normalized_environment
from blendjob.runtime import windows_creation_flags

from ..contract.server_clients import linger_seconds
from ..contract.storage_trust import check_server_files, check_storage_root
from .blendjob_compat import run_before_install
from .controller import ImageForgeServerController
from .server_lease import stop_confirmation
from .server_runtimes import environment_for

LAUNCHER = Path(__file__).resolve().parents[1] / "server" / "launcher.py"
BLENDJOB_ROOT = Path(blendjob.__file__).resolve().parents[1]


class ImageForgeRuntime(JobRuntime):  # type: ignore[misc]  # BlendJob ships no types
    """BlendJob's runtime with ImageForge's controller, for its own server and for setup and migration."""

    def __init__(
        self,
        *args: Any,
        linger: Callable[[], float | None] | None = None,
        installer: Callable[..., list[str]] | None = None,
        before_install: Callable[[Path], object] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.linger = linger or (lambda: None)  # the add-on's preference; None: $IMAGEFORGE_SERVER_LINGER or 20 s
        self.installer = installer  # (source, root=) -> the Set Up Server command; None: BlendJob's installer
        self.before_install = before_install  # called with setup's target folder just before an install
        self.imageforge_operators: tuple[type, ...] | None = None

        def command(port: int, instance_id: str, listen_fd: int | None = None) -> list[str]:
            return self.server_command(port, instance_id, listen_fd=listen_fd)

        self.server: ImageForgeServerController = ImageForgeServerController(
            command,
            cwd_factory=self.storage_root,
            log_path_factory=lambda: self.storage_root() / "server.log",
            creationflags=windows_creation_flags(),
            blocked=self.maintenance_busy,
        )

    @property
    def environment(self) -> dict[str, Any]:
        """The pins of the ONNX Runtime build recorded in the storage root (client/server_runtimes.py), read at
        each use: `imageforge setup --runtime openvino` may change them while Blender runs."""
        pins: dict[str, Any] = normalized_environment(environment_for(self.storage_root()))
        return pins

    @environment.setter
    def environment(self, _pins: Any) -> None:
        """BlendJob's constructor assigns the platform's pins; the storage root's record decides instead."""

    @property
    def environment_hash(self) -> str:
        digest: str = environment_digest(self.environment)
        return digest

    @environment_hash.setter
    def environment_hash(self, _digest: str) -> None:
        """Derived from `environment`, as above."""

    def operator_classes(self) -> tuple[type, ...]:
        """BlendJob's operators; Stop asks first when other Blender instances or commands use the server."""
        if self.imageforge_operators is None:
            stop_id = f"{self.namespace}.stop_server"
            self.imageforge_operators = tuple(
                confirming_stop(operator, self) if operator.bl_idname == stop_id else operator
                for operator in super().operator_classes()
            )
        return self.imageforge_operators

    def setup_controller(self, target: Any = None, **options: Any) -> Any:
        """BlendJob's setup, refused before it validates (runs) an environment or installs into a folder that
        another user owns or can write (openspec/0024)."""
        check_server_files(self.storage_root() if target is None else Path(target).expanduser())
        controller = super().setup_controller(target, **options)
        before = self.before_install
        if before is not None:
            # Only when installing: a cancelled setup must not leave an unrecognised folder behind.

            def seed() -> None:
                before(controller.target)

            run_before_install(controller, seed)
        return controller

    def install_command(self, source: str = "official", *, root: Path | None = None) -> list[str]:
        """The command Set Up Server runs: the add-on's installer when it gave one, else BlendJob's."""
        if self.installer is None:
            return list(super().install_command(source, root=root))
        return self.installer(source, root=self.storage_root() if root is None else root)

    def migrate_controller(self, target: Any) -> Any:
        """BlendJob's migration, refused into a folder that another user owns or can write."""
        if str(target).strip():
            check_storage_root(Path(target).expanduser())
        return super().migrate_controller(target)

    def server_controller(self, root: Path) -> ImageForgeServerController:
        """The controller BlendJob's setup and migration use for a folder they already hold locked."""

        def command(port: int, instance_id: str, listen_fd: int | None = None) -> list[str]:
            return self.server_command(port, instance_id, root=root, listen_fd=listen_fd, hold_lock=False)

        return ImageForgeServerController(
            command,
            writer=True,
            cwd_factory=lambda: root,
            log_path_factory=lambda: root / "server.log",
            creationflags=windows_creation_flags(),
        )

    def server_command(
        self,
        port: int,
        instance_id: str,
        *,
        root: Path | None = None,
        listen_fd: int | None = None,
        hold_lock: bool = True,
    ) -> list[str]:
        """ImageForge's launcher (server/launcher.py) instead of BlendJob's runner: it serves the passed socket."""
        root = self.storage_root() if root is None else Path(root)
        listen = ["--listen-fd", str(listen_fd)] if listen_fd is not None else ["--port", str(port)]
        return [
            str(environment_python(root)),
            "-u",
            str(LAUNCHER),
            "--blendjob-root",
            str(BLENDJOB_ROOT),
            "--storage-root",
            str(root),
            "--instance-id",
            instance_id,
            *listen,
            "--linger",
            str(linger_seconds(self.linger())),
            *(["--hold-storage-lock"] if hold_lock else []),
        ]


def confirming_stop(stop: type, runtime: ImageForgeRuntime) -> type:
    """BlendJob's Stop Server operator (same bl_idname, same execute) that asks before stopping the server of
    other clients too."""

    def invoke(self: Any, context: Any, event: Any) -> set[str]:
        message = stop_confirmation(runtime.server.other_clients())
        if message is None:
            executed: set[str] = self.execute(context)
            return executed
        confirmed: set[str] = context.window_manager.invoke_confirm(
            self, event, title="Stop the Job Server?", message=message, confirm_text="Stop"
        )
        return confirmed

    return type(stop.__name__, (stop,), {"invoke": invoke, "__doc__": stop.__doc__, "__module__": stop.__module__})
