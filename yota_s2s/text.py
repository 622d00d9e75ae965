"""The one place where a user's names and values become text: generated modules, the tape
printer, the review page, the compile cache's guards.

Nothing a user chose (a value, a parameter name, a dict key, a file name, a ``__qualname__``)
reaches generated code except through this module, in one of four forms:

- an **identifier** that passed a strict check (``identifier``), compared with other names in
  its NFKC normal form, the form Python itself uses (``µ`` and ``μ``, ``H`` and ``ℌ`` are one
  variable to Python; see ``normal``); ``name_base`` turns any text into such a name;
- a **literal** the compiler built itself from a value of an exact built-in type
  (``literal``, ``literal_text``): ``int``, ``float``, ``complex``, ``bool``, ``str``,
  ``bytes``, ``None``, ``...``, ``slice``, tuples and lists of those, numpy dtypes by name,
  numpy scalars and arrays of numbers. Values of a subclass of ``int``, ``float`` or ``str``
  (an ``IntEnum``, a ``StrEnum``, an ``int`` with its own ``__repr__``) are written as the
  plain value numpy computes with (``int.__int__``), never through their ``repr``; anything
  else is a ``StaticValueError``;
- an **access** to an argument's field (``m.layers[0].W``, ``d['class']``), built from such
  identifiers and literals (``access_attr``, ``access_item``) and read back only after
  checking its shape (``access_expr``);
- **comment** and **docstring** text, escaped so that it can never end the comment or the
  docstring early (``comment``, ``docstring_line``); ``html`` for the review page.
"""
from __future__ import annotations

import ast
import keyword
import math
from typing import Any

import numpy as np

from .errors import InternalError, StaticValueError

# -- identifiers -----------------------------------------------------------------------------


def normal(name: str) -> str:
    """The name as Python sees it: identifiers are NFKC-normalized when parsed (PEP 3131), so
    two names are the same variable when their normal forms are equal."""
    if name.isascii():          # (NFKC leaves ASCII as it is; unicodedata loads on first need)
        return name
    import unicodedata
    return unicodedata.normalize("NFKC", name)


def is_identifier(name: Any) -> bool:
    """``name`` can be written as a Python variable as it is: an identifier, in its normal
    form, and not a keyword (``class``; ``ｉｆ`` normalizes to ``if``)."""
    return isinstance(name, str) and type(name) is str and name.isidentifier() \
        and name == normal(name) and not keyword.iskeyword(name)


def identifier(name: Any) -> str:
    """``name`` itself, after the strict check; an ``InternalError`` when it fails (callers
    make names with ``name_base``, so a failure is a compiler bug)."""
    if not is_identifier(name):
        raise InternalError(f"{safe_repr(name)} is not a checked identifier")
    return name


def name_base(text: str, empty: str = "v") -> str:
    """A readable identifier made from any text: its normal form, other characters replaced
    by ``_`` (``x²`` -> ``x2``, ``a-b`` -> ``a_b``), a keyword gets a ``_`` (``class_``)."""
    text = normal(str.__str__(text)) if isinstance(text, str) else str(text)
    if is_identifier(text):
        return text
    parts = "".join(c if ("a" + c).isidentifier() else "_" for c in text).split("_")
    name = "_".join(p for p in parts if p)
    name = normal(("_" if text.startswith("_") else "") + name) if name else empty
    if not name.isidentifier():               # it starts with a digit
        name = f"{empty}_{name}"
    if keyword.iskeyword(name):
        name += "_"
    return name if is_identifier(name) else empty


def dotted(path: str) -> ast.expr:
    """``a.b.c`` as an expression, each part checked (module paths, qualified names)."""
    parts = path.split(".")
    for part in parts:
        identifier(part)
    node: ast.expr = ast.Name(parts[0], ast.Load())
    for part in parts[1:]:
        node = ast.Attribute(node, part, ast.Load())
    return node


# -- literals --------------------------------------------------------------------------------

_EXACT = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis))


def plain_value(value: Any) -> Any:
    """``value`` as an exact built-in value: a subclass of ``int``, ``float`` or ``str`` (an
    ``IntEnum``, a ``StrEnum``) becomes the plain value it holds, read without calling any
    method the subclass defines; containers are rebuilt from plain items. A
    ``StaticValueError`` for anything that has no such value."""
    if type(value) in _EXACT:
        return value
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (tuple, list)):          # a namedtuple as a plain tuple
        kind = tuple if isinstance(value, tuple) else list
        return kind(plain_value(v) for v in kind.__iter__(value))
    if type(value) is slice:
        return slice(*(plain_value(v) for v in (value.start, value.stop, value.step)))
    raise StaticValueError(
        f"the static value {_named(value)} cannot be written into the generated code",
        hint="Static values (shapes, flags, modes) must be int, float, bool, str, None or tuples "
             "of those; pass the plain value (int(n), str(mode)) or make it an array.")


