"""Class instances while evaluating: fields, methods, ``__call__``, construction.

A ``StructValue`` stands for an instance of a user class (plain, dataclass, slots):

- from the arguments (``obj`` is the real object): a field is flattened the first time the code
  reads it (``m.W`` becomes an input with path ``("W",)``), then cached, so two reads give the
  same Var;
- built by the traced code (``State(h, c)``, ``Linear(W, b)``; ``obj`` is None): its fields are
  the values the constructor assigned. One built from static values alone (``Dense(3, (2,))``)
  is made by its constructor, run then (``made``), and its fields are read from it when the
  code first reads them; the code may assign its fields (``layer.W = W``), as any struct's
  it built.

What is not a field is looked up on the class, as Python would: a method binds the struct as
``self`` and is inlined (``m.forward(X)``, ``self.layers[i](h)`` through ``__call__``,
``seq[i]`` through ``__getitem__``), a property runs its getter, static and class methods
unwrap; an array, list or dict on a class reachable by name is read where it is
(``class_data``), other class attributes are static. Each class attribute read is recorded in
``ev.depends`` so that patching the class invalidates compiled code.

Assigning a field of an argument (``self.layer_input = X`` in a layer's forward) is an effect
of the generated code: it stores the field's last value into the caller's object at the end
of its forward (``Evaluator.store_field``), as calling the function does; a field of an object
from outside (a global's) is not assigned. Namedtuples need none of this: they are rebuilt as real
namedtuples of evaluator values by ``flatten.py``.
"""
from __future__ import annotations

import dataclasses
import sys
import types
from typing import Any

import gast

from ..errors import UnsupportedSyntax, YotaError
from ..ir.structure import LEAF, Structure
from ..ir.tape import Var
from ..ir.values import contains
from ..objects import MISSING as _MISSING_DEP
from ..objects import is_library
from ..text import access_attr
from .depends import library_class, module_root

_MISSING = object()


class StructValue:
    """A class instance during evaluation; ``isinstance(v, cls)`` holds as for the instance."""

    __slots__ = ("cls", "obj", "argnum", "path", "access", "fields", "made")

    def __init__(self, cls: type, obj: Any = None, argnum: int | None = None, path: tuple = (),
                 access: str = ""):
        self.cls, self.obj, self.argnum, self.path, self.access = cls, obj, argnum, path, access
        self.fields: dict[str, Any] = {}
        self.made: Any = None       # built from static values: the object its constructor made

    @property
    def __class__(self) -> type:        # isinstance(m, Linear) and m.__class__ as in Python
        return self.cls

    def __repr__(self) -> str:
        return f"<{self.cls.__name__} {self.access or 'built while tracing'}>"


