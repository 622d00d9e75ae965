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


def test_first_hour_runs_as_written(monkeypatch, tmp_path):
    """docs/first-hour.md: its Python blocks run in order as one session; a block marked
    ``<!-- file: NAME -->`` is written to a fresh project instead, where each ``$`` command of a
    ``<!-- run -->`` console block runs, prints every line shown after it, and exits 1 exactly
    where it shows a stale file."""
    import linecache
    import os
    import re
    pytest = __import__("pytest")
    pytest.importorskip("scipy")
    text = (ROOT / "docs" / "first-hour.md").read_text()
    scope: dict = {}
    blocks = re.finditer(r"(<!-- (?P<mark>file: [\w.]+|run) -->\n)?```(?P<lang>\w+)\n"
                         r"(?P<body>.*?)```", text, re.S)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "YOTA_S2S_CACHE": str(tmp_path / "cache")}
    ran = commands = 0
    for i, block in enumerate(blocks):
        mark, body = block.group("mark") or "", block.group("body")
        if mark.startswith("file: "):
            (tmp_path / mark[len("file: "):]).write_text(body)
        elif mark == "run":
            for command in re.split(r"^\$ ", body, flags=re.M)[1:]:
                line, *shown = command.splitlines()
                done = subprocess.run(["bash", "-c", line], capture_output=True, text=True,
                                      env=env, cwd=tmp_path)
                out = done.stdout + done.stderr
                stale = any(s.startswith("stale:") for s in shown)
                assert done.returncode == (1 if stale else 0), f"$ {line}\n{out}"
                for s in shown:
                    assert s in out, f"$ {line}: {s!r} not in\n{out}"
                commands += 1
        elif block.group("lang") == "python":
            name = f"<docs/first-hour.md block {i + 1}>"
            linecache.cache[name] = (len(body), None, body.splitlines(True), name)
            exec(compile(body, name, "exec"), scope)
            ran += 1
    assert ran >= 4 and commands >= 6
