"""The review page: what it shows, that it needs nothing from the network, and that a browser
renders it (headless Chromium, skipped where it is not installed)."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from .test_cli import MODEL, run, write

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)


class _Rows(HTMLParser):
    """The text of each table cell, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self.cell = []
        elif tag == "div" and self.cell is not None:
            self.cell.append("\n")

    def handle_endtag(self, tag):
        if tag == "td":
            self.rows[-1].append("".join(self.cell))
            self.cell = None
        elif tag == "pre" and self.cell is not None:
            self.cell.append("\n")

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


@pytest.fixture
def page(tmp_path: Path) -> tuple[str, Path]:
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path / "model.py", MODEL)
    done = run(tmp_path, "review", "model.py", "--func", "loss", "-o", "loss.html")
    assert done.returncode == 0, done.stderr
    return (tmp_path / "loss.html").read_text(), tmp_path


def rows(text: str) -> dict[str, list[str]]:
    parser = _Rows()
    parser.feed(text)
    return {cells[1].strip(): cells for cells in parser.rows if len(cells) == 4}


def test_each_source_line_beside_its_statements_and_rules(page) -> None:
    text, directory = page
    table = rows(text)
    assert set(table) >= {"@ys.example(make)", "def loss(W, b, x):", "h = predict(W, b, x)",
                          "return np.mean(h ** 2)", "def predict(W, b, x):",
                          "return np.tanh(W @ x + b[:, None])"}
    ln, _, forward, backward = table["return np.tanh(W @ x + b[:, None])"]
    assert ln == "6" and forward.strip() == "h = xp.tanh(W @ x + b[:, None])"
    for rule in ("tanh x: dy * (1 - y * y)",
                 "matmul x1: matmul_grad_x1(x1, x2, dy) in rules/products.py:32",
                 "matmul x2: matmul_grad_x2(x1, x2, dy) in rules/products.py:41"):
        assert f"\n{rule}\n" in backward + "\n"
    assert "pow x1: dy * x2 * x1 ** (x2 - 1)" in table["return np.mean(h ** 2)"][3]
    assert table["def loss(W, b, x):"][2:] == ["", ""]
    # every statement on the page is a line of the generated module
    module = {line.strip() for line in run(directory, "show", "model.py", "--func", "loss")
              .stdout.splitlines()}
    shown = [line for cells in table.values() for cell in cells[2:] for line in cell.splitlines()]
    statements = [line for line in shown if " = " in line]
    assert len(statements) >= 7 and all(line.strip() in module for line in statements)


def test_page_shows_what_it_was_compiled_for_and_the_module(page) -> None:
    text, directory = page
    plain = unescape(re.sub(r"<[^>]+>", "", text))
    assert "Compiled for: W float64[4, 3]; b float64[4]; x float64[3, 2]; device cpu." in plain
    assert "Source: model.py, code sha256 " in plain and "Statements: 3 args, " in plain
    module = run(directory, "show", "model.py", "--func", "loss").stdout
    assert module.rstrip("\n") in plain
    assert '<span class="k">def</span>' in text         # highlighted


HELPER_THRICE = '''
import numpy as np
import yota_s2s as ys


def mean_of(x):
    mu = np.mean(x, axis=0)
    return mu


def example(rng):
    return tuple(rng.standard_normal((5, 3)) for _ in range(3))


@ys.example(example)
def loss(a, b, c):
    total = np.sum(mean_of(a) ** 2)
    total = total + np.sum(np.tanh(mean_of(b)))
    return total + np.sum(np.sin(mean_of(c)))
'''


def test_a_helper_inlined_three_times_has_a_block_of_rows_per_call(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path / "model.py", HELPER_THRICE)
    done = run(tmp_path, "review", "model.py", "-o", "loss.html")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "loss.html").read_text()
    headings = [unescape(h) for h in re.findall(r"<h2>(.*?)</h2>", text)]
    assert headings == ["loss · model.py:14-18"] + [
        f"mean_of (inlined at model.py:{line}) · model.py:5-7" for line in (16, 17, 18)]
    sections = text.split("<h2>")[2:]
    for section, name, grad in zip(sections, ("mu", "mu_1", "mu_2"), ("mu", "mu_1", "mu_2")):
        parser = _Rows()
        parser.feed(section)
        (ln, source, forward, backward), = [r for r in parser.rows if len(r) == 4 and r[2]]
        assert (ln, source.strip()) == ("6", "mu = np.mean(x, axis=0)")
        assert forward.split(" = ")[0].strip() == name        # its own call's statement only
        assert "mean a: mean_grad(a, y, dy, axis, keepdims)" in backward
        assert f"d{grad}" in backward


def test_page_is_self_contained(page) -> None:
    text, _ = page
    for needle in ("http:", "https:", "<script", "<link", "src=", "url(", "@import", "<img"):
        assert needle not in text


def _png_size(path: Path) -> tuple[int, int, int]:
    """(width, height, decompressed bytes) of a PNG, read with the standard library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    chunks, pos = [], 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            chunks.append(data[pos + 8:pos + 8 + length])
        pos += 12 + length
    return width, height, len(zlib.decompress(b"".join(chunks)))


def _screenshot(url: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", f"--user-data-dir={profile}", "--hide-scrollbars",
                        "--window-size=1400,900", f"--screenshot={out}", url],
                       capture_output=True, timeout=120, check=True)


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed")
def test_page_renders_in_headless_chromium(page, tmp_path: Path) -> None:
    _, directory = page
    blank = directory / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    _screenshot((directory / "loss.html").as_uri(), tmp_path / "review.png")
    _screenshot(blank.as_uri(), tmp_path / "blank.png")
    width, height, raw = _png_size(tmp_path / "review.png")
    assert (width, height) == (1400, 900) and raw >= height * (1 + 3 * width)
    # a page of text and colour compresses far worse than an empty one
    assert (tmp_path / "review.png").stat().st_size > 10 * (tmp_path / "blank.png").stat().st_size


def test_page_uses_the_tape_names_and_toggles_the_buffered_form(page) -> None:
    """The review form's names are the tape printout's (one naming pass, ir/names.py); the
    buffered form is behind a toggle and says it is not the form to review."""
    text, directory = page
    plain = unescape(re.sub(r"<[^>]+>", "", text))
    tape = run(directory, "trace", "model.py", "--func", "loss", "--grad").stdout
    table = rows(text)
    backward = table["return np.tanh(W @ x + b[:, None])"][3]
    targets = {line.split(" = ")[0].strip() for line in backward.splitlines() if " = " in line}
    assert targets >= {"dW", "dx", "db"}
    printed = {line.split(":")[0].strip() for line in tape.splitlines() if " = " in line}
    assert targets <= printed
    assert '<details class="buffered">' in text and "The buffered form" in plain
    assert "out=" in plain.split("The buffered form", 1)[1]         # xp.tanh(h, out=h)