def fraction(value: Any) -> ast.expr | None:
    """``-1 / 64`` for the float -0.015625 (``3 / 64``, ``1 / 3``): a constant the compiler
    computed from a count, written so that the count shows, where the fraction is exactly the
    float and shorter than its decimal; None otherwise (``0.25``, ``0.1``, integers)."""
    if type(value) is not float or not math.isfinite(value) or value == int(value):
        return None
    from fractions import Fraction      # (on first use: not at ``import yota_s2s``)
    ratio = Fraction(value).limit_denominator(1 << 20)
    k, n = ratio.numerator, ratio.denominator
    if k / n != value or len(f"{k} / {n}") >= len(repr(value)):
        return None
    top: ast.expr = ast.Constant(abs(k))
    if k < 0:
        top = ast.UnaryOp(ast.USub(), top)
    return ast.BinOp(top, ast.Div(), ast.Constant(n))


def literal(value: Any) -> ast.expr:
    """An expression that evaluates to ``value``, exact for its type (``xp.float32(0.5)``,
    ``-xp.inf``), built by the compiler; see ``plain_value`` for what is refused."""
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return _dtype(np.dtype(value))
    if isinstance(value, np.generic):
        item = value.item()
        if type(item) is type(value):   # longdouble: no Python number holds it; its
            # shortest decimal text reads back exactly (``xp.float128('0.1')``)
            if value.dtype.kind == "c":     # clongdouble's text reads back as a complex128
                return _extended_complex(value)
            return ast.Call(_dtype(value.dtype), [ast.Constant(str(value))], [])
        return ast.Call(_dtype(value.dtype), [literal(item)], [])
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            raise StaticValueError(f"an array of {printable(str(value.dtype))} cannot be written "
                                   "into the generated code", hint="Use an array of numbers.")
        dtype = ast.keyword("dtype", _dtype(value.dtype))
        if value.size == 0:                 # tolist() loses the shape
            return ast.Call(dotted("xp.empty"), [literal(value.shape)], [dtype])
        extended = type(value.flat[0].item()) is value.dtype.type     # longdouble
        items = _elements(value.tolist()) if extended else literal(value.tolist())
        return ast.Call(dotted("xp.asarray"), [items], [dtype])
    value = plain_value(value)
    if isinstance(value, tuple):
        return ast.Tuple([literal(v) for v in value], ast.Load())
    if isinstance(value, list):
        return ast.List([literal(v) for v in value], ast.Load())
    if isinstance(value, slice):
        return ast.Call(ast.Name("slice", ast.Load()),
                        [literal(v) for v in (value.start, value.stop, value.step)], [])
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return dotted("xp.nan")
        return ast.UnaryOp(ast.USub(), dotted("xp.inf")) if value < 0 else dotted("xp.inf")
    if isinstance(value, complex):
        return ast.Call(ast.Name("complex", ast.Load()),
                        [literal(value.real), literal(value.imag)], [])
    if isinstance(value, (int, float)) and not isinstance(value, bool) and \
            (value < 0 or math.copysign(1, value) < 0):
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def _extended_complex(value: np.complexfloating) -> ast.expr:
    """A clongdouble, exact: ``xp.complex256(xp.float128('2.5'))`` from its real part, plus
    ``xp.complex256(xp.float128('-0.1')) * 1j`` where its imaginary part is not 0 (finite: the
    product with ``1j`` would turn an infinite one into nan + inf j)."""
    real = ast.Call(_dtype(value.dtype), [literal(value.real)], [])
    if value.imag == 0 and not np.signbit(value.imag):
        return real
    if not np.isfinite(value.imag):
        raise StaticValueError(f"a {printable(value.dtype.name)} number with an infinite or nan "
                               "imaginary part cannot be written exactly into the generated "
                               "code", hint="Use complex128 (np.complex128(z)).")
    imag = ast.Call(_dtype(value.dtype), [literal(value.imag)], [])
    return ast.BinOp(real, ast.Add(), ast.BinOp(imag, ast.Mult(), ast.Constant(1j)))


def index_literal(value: np.ndarray) -> ast.expr:
    """An integer or bool index array inside ``x[...]`` (or ``xp.add.at``'s key), as Python
    writes it: the list ``[0, 2]``, which numpy reads back as the same index. An empty one is
    ``literal``'s ``xp.empty((0, 1), dtype=xp.int64)``: its list (``[]``, ``[[], []]``) would
    lose the shape (``[]`` for ``(0, 1)``) and a bool array's dtype (numpy reads an empty list
    as integers)."""
    if value.dtype.kind not in "biu":
        raise InternalError(f"an index array of {printable(str(value.dtype))}")
    return literal(value) if value.size == 0 else literal(value.tolist())


def _elements(items: Any) -> ast.expr:
    """A nested list of numpy scalars (an array's ``tolist()`` where no Python number holds
    them: longdouble) as list displays of their literals."""
    if isinstance(items, list):
        return ast.List([_elements(i) for i in items], ast.Load())
    return literal(items)


def _dtype(dtype: np.dtype) -> ast.expr:
    name = dtype.name
    if not is_identifier(name) or not isinstance(getattr(np, name, None), type):
        raise StaticValueError(f"the dtype {printable(str(dtype))} cannot be written into the "
                               "generated code", hint="Use a numeric dtype such as float64.")
    return dotted(f"xp.{name}")