def static_lookup(cls: type, name: str) -> tuple[type | None, Any]:
    """``(owner, raw attribute)`` from the class's MRO, without running descriptors."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass, klass.__dict__[name]
    return None, _MISSING


def attribute_access(access: str, name: str) -> str:
    return access_attr(access, name)


def get_attribute(ev: Any, sv: StructValue, name: str, node: gast.AST) -> Any:
    """``sv.name``: a field (flattened on first read) or a class attribute."""
    if name in sv.fields:
        return sv.fields[name]
    if sv.made is not None and name in vars(sv.made):
        # a field the constructor set, read first now: data as on an object the code
        # cannot reach (compiled in, guarded by value), anything else as it is
        value = ev.outside.field_of(sv.made, name, node)
        sv.fields[name] = value
        return value
    if sv.obj is not None and sv.argnum is None and _instance_has(sv.obj, name):
        root, path = sv.path         # an object read from a global or a closure: outside.py
        value = ev.outside.wrap(getattr(sv.obj, name), (root, path + (("attr", name),)),
                                  node, name, field=True)
        sv.fields[name] = value
        return value
    if sv.obj is not None and _instance_has(sv.obj, name):
        if name in getattr(sv.obj, "__dict__", ()) and static_lookup(sv.cls, name)[0] is not None:
            # an own attribute over the class's: deleted later, the class's would be read
            ev.flattener.present.append((sv.access, name))
        value = ev.flattener.flatten(getattr(sv.obj, name), sv.argnum, sv.path + (name,),
                                     attribute_access(sv.access, name), attribute=True)
        sv.fields[name] = value
        return value
    return class_attribute(ev, sv, name, node)


def class_attribute(ev: Any, sv: StructValue | Any, name: str, node: gast.AST) -> Any:
    cls = sv.cls if isinstance(sv, StructValue) else type(sv)
    owner, attr = static_lookup(cls, name)
    if owner is None and isinstance(sv, StructValue) and name != "__getattr__" \
            and static_lookup(cls, "__getattr__")[0] is not None:
        # found by the class's __getattr__ (m.w read from m.params["w"]), as Python does
        return ev.call(class_attribute(ev, sv, "__getattr__", node), [name], {}, node)
    if owner is None:
        raise YotaError(f"{cls.__name__!r} object has no attribute {name!r}", ev.loc(node))
    ev.depends.class_attribute(cls, name)      # each class of the MRO up to the owner
    if isinstance(sv, StructValue) and sv.obj is not None and not _is_method(attr):
        # data found on the class: an attribute set on the object later would shadow it
        if sv.argnum is not None and isinstance(getattr(sv.obj, "__dict__", None), dict):
            ev.flattener.absent.append((sv.access, name))   # (slots: nothing can shadow it)
        elif isinstance(getattr(sv.obj, "__dict__", None), dict):
            ev.depends.read(sv.obj.__dict__, name, _MISSING_DEP, kind="attribute",
                            shown=f"{sv.access}.{name} (absent from the object)")
    if isinstance(attr, (types.FunctionType, staticmethod, classmethod)):
        method_found(ev, owner, name, getattr(attr, "__func__", attr), sv)
    if isinstance(attr, staticmethod):
        return attr.__func__
    if isinstance(attr, classmethod):
        return types.MethodType(attr.__func__, cls)
    if isinstance(attr, property):
        if attr.fget is None:
            raise YotaError(f"property {cls.__name__}.{name} has no getter", ev.loc(node))
        return ev.call(attr.fget, [sv], {}, node)
    if isinstance(attr, types.FunctionType):
        return types.MethodType(attr, sv)
    if hasattr(type(attr), "__get__"):
        raise UnsupportedSyntax(f"{cls.__name__}.{name} is a {type(attr).__name__}, a descriptor "
                                "the compiler cannot run", ev.loc(node),
                                "Use a plain method or a property.")
    return class_data(ev, owner, name, attr, node, sv)


def class_data(ev: Any, owner: type, name: str, attr: Any, node: gast.AST,
               through: Any = None) -> Any:
    """Data on a class: a number is static (the class attribute is guarded by identity); an
    array, list or dict can change in place, so it is read where it is, like a global's (a
    list's floats at run time, its length and ints checked), from the first place the code
    can reach: the class by its name from its module (``model.Model.W``), the global or
    closure cell the source read the class from (a class made by a factory), or else the
    place of ``through``, the class or object the source read the attribute from, where it
    finds it too (``model.net.__class__.W`` for an object read from a global). Data on a
    class the code reaches nowhere (one defined inside a function, met only as an argument's
    class) is compiled in and guarded by value, compared with a copy at each call
    (``OutsideReads.unreached``)."""
    if library_class(owner) or isinstance(attr, type):
        return attr
    if callable(attr):
        if isinstance(attr, types.FunctionType):        # Model.loss, called as a function
            method_found(ev, owner, name, attr, through)
        return attr
    where = _data_place(ev, owner, through)
    if where is None:
        return ev.outside.unreached(attr, node, f"{owner.__qualname__}.{name}",
                                    ev.outside.ON_A_CLASS)
    root, path = where          # (no variable name: shown by its path, Table.W not "W")
    return ev.outside.wrap(attr, (root, path + (("attr", name),)), node)


def method_found(ev: Any, owner: type, name: str, func: Any, through: Any) -> None:
    """A function found on a class (a method, a static or class method): where the code can
    reach the class, the function is remembered there (``model.Model.loss``), so that its
    defaults and closure are read where they are when the code runs, as a global function's
    are (``model.Model.loss.__defaults__[0]``); elsewhere they are guarded by value."""
    where = None if library_class(owner) else _data_place(ev, owner, through)
    if where is not None and isinstance(func, types.FunctionType):
        ev.outside.function_found(func, (where[0], where[1] + (("attr", name),)))


def _data_place(ev: Any, owner: type, through: Any) -> tuple | None:
    """Where the code reaches ``owner``'s attributes: the class's own place, else through the
    class or object the source read the attribute from (``class_data``)."""
    where = _class_place(ev, owner)
    if where is None and through is not None:
        where = _class_place(ev, through) if isinstance(through, type) else \
            instance_class_place(ev, through)
    return where


def _class_place(ev: Any, cls: type) -> tuple | None:
    """Where the generated code reaches ``cls``: by its name from its module, or where the
    source read it (a global, a closure cell); None if nowhere."""
    module = sys.modules.get(cls.__module__)
    root = module_root(module.__dict__) if module is not None else None
    parts = cls.__qualname__.split(".")
    found = module
    for part in parts:
        found = getattr(found, part, None)
    if root is not None and found is cls:
        return root, tuple(("attr", part) for part in parts)
    return ev.outside.where_class(cls)


def instance_class_place(ev: Any, sv: Any) -> tuple | None:
    """Where the code reaches the class of ``sv``: its own place (``_class_place``), else
    ``obj.__class__`` of an object read from a global or a closure (whose identity is
    guarded), for an object whose ``__class__`` is its type's."""
    if not isinstance(sv, StructValue):
        return None
    place = _class_place(ev, sv.cls)
    if place is not None or sv.obj is None or sv.argnum is not None or sv.path[0] is None:
        return place
    if static_lookup(sv.cls, "__class__")[0] is not object or type(sv.obj) is not sv.cls:
        return None
    root, path = sv.path
    return root, path + (("attr", "__class__"),)


