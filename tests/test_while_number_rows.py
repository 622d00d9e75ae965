"""A recording while's stack of float64 numbers that its unwind reads only as an operand of
ufuncs with float64 arrays is, in the buffered form, a list of 0-d rows held per thread
(codegen/while_numbers.py): the trip writes its number into its row where a ufunc first reads
it (``H[trips][()] = h_1``), that ufunc and the later ones read the row, and the unwind's
ufuncs read the row it takes back (no 0-d work array filled); a number a ufunc reads is
written into a 0-d array with ``a[()] = x`` (out_forms.number_into), not ``a.fill(x)``."""
import re
import threading

import numpy as np

from yota_s2s.compiler import compile_grad

from .programs import whiles as W


def _args(seed):
    r = np.random.default_rng(seed)
    return r.uniform(0.5, 3.0, 2), r.uniform(0.5, 2.0, 2)


def _both():
    args = _args(0)
    return (compile_grad(W.adaptive_heun, args, buffers=True),
            compile_grad(W.adaptive_heun, args, buffers=False))


def test_the_rows_are_held_filled_once_and_read_as_they_are():
    """adaptive_heun: ``h`` and ``0.5 * h`` are stacks of 0-d rows (NUMBER_ROWS, made by
    ``_number_rows`` and grown so), each row written once a trip, read by the trip's ufuncs
    and the unwind's; no number goes through the 0-d work array by ``.fill``."""
    text = _both()[0].text
    forward = text[text.index("# -- forward"):text.index("# -- backward")]
    backward = text[text.index("# -- backward"):]
    assert re.search(r"\nNUMBER_ROWS = \{\d+, \d+\}    # ", text)
    assert "def _number_rows(count):" in text and "return [rows[i, ...] for i in range(count)]" \
        in text
    assert re.search(r"\(\(16,\), 'float64', 'H'\),    # _held_stacks\[\d+\], 0-d rows", text)
    assert "            H.extend(_number_rows(len(H)))\n" in forward
    assert forward.count("H[trips][()] = ") == 1 and forward.count("V[trips][()] = ") == 1
    assert "xp.multiply(H[trips], f1, out=Y1[trips])" in forward and "y2 *= V[trips]" in forward
    assert re.search(r"xp\.multiply\(h_\d+, t\d+, out=", backward)
    assert ".fill(h" not in text and ".fill(v" not in text and "H.append(" not in text
    assert "Numbers go through 0-d arrays" in text and "[()] = number before a ufunc" in text


def test_values_equal_the_plain_form_call_after_call():
    """Bit for bit, on inputs whose loops take from a few trips to more than the stacks' first
    rows (the rows grow, and are kept for the calls after)."""
    buffered, plain = _both()
    for seed in range(12):
        args = _args(seed)
        got, want = buffered.fn(*args), plain.fn(*args)
        assert got[0] == want[0]
        for g, w in zip(got[1:], want[1:]):
            np.testing.assert_array_equal(g, w)
    out = [np.empty(2), np.empty(2)]
    args = _args(3)
    got = buffered.fn(*args, out=out)
    np.testing.assert_array_equal(out[0], plain.fn(*args)[1])
    assert got[1] is out[0]


def test_two_threads_hold_rows_of_their_own():
    """Each thread has its own stacks of rows: two threads calling at once get the values of
    the plain form."""
    buffered, plain = _both()
    seeds = list(range(20))
    want = {s: plain.fn(*_args(s)) for s in seeds}
    errors = []

    def run(order):
        try:
            for _ in range(5):
                for s in order:
                    got = buffered.fn(*_args(s))
                    if got[0] != want[s][0] or not all(
                            np.array_equal(g, w) for g, w in zip(got[1:], want[s][1:])):
                        errors.append(s)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(o,)) for o in (seeds, seeds[::-1])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
