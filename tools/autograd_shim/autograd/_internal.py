"""Stand-ins for autograd's internals (its VSpace, boxes, primitive machinery, tracer).

A test that touches one is out of scope for the comparison: it tests autograd's own
machinery, which has no counterpart to map to. Using a stand-in raises ``OutOfScope``,
which tools/autograd_suite.py counts apart from the outcomes in scope.
"""


class OutOfScope(Exception):
    """The test exercises an autograd internal."""


class Missing(Exception):
    """An autograd entry point with no yota_s2s counterpart yet (counted as refused)."""


class Internal:
    """An internal of autograd: importable, but any use raises ``OutOfScope``."""

    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise OutOfScope(f"autograd internal: {self._name}")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise OutOfScope(f"autograd internal: {self._name}.{attr}")


def internals(module_globals, *names):
    for name in names:
        module_globals[name] = Internal(name)