def _is_method(attr: Any) -> bool:
    return isinstance(attr, (types.FunctionType, staticmethod, classmethod, property))


def built_from_statics(ev: Any, cls: type, args: list, kwargs: dict, node: gast.AST) -> Any:
    """``Dense(3, (2,))``: an instance the traced code builds from static values, its own to
    change (``layer.W = W``) as one built from traced values is. A dataclass is built field by
    field (``construct``); a plain class by its constructor, run now, whose instance
    attributes become the struct's fields, each read when the code first reads it. An
    instance of a class that customizes making or setting attributes (``__new__``,
    ``__setattr__``, ``__getattr__``, slots, a frozen dataclass, an exception) is made
    as it is, an object from outside."""
    if dataclasses.is_dataclass(cls) and cls.__dataclass_params__.init and \
            not cls.__dataclass_params__.frozen and _plain_attributes(cls):
        return construct(ev, cls, args, kwargs, node)
    obj = cls(*args, **kwargs)
    if type(obj) is not cls or not _plain_attributes(cls) or \
            type(getattr(obj, "__dict__", None)) is not dict:
        return obj
    sv = StructValue(cls)
    sv.made = obj
    return sv


def _plain_attributes(cls: type) -> bool:
    """Are ``cls``'s instances made by ``object.__new__`` and their attributes plain entries
    of their ``__dict__`` (no slots, no ``__setattr__``/``__getattr__`` of the class's)?"""
    if issubclass(cls, (tuple, BaseException)) or \
            any("__slots__" in k.__dict__ for k in cls.__mro__[:-1]):
        return False
    return all(static_lookup(cls, name)[0] in (object, None)
               for name in ("__new__", "__setattr__", "__getattr__", "__getattribute__",
                            "__delattr__"))


def set_attribute(ev: Any, sv: Any, name: str, value: Any, node: gast.AST) -> None:
    """``sv.name = value`` on an object the traced code built itself; on an argument, also an
    effect of the generated code, which stores the field into the caller's object
    (``Evaluator.store_field``). An object from outside (a global's, a closure's) is not
    changed."""
    if isinstance(sv, StructValue) and sv.obj is None:
        sv.fields[name] = value
        return
    if isinstance(sv, StructValue) and sv.argnum is not None:
        ev.store_field(sv, name, value, node)
        return
    what = sv.access if isinstance(sv, StructValue) else f"a {type(sv).__name__} object"
    raise UnsupportedSyntax(f"assigning {name!r} would change {what}, an object from outside "
                            "the function, in place", ev.loc(node),
                            "Pass the object in as an argument (the generated code then "
                            "stores the field into it, as the function does), or return the "
                            "new value.")


def call_object(ev: Any, obj: Any, args: list, kwargs: dict, node: gast.AST) -> Any:
    """``layer(h)``: the class's ``__call__`` with the object as ``self``."""
    cls = obj.cls if isinstance(obj, StructValue) else type(obj)
    if static_lookup(cls, "__call__")[0] is None:
        raise YotaError(f"{cls.__name__!r} object is not callable", ev.loc(node))
    return ev.call(class_attribute(ev, obj, "__call__", node), args, kwargs, node)


def call_dunder(ev: Any, sv: StructValue, name: str, args: list, node: gast.AST) -> Any:
    """``seq[i]``, ``len(seq)``: the class's ``__getitem__``/``__len__`` with ``self`` bound."""
    if static_lookup(sv.cls, name)[0] is None:
        raise YotaError(f"{sv.cls.__name__!r} object has no {name}", ev.loc(node))
    return ev.call(class_attribute(ev, sv, name, node), args, {}, node)


