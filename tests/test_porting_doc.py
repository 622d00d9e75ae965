"""Every Python block of docs/porting.md runs as written (each as its own importable module, so
functions with rules can be imported by the generated code)."""
import importlib.util
import re
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).parent.parent / "docs" / "porting.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_guide_has_its_examples():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_porting_guide_block_runs(k, tmp_path, monkeypatch):
    name = f"porting_block_{k}"
    path = tmp_path / f"{name}.py"
    path.write_text(BLOCKS[k])
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
