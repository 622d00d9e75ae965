"""Writing a generated module to disk and importing it.

Modules go to a cache directory (``$YOTA_S2S_CACHE``, else ``$XDG_CACHE_HOME/yota_s2s``, else
``~/.cache/yota_s2s``) or to ``out_dir``. The file is written atomically (a temporary file, then
``os.replace``), so a concurrent reader never sees half a module. The module is imported from
that real file: ``inspect.getsource``, tracebacks and ``pdb`` breakpoints work on it, and a fresh
process with the directory on ``sys.path`` imports it by name.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType


def cache_dir() -> Path:
    if os.environ.get("YOTA_S2S_CACHE"):
        return Path(os.environ["YOTA_S2S_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "yota_s2s"


def module_name_for(base: str, text: str) -> str:
    """Cache modules are named by content: ``loss_grad_3f9a1c0b2e``."""
    return f"{base}_{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:     # Python source is UTF-8
            f.write(text)
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


def load(text: str, module_name: str, directory: Path | None = None) -> ModuleType:
    """Write ``text`` as ``<directory>/<module_name>.py`` and import it under that name."""
    directory = Path(directory) if directory is not None else cache_dir()
    path = directory / f"{module_name}.py"
    try:
        write_atomic(path, text)
    except OSError:
        if directory != cache_dir():
            raise
        path = Path(tempfile.gettempdir()) / f"yota_s2s-{os.getuid()}" / f"{module_name}.py"
        write_atomic(path, text)
    existing = sys.modules.get(module_name)
    if existing is not None and getattr(existing, "__file__", None) == str(path) \
            and getattr(existing, "__yota_text__", None) == text:
        return existing
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.__yota_text__ = text
    sys.modules[module_name] = module
    return module
