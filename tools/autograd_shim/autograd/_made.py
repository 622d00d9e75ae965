"""Small functions that the shim hands to yota_s2s, made as module-level functions of a
module of their own (registered in ``sys.modules`` and ``linecache``), so that what they
call (the test's function, its keyword arguments) are globals of theirs, read where the
generated code runs, rather than variables of an enclosing function."""
import itertools
import linecache
import sys
import types

_count = itertools.count()

WITH_KEYWORDS = """
def {name}(*args):
    return _f(*args, **_kwargs)
"""

PAIRED = """
def {name}(*args):
    return _inner(args[-1], _f(*args[:-1]))
"""


def made(template, name, **values):
    modname = f"autograd_shim_made_{next(_count)}"
    source = template.format(name=name)
    filename = f"<{modname}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(modname)
    module.__file__ = filename
    module.__dict__.update(values)
    sys.modules[modname] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module.__dict__[name]
