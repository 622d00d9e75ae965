"""The review form (the plain form, docs/review.md): rule comments, one name per value shared
with the tape printout, ``d<name>`` gradients and ``_part`` contributions, the rules' ``y`` /
``dy`` kept for the rules, counts written as fractions, ``# t = k`` markers, no CSE across
sections; and the buffered form's header pointing at it."""
from __future__ import annotations

import ast
import re

import numpy as np

from yota_s2s.codegen import write_module
from yota_s2s.compiler import compile_grad, gradient_tape
from yota_s2s.ir.printer import format_tape
from yota_s2s.text import fraction

from .programs import design, review

EXAMPLES = review.examples()


def review_form(name: str) -> tuple[str, str]:
    """(module text, tape printout) of a program of docs/review.md in the review form."""
    _, tape = gradient_tape(getattr(review, name), EXAMPLES[name], check=True, review=True)
    return write_module(tape, buffers=False), format_tape(tape, locations=False)


def body(text: str) -> str:
    return text[text.index("    # -- forward --"):]


def assigned(text: str) -> set[str]:
    tree = ast.parse(text)
    function = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.endswith("_grad")]
    return {n.id for n in ast.walk(function[0]) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


def test_every_backward_block_names_its_rules():
    text, _ = review_form("mlp")
    lines = body(text).split("# -- backward --")[1].splitlines()
    blocks = [i for i, line in enumerate(lines) if line.strip().startswith("# grad of")]
    assert len(blocks) == 4              # the max's line: its terms cancel (max_shift)
    for i in blocks:
        assert lines[i + 1].strip().startswith("# rule ")
    assert "    # rule tanh, x: dy * (1 - y * y)\n" in text
    assert "    # rule matmul, x1: matmul_grad_x1(x1, x2, dy) in rules/products.py:32\n" \
        in text


def test_module_names_are_the_tape_printout_names():
    for name in EXAMPLES:
        text, printed = review_form(name)
        lhs = {m.group(1) for m in re.finditer(r"^  (\w+):", printed, re.M)}
        params = set(re.match(r"tape \w+\((.*)\)", printed).group(1).replace(" ", "").split(","))
        lhs |= {p.split(":")[0] for p in params}
        assert assigned(text) - {"_"} <= lhs, (name, assigned(text) - lhs)


def test_gradients_of_temporaries_are_d_names_and_parts_are_not_versions():
    text, printed = review_form("mlp")
    assert "    dt2 = dh * (1 - h * h)\n" in text        # t2 = X @ W1 + b1, written inline
    assert "dt2:f64[64,8] = mul dh" in printed
    rnn, rnn_tape = review_form("rnn")
    assert "    dWx = dWx + t26 * t14\n" in rnn             # a running sum keeps one name
    assert not re.search(r"\bd\w+_\d+_\d+\b", rnn + rnn_tape)     # no dh_3_1


def test_rule_words_are_not_user_names():
    """A parameter ``y`` is ``y_`` (its gradient ``dy_``): ``dy`` in a rule comment is the
    incoming gradient, never the user's value."""
    df = compile_grad(design.loss, (np.ones((4, 3)), np.ones(4), np.ones((3, 2)),
                                    np.ones((4, 2))), buffers=False)
    assert "def loss_grad(W, b, x, y_):" in df.text and "dy_ = -dt4" in df.text
    assert "raise _mismatch('loss_grad', 'y', 'float64[4, 2]', y_)" in df.text
    value, dW, db, dx, dy = df.fn(np.ones((4, 3)), np.ones(4), np.ones((3, 2)), np.zeros((4, 2)))
    assert dy.shape == (4, 2) and np.all(dy < 0)


def test_counts_are_fractions_in_the_review_form_only():
    assert ast.unparse(fraction(-0.015625)) == "-1 / 64"
    assert ast.unparse(fraction(1 / 3)) == "1 / 3" and ast.unparse(fraction(3 / 64)) == "3 / 64"
    assert fraction(0.25) is None and fraction(0.1) is None and fraction(2.0) is None
    assert fraction(np.float32(0.015625)) is None and fraction(float("nan")) is None
    text, _ = review_form("mlp")
    assert "dlabels = -1 / 64 * logp" in text and "0.015625" not in text
    _, tape = gradient_tape(review.mlp, EXAMPLES["mlp"])
    assert "0.015625" in write_module(tape)                 # the buffered form keeps the float


def test_unrolled_loops_mark_each_pass():
    text, _ = review_form("rnn")
    forward, backward = body(text).split("# -- backward --")
    assert [f"    # t = {k}" in forward for k in range(5)] == [True] * 5
    assert backward.index("    # t = 4\n") < backward.index("    # t = 0\n")
    clipped, _ = review_form("clipped")
    assert "    # i = 1\n    # review.py:23  if x[i] > 0:\n" in clipped


def test_no_gradient_is_written_as_a_forward_value_in_the_review_form():
    """``out = w * x ** 2`` and the gradient ``dout * x ** 2`` through it are equal only because
    ``dout`` is ``w``: the buffered form's CSE merges them (``dw = out + out``), the review
    form keeps the gradient's own statement. A rule operand from forward values alone (the
    tanh rule's ``y * y``) still reuses the forward value in both."""
    args = (np.full(3, 2.0), np.full(3, 3.0))
    fast = format_tape(gradient_tape(review.reused, args)[1], locations=False)
    slow = format_tape(gradient_tape(review.reused, args, review=True)[1], locations=False)
    assert "dw:f64[3] = add out out" in fast
    assert "dw_part1:f64[3] = mul w t1" in slow and "dw:f64[3] = add out dw_part1" in slow
    text, _ = review_form("rnn")
    assert "dt20 = dh_4 * (1 - t21)" in text and "    t21 = h_4 * h_4\n" in text


def test_buffered_header_points_at_the_review_form_and_the_referee():
    _, tape = gradient_tape(review.mlp, EXAMPLES["mlp"])
    header = write_module(tape).split('"""')[1]
    assert "not for review" in header and "tests/test_fuzz.py" in header
    assert "tests/test_fuzz.py" not in write_module(tape, buffers=False)


def test_both_forms_agree_on_the_review_programs():
    for name, args in EXAMPLES.items():
        fn = getattr(review, name)
        plain = compile_grad(fn, args, buffers=False).fn(*args)
        fast = compile_grad(fn, args).fn(*args)
        for a, b in zip(plain, fast):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_a_folded_rule_keeps_its_comment_on_the_block_that_absorbed_it():
    """``dw[2] += 1.0 * t13`` is simplified to ``dw[2] += t13`` (passes/simplify.py): the mul
    rule that made ``1.0 * t13`` is still said, on the block of the statement that reads what
    it became (Tape.folded); a folded constant (``-1.0``, fold.py) keeps its rule too."""
    text, _ = review_form("clipped")
    back = body(text).split("# -- backward --")[1]
    block = back[:back.index("    dw[2] += t13\n")].rsplit("# i = 2\n", 1)[1]
    assert "    # rule mul, x1: dy * x2\n" in block and "rule getitem, a: da[key] += dy" in block
    block = back[:back.index("    dw[1] += -1.0\n")].rsplit("# i = 1\n", 1)[1]
    assert "    # rule neg, x: -dy\n" in block
    mlp, _ = review_form("rnn")
    first = body(mlp).split("# -- backward --")[1].split("    dh_4 = h_4 + h_4\n")[0]
    assert "# rule mul, x1: dy * x2" in first and "# rule mul, x2: x1 * dy" in first