def is_user_class(fn: Any) -> bool:
    return isinstance(fn, type) and not is_library(fn) and fn.__module__ != "builtins"


def holds_struct(values: Any) -> bool:
    return contains(values, StructValue)


def construct(ev: Any, cls: type, args: list, kwargs: dict, node: gast.AST) -> Any:
    """``cls(*args)`` with traced arguments: a namedtuple directly, a dataclass field by field
    (then ``__post_init__``), a plain class by inlining its ``__init__`` on a new struct."""
    if issubclass(cls, tuple):
        return cls(*args, **kwargs)
    sv = StructValue(cls)
    if dataclasses.is_dataclass(cls) and cls.__dataclass_params__.init:
        _init_dataclass(ev, sv, args, kwargs, node)
        if static_lookup(cls, "__post_init__")[0] is not None:
            ev.call(class_attribute(ev, sv, "__post_init__", node), [], {}, node)
        return sv
    owner, init = static_lookup(cls, "__init__")
    if not isinstance(init, types.FunctionType) or is_library(init):
        raise ev.no_rule(cls, node, args, kwargs)
    ev.call(class_attribute(ev, sv, "__init__", node), args, kwargs, node)
    return sv


def _init_dataclass(ev: Any, sv: StructValue, args: list, kwargs: dict, node: gast.AST) -> None:
    fields = [f for f in dataclasses.fields(sv.cls) if f.init]
    if len(args) > len(fields):
        raise YotaError(f"{sv.cls.__name__}() takes {len(fields)} arguments, got {len(args)}",
                        ev.loc(node))
    given = dict(zip((f.name for f in fields), args))
    given.update(kwargs)
    for f in dataclasses.fields(sv.cls):
        if f.name in given:
            sv.fields[f.name] = given[f.name]
        elif f.default is not dataclasses.MISSING:
            sv.fields[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            sv.fields[f.name] = f.default_factory()
        elif f.init:
            raise YotaError(f"{sv.cls.__name__}() is missing the field {f.name!r}", ev.loc(node))


def _instance_has(obj: Any, name: str) -> bool:
    """Is ``name`` an instance field of ``obj`` (its ``__dict__`` or a slot)?"""
    fields = getattr(obj, "__dict__", None)
    if fields is not None and name in fields:
        return True
    _, attr = static_lookup(type(obj), name)
    return isinstance(attr, types.MemberDescriptorType) and hasattr(obj, name)


def result_tree(value: Any, loc: Any) -> tuple[Structure, Any]:
    """The traced function's result as nested tuples of its leaves, and its ``Structure``
    (ir/structure.py): a tuple, list, dict, namedtuple or dataclass built while tracing, nested
    as deep as it is; the entry points rebuild it from what the module returns."""
    if isinstance(value, StructValue):
        cls = value.cls
        if not dataclasses.is_dataclass(cls) or value.argnum is not None or value.obj is not None:
            what = "an object passed in" if value.obj is not None or value.argnum is not None \
                else f"a {cls.__name__}, which is not a dataclass"
            raise YotaError(f"the function returns {what}; results are arrays, numbers, and "
                            "tuples, lists, dicts, namedtuples and dataclasses of them", loc,
                            "Return its arrays (in a tuple, a dict or a dataclass) instead.")
        names = tuple(f.name for f in dataclasses.fields(cls))
        trees = [result_tree(_named(value.fields.get(n), n), loc) for n in names]
        return Structure("dataclass", tuple(s for s, _ in trees), names, cls), \
            tuple(t for _, t in trees)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        trees = [result_tree(_named(v, n), loc) for v, n in zip(value, type(value)._fields)]
        return Structure("namedtuple", tuple(s for s, _ in trees), type(value)._fields,
                         type(value)), tuple(t for _, t in trees)
    if isinstance(value, (tuple, list)):
        trees = [result_tree(v, loc) for v in value]
        return Structure("list" if isinstance(value, list) else "tuple",
                         tuple(s for s, _ in trees)), tuple(t for _, t in trees)
    if isinstance(value, dict):
        trees = [result_tree(_named(v, k), loc) for k, v in value.items()]
        return Structure("dict", tuple(s for s, _ in trees), tuple(value)), \
            tuple(t for _, t in trees)
    return LEAF, value


def _named(value: Any, key: Any) -> Any:
    """A returned leaf computed without a name of its own is named for its key or field in the
    result (``return {"loss": np.sum(e), ...}``: ``loss``)."""
    if isinstance(value, Var) and value.hint is None and isinstance(key, str) and \
            key.isidentifier():
        value.hint = key
    return value
