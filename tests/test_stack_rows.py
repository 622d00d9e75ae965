"""A for-loop stack's rows read and written through a list of its work array's rows, made once
per thread with the work arrays (buffered form, codegen/stack_rows.py, workspace.py
``ROW_LISTS``), and a stack of branch conditions a Python list of bools (region_scalars.py
``list_stacks``): the module's text, its values (the plain form's, call after call) and each
thread's own lists."""
import re
import threading

import numpy as np

from yota_s2s.compiler import compile_grad

from .programs import branches as B
from .programs.custom import MONITOR, monitor
from .programs.loop_regions import rnn, rnn_args

PATHS = [(np.array([0.3, -0.2, 0.5]), np.array([0.9, 1.1, -0.4])),
         (np.array([-0.8, 0.2, -0.5]), np.array([0.5, -1.2, 0.7])),
         (np.array([0.1, 0.1, 0.1]), np.array([-0.3, 0.2, 0.9]))]


def test_rows_of_the_state_stack_come_from_a_list_and_conditions_are_a_list():
    text = compile_grad(B.branch_in_loop, PATHS[0], buffers=True).text
    assert "ROW_LISTS = [" in text and "buf1, buf2, buf3, buf4, H_rows = _work_arrays()" in text
    body = text[text.index("# -- forward --"):]
    forward, backward = body.split("# -- backward --")
    assert "H_COND = [False] * 20" in forward and "H_COND[t] = h_cond" in forward
    assert "H = buf2" in forward and len(re.findall(r"out=H_rows\[t \+ 1\]\)", forward)) == 2
    assert "h_prev = H_rows[t]" in backward and "h_cond_1 = H_COND[t]" in backward
    assert re.search(r"\n +H_rows\[\w+\]\[\.\.\.\] = dh\n", backward)
    # the array stays for what reads it by slices
    assert "xp.matmul(_ONES_20, H[1:21], out=" in backward
    assert not re.search(r"\bH\[(t|t\d+|t \+ 1|0)\]", body), body
    assert "Loop stacks' rows: H_rows (ROW_LISTS)" in text
    assert "branch conditions (H_COND)" in text


def test_the_plain_form_keeps_its_arrays():
    text = compile_grad(B.branch_in_loop, PATHS[0], buffers=False).text
    assert "ROW_LISTS" not in text and "_rows" not in text
    assert "H_COND = xp.empty((20,), dtype=xp.bool)" in text


def test_values_are_the_plain_forms_call_after_call():
    for fn, args in ((B.branch_in_loop, PATHS[0]), (rnn, rnn_args(20))):
        fast = compile_grad(fn, args, buffers=True).fn
        plain = compile_grad(fn, args, buffers=False).fn
        for k in (0, 1, 2, 0, 1):
            call = PATHS[k] if fn is B.branch_in_loop else rnn_args(20, seed=k)
            for a, b in zip(fast(*call), plain(*call)):
                np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_each_thread_gets_its_own_row_lists():
    compiled = compile_grad(B.branch_in_loop, PATHS[0], buffers=True)
    module = compiled.module
    expected = [compile_grad(B.branch_in_loop, p, buffers=False).fn(*p) for p in PATHS]
    lists, errors = {}, []

    def run(k):
        try:
            for _ in range(200):
                for a, b in zip(compiled.fn(*PATHS[k]), expected[k]):
                    np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
            arrays = module._local.arrays
            lists[k] = (arrays[-1], arrays[1])
        except Exception as e:         # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    rows = [lists[k][0] for k in range(3)]
    assert len({id(r) for r in rows}) == 3
    for row_list, array in lists.values():      # the views of that thread's own stack
        assert len(row_list) == 21 and all(r.base is array for r in row_list)


def _monitored_rnn(W, U, b, h0, xs):
    h = monitor(h0)
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
        loss += np.sum(h)
    return loss


def test_a_call_made_from_inside_a_call_gets_its_own_row_lists():
    """A function that calls a user's function (a nodiff monitor) takes its work arrays and
    row lists for the call; a call made meanwhile makes its own arrays and lists of their
    rows: the outer and the inner call each return what the plain form returns."""
    args, other = rnn_args(20), rnn_args(20, seed=3)
    fast = compile_grad(_monitored_rnn, args)
    assert "return arrays + tuple(list(arrays[k]) for k in ROW_LISTS)" in fast.text
    assert "H_rows = _arrays = _work_arrays()" in fast.text
    plain = compile_grad(_monitored_rnn, args, buffers=False).fn
    fast.fn(*args)
    MONITOR["calls"], MONITOR["seen"] = [(fast.fn, other)], []
    try:
        outer = fast.fn(*args)
        inner = MONITOR["seen"]
    finally:
        MONITOR["calls"], MONITOR["seen"] = [], []
    assert len(inner) == 1
    for got, want in ((outer, plain(*args)), (inner[0], plain(*other))):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
