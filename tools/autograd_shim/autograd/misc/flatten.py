from . import flatten  # noqa: F401
