"""Writing a generated module to disk and importing it.

Modules go to a cache directory (``$YOTA_S2S_CACHE``, else ``$XDG_CACHE_HOME/yota_s2s``, else
``~/.cache/yota_s2s``) or to ``out_dir``. Three things make what runs the text that was written:

- **Atomic writes.** Every file is written to a temporary file in its directory, then
  ``os.replace``d, so a concurrent reader never sees half a module.
- **No foreign bytecode.** The module is compiled here, from the text in memory, and executed
  into a fresh module registered under its name with ``__file__`` the written ``.py`` (its
  lines are put into ``linecache``, so ``inspect.getsource``, tracebacks and ``pdb`` show that
  text even if the file changes). Whatever ``__pycache__`` holds is never used by this
  process; the ``.pyc`` beside the file is written from the same code object as a
  *checked-hash* pyc, so a fresh process that imports the module by name (the directory on
  ``sys.path``) runs this code only while the ``.py`` still hashes to this text, and compiles
  the file anew otherwise.
- **A private cache.** The cache directory is created with mode 0700 and refused
  (``CacheError``) when it belongs to another user or others can write to it. When it cannot
  be written, a per-user directory in the temporary directory is used under the same checks:
  a directory planted there in advance is refused, never read.

A module name is a plain ASCII identifier that names no module other than one generated here
(not one imported, one an import would find, or sitecustomize/usercustomize):
``module_name="numpy"`` or ``"../x"`` is refused rather than replacing ``sys.modules["numpy"]``
or writing outside the directory.
"""
from __future__ import annotations

import contextlib
import getpass
import hashlib
import importlib.util
import keyword
import linecache
import marshal
import os
import stat
import sys
import tempfile
from pathlib import Path
from types import CodeType, ModuleType

from ..errors import CacheError, run_module_code
from ..marks import generated_file

_CHECKED_HASH = 0b11          # pyc flags (PEP 552): hash-based, and checked against the source


