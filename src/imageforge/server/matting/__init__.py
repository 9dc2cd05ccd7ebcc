"""What is done with a matte once a model has made it: the object's own colour where it is see-through
(`foreground.py`, multi-level foreground estimation). Uses NumPy only; never imports jobs/ or job_steps/."""

from .foreground import ForegroundEstimate, estimate_foreground

__all__ = ["ForegroundEstimate", "estimate_foreground"]
