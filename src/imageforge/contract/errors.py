"""The error hierarchy. Only the operator or CLI boundary turns these into reports or exit codes.

Every message is one sentence a Blender artist can act on; details go to the job log.
"""


class ImageForgeError(Exception):
    """Base of every error ImageForge raises on purpose."""


class InputError(ImageForgeError):
    """The request or its input is wrong: a bad file, parameter or selection. Shown as a warning."""


class ResultError(ImageForgeError):
    """A job's result cannot be used as it is (files missing or inconsistent with the request): a failure of
    the job, not of the user's input. Shown as an error; nothing is changed."""


class ModelUnavailableError(ImageForgeError):
    """A model is unknown, not downloaded, or could not be fetched."""


class ResourceExhaustedError(ImageForgeError):
    """Memory, disk or a configured budget ran out; the message says what to lower."""