def cache_dir() -> Path:
    if os.environ.get("YOTA_S2S_CACHE"):
        return Path(os.environ["YOTA_S2S_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "yota_s2s"


def module_name_for(base: str, text: str) -> str:
    """Cache modules are named by content: ``loss_grad_3f9a1c0b2e``."""
    return f"{base}_{hashlib.sha256(text.encode()).hexdigest()[:10]}"


# -- directories -----------------------------------------------------------------------------

def private_dir(path: Path) -> Path:
    """``path``, created with mode 0700 if missing; a ``CacheError`` unless it is a directory
    of this user that no other user can write to."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    problem = _untrusted(path)
    if problem:
        raise CacheError(f"the cache directory {path} {problem}; yota-s2s does not import code "
                         "from a directory that someone else can write to",
                         hint=f"Set YOTA_S2S_CACHE to a directory of your own (it is created "
                              f"with mode 0700), or remove {path} or make it yours "
                              f"(chmod 700 {path}).")
    return path


def _untrusted(path: Path) -> str | None:
    """Why ``path`` is not a private directory of this user, or None."""
    link, info = os.lstat(path), os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    getuid = getattr(os, "getuid", None)
    if getuid is None:                  # Windows: no owner or mode bits to check here
        return None
    for what, st in (("is a symbolic link that belongs", link), ("belongs", info)):
        if st.st_uid != getuid():
            return f"{what} to user id {st.st_uid}, not to you ({getuid()})"
    if info.st_mode & 0o022:
        who = "its group and others" if info.st_mode & 0o022 == 0o022 else \
              "its group" if info.st_mode & 0o020 else "other users"
        return f"can be written by {who} (mode {stat.filemode(info.st_mode)})"
    return None


def cache_directory() -> Path:
    """The checked cache directory; a private per-user one under the temporary directory
    when it cannot be written to."""
    directory = cache_dir()
    try:
        private_dir(directory)
        if os.access(directory, os.W_OK | os.X_OK):
            return directory
    except OSError:               # cannot be made (read-only, no permission); not CacheError
        pass
    user = os.getuid() if hasattr(os, "getuid") else getpass.getuser()
    return private_dir(Path(tempfile.gettempdir()) / f"yota_s2s-{user}")


# -- names -----------------------------------------------------------------------------------

# Modules Python's ``site`` imports at every start where it finds them on the path: a gradient
# module under such a name would run in every interpreter started there.
STARTUP_MODULES = frozenset({"sitecustomize", "usercustomize"})


def check_module_name(name: object, directory: Path | None = None) -> str:
    """``name`` if a generated module may take it: a plain identifier that names no other
    module: not a standard one, not one imported that was not generated here, not one that an
    import would find outside ``directory`` and that yota-s2s did not write (an installed
    package not imported yet: ``pytest``), not ``sitecustomize``/``usercustomize``. (A file
    in ``directory`` that yota-s2s did not write is refused by ``load``.) (An installed
    distribution's modules are found by ``find_spec``;
    ``importlib.metadata.packages_distributions()`` would name them too, at half a second a
    call.)"""
    if not (isinstance(name, str) and name.isascii() and name.isidentifier()
            and not keyword.iskeyword(name)):
        raise CacheError(f"module_name={name!r} is not a plain Python name",
                         hint="Give letters, digits and underscores, not starting with a digit "
                              "(e.g. module_name='loss_grad'); the file is written as "
                              "<module_name>.py inside out_dir.")
    existing = sys.modules.get(name)
    standard = name in sys.builtin_module_names or name in getattr(sys, "stdlib_module_names", ())
    if name in STARTUP_MODULES:
        raise CacheError(f"module_name={name!r} is a module Python's site imports at every "
                         "start where it is on the path; a gradient module under it would run "
                         "in every interpreter", hint="Choose another name, e.g. "
                                                      f"module_name={name + '_grad'!r}.")
    found = _found_elsewhere(name, directory) if existing is None and not standard else None
    if standard or found or (existing is not None and not generated(existing)):
        where = getattr(existing, "__file__", None) or found or "a standard module"
        raise CacheError(f"module_name={name!r} is the name of another module ({where}); "
                         "importing the gradient under it would replace that module",
                         hint="Choose a name no other module uses, e.g. "
                              f"module_name={name + '_grad'!r}.")
    return name


def _found_elsewhere(name: str, directory: Path | None) -> str | None:
    """Where an import of ``name`` finds a module outside ``directory`` that yota-s2s did not
    write, or None."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    origin = spec.origin if spec.has_location and spec.origin else None
    inside = directory is not None and Path(origin or "").resolve().parent == directory.resolve()
    if origin is not None and (inside or Path(origin).suffix == ".py"
                               and generated_file(Path(origin))):
        return None                     # in the directory, or one written by yota-s2s
    return origin or f"{name}, importable"


def generated(module: ModuleType) -> bool:
    """Whether ``module`` was made by ``load``, or imported from a file yota-s2s wrote."""
    if isinstance(getattr(module, "__yota_text__", None), str):
        return True
    file = getattr(module, "__file__", None)
    return isinstance(file, str) and file.endswith(".py") and generated_file(Path(file))


# -- writing ---------------------------------------------------------------------------------

def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` (UTF-8, no newline translation) or bytes to ``path`` via a temporary
    file in the same directory and ``os.replace``; nothing is written when the file already
    holds exactly that."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, _file_mode(path))     # mkstemp makes it private; files to commit are not
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _file_mode(path: Path) -> int:
    """The mode a new file gets from ``open`` (0o666 less the umask), or the old file's."""
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def compile_text(text: str, path: Path) -> CodeType:
    """The code of ``text`` as the import system would compile the file ``path``."""
    return compile(text, str(path), "exec", dont_inherit=True)


def write_bytecode(path: Path, text: str, code: CodeType | None = None) -> None:
    """Write the ``.pyc`` of ``path`` from ``text`` (its exact content) as a checked-hash pyc,
    which Python uses only while the file's bytes hash to ``text``. Skipped where Python would
    not write bytecode (there any other ``.pyc`` of the file is removed, since it may have been
    compiled from another text); a directory that cannot be written is not an error (as for
    Python)."""
    try:
        cfile = Path(importlib.util.cache_from_source(str(path)))
    except (NotImplementedError, ValueError):
        return
    header = (importlib.util.MAGIC_NUMBER + _CHECKED_HASH.to_bytes(4, "little")
              + importlib.util.source_hash(text.encode("utf-8")))
    with contextlib.suppress(OSError):
        if sys.dont_write_bytecode:
            with open(cfile, "rb") as f:
                if f.read(len(header)) != header:
                    cfile.unlink()
            return
        code = compile_text(text, path) if code is None else code
        write_atomic(cfile, header + marshal.dumps(code))


def write_module_file(path: Path, text: str) -> CodeType:
    """Write a generated module and its bytecode; its code object."""
    write_atomic(path, text)
    code = compile_text(text, path)
    write_bytecode(path, text, code)
    return code


def stale_bytecode(path: Path) -> Path | None:
    """The ``.pyc`` that Python would run for ``path`` although it was not compiled from the
    file's present text (a file rewritten within a second at the same size), or None."""
    try:
        cfile = Path(importlib.util.cache_from_source(str(path)))
        data, source = cfile.read_bytes(), Path(path).read_bytes()
    except (NotImplementedError, ValueError, OSError):
        return None
    if len(data) < 16 or data[:4] != importlib.util.MAGIC_NUMBER:
        return None                     # another Python's, or not bytecode: Python ignores it
    flags = int.from_bytes(data[4:8], "little")
    if flags & 0b1:
        if flags & 0b10 and data[8:16] != importlib.util.source_hash(source):
            return None                 # checked: Python sees the mismatch and recompiles
    else:
        info = os.stat(path)
        if (int.from_bytes(data[8:12], "little") != int(info.st_mtime) & 0xFFFFFFFF
                or int.from_bytes(data[12:16], "little") != info.st_size & 0xFFFFFFFF):
            return None                 # Python sees the file changed and recompiles
    try:
        if marshal.loads(data[16:]) == compile(source, str(path), "exec", dont_inherit=True):
            return None
    except Exception:
        pass
    return cfile


# -- importing -------------------------------------------------------------------------------

def load(text: str, module_name: str, directory: Path | None = None) -> ModuleType:
    """Write ``text`` as ``<directory>/<module_name>.py`` and import it under that name: the
    code compiled from ``text`` itself, never bytecode found on disk."""
    check_module_name(module_name, Path(directory) if directory is not None else None)
    if directory is None:
        directory = cache_directory()         # ours: a changed file there is rebuilt
    else:
        directory = Path(directory)
        if (directory / f"{module_name}.py").exists() \
                and not generated_file(directory / f"{module_name}.py"):
            raise CacheError(f"{directory / f'{module_name}.py'} exists and was not written by "
                             "yota-s2s; it is left as it is",
                             hint="Choose another module_name or out_dir, or move the file away.")
    path = directory / f"{module_name}.py"
    existing = sys.modules.get(module_name)
    if existing is not None and getattr(existing, "__file__", None) == str(path) \
            and getattr(existing, "__yota_text__", None) == text:
        write_atomic(path, text)            # put back, should the file have been changed
        return existing
    code = write_module_file(path, text)
    module = ModuleType(module_name)
    module.__file__ = str(path)
    module.__spec__ = importlib.util.spec_from_file_location(module_name, path)
    module.__loader__ = module.__spec__.loader
    module.__yota_text__ = text
    linecache.cache[str(path)] = (len(text), None, text.splitlines(True), str(path))
    run_module_code(code, module.__dict__)
    sys.modules[module_name] = module
    return module
