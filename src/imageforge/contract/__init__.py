"""The job contract shared by the add-on, the CLI and the server.

Standard library only: Blender's Python and the server's Python both import it. A test enforces that.
"""

from .devices import Device
from .errors import (
    ImageForgeError,
    InputError,
    ModelUnavailableError,
    ResourceExhaustedError,
    ResultError,
)
from .jobs import JOB_SPECS, JobId, JobSpec, job_spec
from .parameters import parse_parameters

__all__ = [
    "JOB_SPECS",
    "Device",
    "ImageForgeError",
    "InputError",
    "JobId",
    "JobSpec",
    "ModelUnavailableError",
    "ResourceExhaustedError",
    "ResultError",
    "job_spec",
    "parse_parameters",
]
