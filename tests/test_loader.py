"""Writing and importing generated modules: the text that was verified is the code that runs."""
import importlib.util
import inspect
import marshal
import os
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import pytest

import yota_s2s as ys
from yota_s2s.codegen import loader
from yota_s2s.errors import CacheError

A = "def f():\n    return 1\n"
B = "def f():\n    return 2\n"          # the same size as A


def early_in_a_second() -> None:
    """Wait until a new second has just begun, so that what follows shares its timestamp."""
    while time.time() % 1.0 > 0.2:
        time.sleep(0.01)


def timestamp_pyc(path: Path, text: str) -> bytes:
    """The bytecode Python writes for ``path``: stamped with the file's mtime and size, the code
    compiled from ``text``."""
    info = os.stat(path)
    return (importlib.util.MAGIC_NUMBER + bytes(4)
            + (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
            + (info.st_size & 0xFFFFFFFF).to_bytes(4, "little")
            + marshal.dumps(compile(text, str(path), "exec", dont_inherit=True)))


def plant_pyc(path: Path, text: str) -> Path:
    cfile = Path(importlib.util.cache_from_source(str(path)))
    cfile.parent.mkdir(exist_ok=True)
    cfile.write_bytes(timestamp_pyc(path, text))
    return cfile


# -- bytecode -----------------------------------------------------------------------------

@pytest.fixture
def bytecode(monkeypatch):
    """Python writes bytecode (as it does unless told not to)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)


def test_a_module_rewritten_within_a_second_at_the_same_size_runs_the_new_text(tmp_path,
                                                                               bytecode):
    early_in_a_second()
    assert loader.load(A, "same_size_mod", tmp_path).f() == 1
    assert loader.load(B, "same_size_mod", tmp_path).f() == 2
    path = tmp_path / "same_size_mod.py"
    done = subprocess.run([sys.executable, "-I", "-c",
                           f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
                           "import same_size_mod; print(same_size_mod.f())"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "2"            # a fresh process too: the pyc is B's
    assert loader.stale_bytecode(path) is None


@pytest.mark.parametrize("write", [True, False])
def test_bytecode_beside_the_file_is_never_imported(tmp_path, monkeypatch, write):
    monkeypatch.setattr(sys, "dont_write_bytecode", not write)
    path = tmp_path / "planted_mod.py"
    path.write_text(B)
    plant_pyc(path, A)                           # stale bytecode stamped as B's
    assert loader.stale_bytecode(path) is not None
    assert loader.load(B, "planted_mod", tmp_path).f() == 2
    assert loader.stale_bytecode(path) is None   # replaced by B's own, or removed


def test_a_corrupted_cache_entry_is_rebuilt_not_imported(bytecode):
    def loss(x):
        return np.sum(x * 2.0)
    x = np.ones(3)
    df = ys.simplegrad(loss, x)
    name, path = df.__module__, Path(sys.modules[df.__module__].__file__)
    text = path.read_text()
    assert name.startswith("loss_grad_") and "2.0" in text
    plant_pyc(path, text.replace("2.0", "5.0"))  # hand-edited bytecode, stamped as the file's
    del sys.modules[name]                        # as in a new process
    np.testing.assert_array_equal(ys.simplegrad(loss, x)(x)[1], 2.0)
    path.write_text(text.replace("2.0", "5.0"))  # a hand-edited module
    del sys.modules[name]
    np.testing.assert_array_equal(ys.simplegrad(loss, x)(x)[1], 2.0)
    assert path.read_text() == text              # rebuilt


def test_source_and_tracebacks_show_the_text_that_runs(tmp_path):
    def loss(x):
        return np.sum(np.sqrt(x))
    df = ys.simplegrad(loss, np.ones(3), out_dir=tmp_path)
    text = ys.source(df)
    path = Path(sys.modules[df.__module__].__file__)
    path.write_text("# edited\n" * 3 + text)     # the file changes under the running module
    assert inspect.getsource(df) in text
    assert inspect.getsource(sys.modules[df.__module__]) == text
    try:
        df("not an array")
    except TypeError as e:
        frame = traceback.extract_tb(e.__traceback__)[-1]
    assert frame.filename == str(path)
    assert frame.line and frame.line in text and "edited" not in frame.line


def test_writes_are_atomic_and_leave_no_temporary_files(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    loader.write_atomic(path, A)
    real = os.replace

    def interrupted(src, dst):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        loader.write_atomic(path, B)
    monkeypatch.setattr(os, "replace", real)
    assert path.read_text() == A                 # the old file, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


# -- the cache directory ------------------------------------------------------------------

def compile_something():
    def loss(x):
        return np.sum(x * 3.0)
    return ys.simplegrad(loss, np.ones(2))


def test_the_cache_directory_is_created_private(tmp_path, monkeypatch):
    monkeypatch.setenv("YOTA_S2S_CACHE", str(tmp_path / "new" / "cache"))
    df = compile_something()
    assert Path(sys.modules[df.__module__].__file__).parent == tmp_path / "new" / "cache"
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "cache").st_mode) == 0o700


def test_a_cache_directory_others_can_write_is_refused(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("YOTA_S2S_CACHE", str(shared))
    with pytest.raises(CacheError) as e:
        compile_something()
    assert str(shared) in str(e.value) and "YOTA_S2S_CACHE" in str(e.value)
    assert list(shared.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="no owners")
def test_a_cache_directory_of_another_user_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("YOTA_S2S_CACHE", str(tmp_path))
    uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: uid + 1)
    with pytest.raises(CacheError, match="belongs to user id"):
        compile_something()


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="no owners")
def test_a_planted_fallback_directory_is_refused_not_imported(tmp_path, monkeypatch):
    """When the cache cannot be written, the per-user temporary directory is used only if it is
    private: one made in advance by someone else (or open to others) is never read."""
    unwritable = tmp_path / "readonly"
    unwritable.mkdir()
    monkeypatch.setenv("YOTA_S2S_CACHE", str(unwritable))
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == unwritable
                        else real_access(p, mode))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    planted = tmp_path / "tmp" / f"yota_s2s-{os.getuid()}"
    planted.mkdir(parents=True)
    os.chmod(planted, 0o777)
    with pytest.raises(CacheError, match="can be written by"):
        compile_something()
    os.chmod(planted, 0o700)
    df = compile_something()                     # a private one is fine
    assert Path(sys.modules[df.__module__].__file__).parent == planted
    np.testing.assert_array_equal(df(np.ones(2))[1], 3.0)


# -- module names -------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["numpy", "os", "json", "sys", "pytest", "../x", "a.b", "x/y",
                                  "", "class", "1x", "ｎｕｍｐｙ"])
def test_module_names_that_would_replace_or_escape_are_refused(name, tmp_path):
    numpy, modules = sys.modules["numpy"], set(sys.modules)
    with pytest.raises(CacheError, match="module_name="):
        ys.simplegrad(lambda x: np.sum(x * x), np.ones(2), out_dir=tmp_path / "out",
                      module_name=name)
    assert sys.modules["numpy"] is numpy and set(sys.modules) == modules
    assert not (tmp_path / "x.py").exists() and not (tmp_path / "out").exists()


def test_a_generated_module_name_can_be_used_again(tmp_path):
    f = ys.simplegrad(lambda x: np.sum(x * x), np.ones(2), out_dir=tmp_path, module_name="again")
    g = ys.simplegrad(lambda x: np.sum(x * x * x), np.ones(2), out_dir=tmp_path,
                      module_name="again")
    assert f.__module__ == g.__module__ == "again"
    np.testing.assert_array_equal(g(np.ones(2))[1], 3.0)
    np.testing.assert_array_equal(f(np.ones(2))[1], 2.0)     # the old function keeps its code
