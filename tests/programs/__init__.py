"""Whole programs used by the gradient checks and the stage tests (they need real source files)."""
