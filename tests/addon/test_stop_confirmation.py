"""Stop stops the shared job server for everyone, so in Blender it asks first when another client is attached."""

from __future__ import annotations

from types import SimpleNamespace


class RecordingWindowManager:
    def __init__(self) -> None:
        self.confirmations: list[dict] = []

    def invoke_confirm(self, _operator, _event, **options) -> set[str]:
        self.confirmations.append(options)
        return {"RUNNING_MODAL"}


def stop_invoke(active):
    (stop,) = [cls for cls in active.operator_classes() if cls.bl_idname == "imageforge.stop_server"]
    return stop.invoke


def test_stop_asks_first_when_another_client_is_attached_and_not_otherwise(job_server):
    from imageforge.addon import blender_runtime
    from imageforge.contract.health import ClientLease

    invoke = stop_invoke(blender_runtime.get_runtime())
    executed: list[bool] = []
    operator = SimpleNamespace(execute=lambda _context: executed.append(True) or {"FINISHED"})
    window_manager = RecordingWindowManager()
    context = SimpleNamespace(window_manager=window_manager)

    job_server.other_clients = lambda: [ClientLease("a" * 32, 77, "cli", 3.0)]
    assert invoke(operator, context, None) == {"RUNNING_MODAL"}
    assert executed == []
    assert window_manager.confirmations == [
        {
            "title": "Stop the Job Server?",
            "message": (
                "The server is also used by the imageforge command (pid 77); stopping it cancels their jobs too."
            ),
            "confirm_text": "Stop",
        }
    ]

    job_server.other_clients = lambda: []
    assert invoke(operator, context, None) == {"FINISHED"} and executed == [True]
