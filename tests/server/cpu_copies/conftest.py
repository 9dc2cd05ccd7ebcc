"""The copy tests load sessions through the real ModelManager: they share inference's model fixtures."""

from tests.server.inference.conftest import ben2_fp16, fake_runtime  # noqa: F401  (fixtures)
