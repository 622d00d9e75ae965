"""What ``ys.grad`` returns: ``GradResult``, the gradients of one call, and ``Gradients``, a
structured argument's gradients keyed by field path."""
from __future__ import annotations

from typing import Any, Callable, Iterator

from .cache import Variant
from .ir.tape import Tape


class GradResult:
    """The gradients of one ``grad`` call: ``g[i]`` for argument ``i`` (None where there is
    none), ``g.self`` for a bound method's object; ``g.source``, ``g.tape``, ``g.function``
    show the generated code behind them."""

    __slots__ = ("_grads", "_variant", "_offset")

    def __init__(self, grads: tuple, variant: Variant, offset: int = 0):
        self._grads, self._variant, self._offset = grads, variant, offset

    def _wrapped(self) -> tuple:
        """The gradients, a struct's dict as ``Gradients`` (made on first access, once)."""
        grads = self._grads
        if dict in map(type, grads):
            grads = self._grads = tuple(Gradients(g) if type(g) is dict else g for g in grads)
        return grads

    def __getitem__(self, i: int | str) -> Any:
        if isinstance(i, str):              # a parameter's name
            params = self._variant.compiled.forward.params
            if i not in params[self._offset:]:
                raise KeyError(f"{i!r}: {self._variant.compiled.forward.name}'s parameters "
                               f"are {', '.join(params[self._offset:])}")
            return self._wrapped()[params.index(i)]
        return self._wrapped()[self._offset:][i]

    def __len__(self) -> int:
        return len(self._grads) - self._offset

    def __iter__(self) -> Iterator[Any]:
        return iter(self._wrapped()[self._offset:])

    @property
    def self(self) -> Any:
        if not self._offset:
            raise AttributeError("g.self exists for bound methods only (ys.grad(model.loss, ...))")
        return self._wrapped()[0]

    @property
    def source(self) -> str:
        return self._variant.compiled.text

    @property
    def tape(self) -> Tape:
        return self._variant.compiled.tape

    @property
    def function(self) -> Callable:
        return self._variant.fn

    def __repr__(self) -> str:
        params = self._variant.compiled.forward.params
        lines = [f"  {name}: {_describe(g)}" for name, g in zip(params, self._grads)]
        return f"<GradResult of {self._variant.compiled.forward.name}\n" + "\n".join(lines) + ">"


class Gradients(dict):
    """The gradients of a structured argument, ``{path: gradient}`` (a path is the tuple of
    keys, indices and attribute names that leads to the field: ``("W",)``,
    ``("layers", 0, "b")``). A key that is not a tuple finds its path: ``g[0]["W"]`` is
    ``g[0][("W",)]``, and ``g[0]["layers"]`` is the gradients under ``layers``, keyed by the
    rest of their paths (``g[0]["layers"][0]["b"]``). A key that leads nowhere names the
    paths there are."""

    __slots__ = ()

    def __missing__(self, key: Any) -> Any:
        if not isinstance(key, tuple):
            if (key,) in self:
                return self[(key,)]
            under = {path[1:]: g for path, g in self.items() if path[:1] == (key,)}
            if under:
                return Gradients(under)
        paths = ", ".join(map(repr, self)) or "none"
        raise GradientKeyError(f"{key!r}: no gradient has this path; the paths are {paths}")

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


class GradientKeyError(KeyError):
    """A key of ``Gradients`` that is no path (its message printed plainly, not quoted)."""

    def __str__(self) -> str:
        return str(self.args[0])


def _describe(g: Any) -> str:
    if isinstance(g, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in g.items()) + "}"
    if hasattr(g, "shape") and hasattr(g, "dtype"):
        return f"{g.dtype}[{', '.join(map(str, g.shape))}]"
    return repr(g)
