"""The docs show real compiler output: their generated blocks must match the compiler today."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_generated_blocks_in_docs_are_up_to_date():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "docs_snippets.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr + \
        "\nRun `python tools/docs_snippets.py` to regenerate them."


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_command():
    readme = (ROOT / "README.md").read_text()
    commands = readme.split("```console\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert commands[0].endswith("examples/seed_loss.py")
    test_command = commands[1].split("&& .venv/bin/")[-1]
    assert test_command == "python -m pytest -q"
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_primer_python_blocks_run_in_order(monkeypatch):
    """docs/primer.md's Python blocks (not the generated ones, which the check above keeps
    current) run one after the other, as a reader would paste them."""
    import re
    text = (ROOT / "docs" / "primer.md").read_text()
    blocks = [m.group(2) for m in re.finditer(r"(<!-- snippet: [\w-]+ -->\n)?```python\n(.*?)```",
                                              text, re.S) if m.group(1) is None]
    assert len(blocks) >= 4
    monkeypatch.syspath_prepend(str(ROOT))
    import linecache
    scope: dict = {}
    for i, block in enumerate(blocks):
        name = f"<docs/primer.md block {i + 1}>"     # its lines are the source of its lambdas
        linecache.cache[name] = (len(block), None, block.splitlines(True), name)
        exec(compile(block, name, "exec"), scope)