def literal_text(value: Any) -> str:
    """``literal(value)`` as source text (``'a'``, ``(3, 4)``, ``-1.5``)."""
    return ast.unparse(literal(value))


def describe(value: Any) -> str:
    """A static value for people (a header, an error, the tape printer): Python's ``repr`` of
    its plain value (``2 (Color)`` for an ``IntEnum``), a numpy value as its literal, else the
    name of the function or class, else ``<type>``; never the value's own ``repr``, which is
    the user's code."""
    if isinstance(value, (np.generic, np.ndarray, np.dtype)) or \
            (isinstance(value, type) and issubclass(value, np.generic)):
        try:
            return literal_text(value)
        except StaticValueError:
            return _named(value)
    try:
        plain = plain_value(value)
    except StaticValueError:
        return _named(value)
    text = repr(plain)          # built-in types only, all the way down
    if type(value) is not type(plain):
        text = f"{text} ({_type_name(value)})"
    return text


def _named(value: Any) -> str:
    """A function or class by its name, anything else as ``<type>``."""
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if isinstance(name, str):
        return printable(str.__str__(name))
    return f"<{_type_name(value)}>"


def _type_name(value: Any) -> str:
    name = getattr(type(value), "__qualname__", None)
    return printable(str.__str__(name)) if isinstance(name, str) else "?"


def safe_repr(value: Any) -> str:
    """``repr`` for messages about names, without running a subclass's ``__repr__``."""
    if isinstance(value, str):
        return repr(str.__str__(value))
    return f"<{_type_name(value)}>"


# -- accesses: argument fields ---------------------------------------------------------------

def access_attr(base: str, name: str) -> str:
    """``base.name``, or ``getattr(base, 'name')`` where the name is no identifier."""
    if is_identifier(name):
        return f"{base}.{name}"
    return f"getattr({base}, {literal_text(name)})"


def access_item(base: str, key: Any) -> str:
    """``base[key]`` with the key as a literal (a ``StrEnum`` key as its plain ``str``)."""
    return f"{base}[{literal_text(key)}]"


_ACCESS_CALLS = {"len": 1, "tuple": 1, "getattr": 2, "type": 1}


def access_expr(access: str, root: dict[str, str] | None = None) -> ast.expr:
    """An access (``m.layers[0].W``, ``len(m.layers)``, ``tuple(d)``) as an expression, after
    checking it is one: names, attributes, subscripts by literals, and ``len``/``tuple``/
    ``getattr``/``type`` of those. ``root`` renames the argument it starts from (a parameter
    renamed in the generated function)."""
    try:
        node = ast.parse(access, mode="eval").body
    except SyntaxError:
        raise InternalError(f"the access {safe_repr(access)} is not an expression") from None

    def check(n: ast.AST) -> ast.expr:
        if isinstance(n, ast.Name) and is_identifier(n.id):
            return ast.Name((root or {}).get(n.id, n.id), ast.Load())
        if isinstance(n, ast.Attribute) and is_identifier(n.attr):
            return ast.Attribute(check(n.value), n.attr, ast.Load())
        if isinstance(n, ast.Subscript):
            return ast.Subscript(check(n.value), _constant(n.slice), ast.Load())
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.keywords \
                and _ACCESS_CALLS.get(n.func.id) == len(n.args):
            args = [check(n.args[0])] + [_constant(a) for a in n.args[1:]]
            return ast.Call(ast.Name(n.func.id, ast.Load()), args, [])
        raise InternalError(f"the access {safe_repr(access)} is not a plain field access")
    return check(node)


def _constant(n: ast.AST) -> ast.expr:
    """A literal key read back from an access: rebuilt from its value."""
    try:
        value = ast.literal_eval(n)
    except ValueError:
        raise InternalError("an access holds a key that is not a literal") from None
    return literal(value)


# -- comments, docstrings, HTML --------------------------------------------------------------

def printable(text: str) -> str:
    """``text`` with every character that could end a line or hide text (control characters,
    line and paragraph separators, other format characters) written as an escape."""
    text = str.__str__(text) if isinstance(text, str) else str(text)
    if text.isascii() and text.isprintable():       # the usual case: nothing to escape
        return text
    import unicodedata
    out = []
    for c in text:
        if unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp"):
            code = ord(c)
            out.append(f"\\x{code:02x}" if code < 0x100 else
                       f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(c)
    return "".join(out)


def comment(text: str) -> str:
    """``# text`` on one line, whatever ``text`` holds (a file name with a newline)."""
    return "# " + printable(text) if text else "#"


def docstring_line(text: str) -> str:
    """One line of a docstring: backslashes and quotes escaped, so that no value (a string
    holding ``\"\"\"``, a backslash at its end) can close the docstring; control characters
    escaped so the line stays one line. Read back (``__doc__``), it is ``printable(text)``."""
    return printable(text).replace("\\", "\\\\").replace('"', '\\"')


def html(text: str) -> str:
    """``text`` for an HTML page: markup characters and quotes escaped."""
    import html as _html
    return _html.escape(text, quote=True)
