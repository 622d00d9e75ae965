"""Data read from outside the function (globals, closures, objects) and random draws inside it:
read and drawn by the generated code at call time (docs/outside.md)."""
import warnings

import numpy as np
import pytest

import yota_s2s as ys

from .programs import outside as m


def numeric(f, x, eps=1e-6, reset=None):
    """Central differences of f at x; ``reset()`` runs before each evaluation (a seed)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        for sign in (1, -1):
            xx = x.copy()
            xx[i] += sign * eps
            if reset:
                reset()
            g[i] += sign * f(xx) / (2 * eps)
    return g


BOTH = pytest.mark.parametrize("buffers", [True, False], ids=["buffered", "plain"])


@BOTH
def test_global_arrays_are_read_at_call_time(buffers):
    w = np.array([0.1, -0.2, 0.3])
    df = ys.simplegrad(m.least_squares, w, buffers=buffers)
    text = ys.source(df)
    assert "outside.X" in text and "outside.SMALL" in text and "xp.asarray" not in text
    value, g = df(w)
    assert np.isclose(value, m.least_squares(w))
    np.testing.assert_allclose(g, numeric(m.least_squares, w), rtol=1e-6, atol=1e-6)


def test_out_arrays_that_are_arrays_the_function_reads_are_refused():
    """out= given a global the function reads (or a view of one, or of a closure's array):
    refused before anything is written (issue 29: accepted, and overwritten mid-call)."""
    w = np.array([0.1, -0.2, 0.3])
    df = ys.simplegrad(m.least_squares, w)
    expected, saved = df(w), (m.SMALL.copy(), m.X.copy())
    for given, name in ((m.SMALL, "outside.SMALL"), (m.X[1], "outside.X")):
        with pytest.raises(ValueError, match=rf"out\[0\] shares memory with \S*{name}\b.*, which "
                                             "the function reads"):
            df(w, out=[given])
    np.testing.assert_array_equal(m.SMALL, saved[0]), np.testing.assert_array_equal(m.X, saved[1])
    value, g = df(w, out=[np.empty(3)])
    assert value == expected[0] and np.array_equal(g, expected[1])
    dg = ys.simplegrad(m.through_global_closure, w)
    A = m.objective.__closure__[0].cell_contents
    with pytest.raises(ValueError, match=r"shares memory with .*, which the function reads"):
        dg(w, out=[A[1]])
    np.testing.assert_allclose(dg(w, out=[np.empty(3)])[1],
                               numeric(m.through_global_closure, w), rtol=1e-6)


@BOTH
def test_a_global_changed_in_place_is_seen(buffers):
    w = np.array([0.1, -0.2, 0.3])
    df = ys.simplegrad(m.least_squares, w, buffers=buffers)
    saved = m.SMALL.copy(), m.X.copy()
    try:
        m.SMALL *= 3.0
        m.X[0] += 1.0
        value, g = df(w)
        assert np.isclose(value, m.least_squares(w))
        np.testing.assert_allclose(g, numeric(m.least_squares, w), rtol=1e-6, atol=1e-6)
    finally:
        m.SMALL[...], m.X[...] = saved


def test_a_global_of_another_shape_raises_a_guard_error_and_grad_compiles_again():
    w = np.array([0.1, -0.2, 0.3])
    df = ys.simplegrad(m.least_squares, w)
    saved = m.X
    try:
        m.X = np.ones((7, 3))
        with pytest.raises(ValueError, match=r"outside.X \(read at outside.py:22\), read from outside the function, was "
                                             r"float64\[50, 3\] .* is float64\[7, 3\] now"):
            df(w)
        m.Y = saved_y = m.Y
        m.Y = np.ones(7)
        value, g = ys.grad(m.least_squares, w)
        assert np.isclose(value, m.least_squares(w))
        np.testing.assert_allclose(g[0], numeric(m.least_squares, w), rtol=1e-6, atol=1e-6)
    finally:
        m.X, m.Y = saved, saved_y


@BOTH
def test_attributes_of_a_global_object(buffers):
    w = np.array([0.1, -0.2, 0.3])
    df = ys.simplegrad(m.with_config, w, buffers=buffers)
    assert "outside.cfg.W" in ys.source(df)
    np.testing.assert_allclose(df(w)[1], numeric(m.with_config, w), rtol=1e-6, atol=1e-6)
    m.cfg.W[0, 0] = 2.0
    try:
        np.testing.assert_allclose(df(w)[1], numeric(m.with_config, w), rtol=1e-6, atol=1e-6)
    finally:
        m.cfg.W[0, 0] = 0.5


def test_fields_of_a_global_object_are_not_pasted_stale():
    w = np.array([0.1, -0.2, 0.3])
    df = ys.simplegrad(m.with_config, w)
    text = ys.source(df)
    assert "shift = tests.programs.outside.cfg.shift" in text
    assert "if tests.programs.outside.cfg.power != 2:" in text
    try:
        m.cfg.shift = -1.5                  # a float field: read at call time
        assert df(w)[0] == m.with_config(w)
        np.testing.assert_allclose(df(w)[1], numeric(m.with_config, w), rtol=1e-6, atol=1e-6)
        m.cfg.power = 4                     # an int field: static, checked
        with pytest.raises(ValueError, match=r"outside.cfg.power \(read at outside.py:\d+\), read from outside the "
                                             r"function, was 2 .* is 4 now"):
            df(w)
        value, g = ys.grad(m.with_config, w)     # compiles for the new value
        assert value == m.with_config(w)
        np.testing.assert_allclose(g[0], numeric(m.with_config, w), rtol=1e-6, atol=1e-6)
    finally:
        m.cfg.shift, m.cfg.power = 0.25, 2


@BOTH
def test_a_closure_array_is_read_from_the_function(buffers):
    A = np.arange(12.0).reshape(4, 3)
    f = m.make_objective(A, np.ones(4))
    w = np.array([0.1, -0.2, 0.3])
    df = ys.simplegrad(f, w, buffers=buffers)
    assert "_fn.__closure__[0].cell_contents" in ys.source(df)
    np.testing.assert_allclose(df(w)[1], numeric(f, w), rtol=1e-6, atol=1e-6)
    A *= -2.0                                           # in place: seen
    np.testing.assert_allclose(df(w)[1], numeric(f, w), rtol=1e-6, atol=1e-6)
    other = m.make_objective(np.ones((4, 3)), np.zeros(4))     # same code, another closure
    np.testing.assert_allclose(ys.grad(other, w)[1][0], numeric(other, w), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ys.grad(f, w)[1][0], numeric(f, w), rtol=1e-6, atol=1e-6)


def test_the_unbound_closure_function_says_how_to_bind_it():
    f = m.make_objective(np.ones((4, 3)), np.zeros(4))
    df = ys.simplegrad(f, np.ones(3))
    raw = getattr(__import__(df.__module__), "objective_grad")
    with pytest.raises(TypeError, match=r"reads the closure of objective: call the function "
                                        r"that bind\(objective\) returns"):
        raw(np.ones(3))
    with pytest.raises(TypeError, match="bind: fn must be a function closing over A, b"):
        __import__(df.__module__).bind(m.least_squares)


def test_a_closure_reached_through_a_global():
    w = np.array([0.1, -0.2, 0.3])
    df = ys.simplegrad(m.through_global_closure, w)
    assert "outside.objective.__closure__[0].cell_contents" in ys.source(df)
    np.testing.assert_allclose(df(w)[1], numeric(m.through_global_closure, w), rtol=1e-6,
                               atol=1e-6)


@BOTH
def test_random_state_and_np_random_draws(buffers):
    mu, ls = np.array([0.1, 0.2, 0.3]), np.array([-0.1, 0.0, 0.1])
    df = ys.simplegrad(m.sampled, mu, ls, buffers=buffers)
    text = ys.source(df)
    assert "outside.rs.randn(4, 3)" in text and "xp.random.normal(size=(4, 3))" in text

    def seed():
        m.rs.seed(3)
        np.random.seed(4)
    seed()
    value, dmu, dls = df(mu, ls)
    seed()
    assert value == m.sampled(mu, ls)            # the same draws as the function's
    np.testing.assert_allclose(dmu, numeric(lambda x: m.sampled(x, ls), mu, reset=seed),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dls, numeric(lambda x: m.sampled(mu, x), ls, reset=seed),
                               rtol=1e-6, atol=1e-6)
    assert df(mu, ls)[0] != df(mu, ls)[0]       # each call draws fresh numbers


def test_compiling_draws_none_of_the_users_numbers():
    m.rs.seed(7)
    np.random.seed(8)
    expected = m.sampled(np.zeros(3), np.zeros(3))
    m.rs.seed(7)
    np.random.seed(8)
    ys.clear_cache()
    value, _ = ys.grad(m.sampled, np.zeros(3), np.zeros(3))   # compiles, then runs
    assert value == expected


@BOTH
def test_generator_draws(buffers):
    mu = np.array([0.1, 0.2, 0.3])
    df = ys.simplegrad(m.sampled_generator, mu, buffers=buffers)
    assert "outside.rng.standard_normal((4, 3))" in ys.source(df)
    state = m.rng.bit_generator.state

    def seed():
        m.rng.bit_generator.state = state
    seed()
    value, g = df(mu)
    seed()
    assert value == m.sampled_generator(mu)
    np.testing.assert_allclose(g, numeric(m.sampled_generator, mu, reset=seed), rtol=1e-6,
                               atol=1e-6)
    assert df(mu)[0] != df(mu)[0]


def test_a_random_state_in_a_closure():
    f, local = m.make_sampled(0)
    mu = np.array([0.1, 0.2, 0.3])
    df = ys.simplegrad(f, mu)
    local.seed(5)
    value, g = df(mu)
    local.seed(5)
    assert value == f(mu)
    np.testing.assert_allclose(g, numeric(f, mu, reset=lambda: local.seed(5)), rtol=1e-6,
                               atol=1e-6)


def test_draws_refuse_traced_arguments_and_unreachable_generators():
    with pytest.raises(ys.UnsupportedSyntax, match="Reparameterize"):
        ys.simplegrad(m.draws_from_traced, np.zeros(3))
    with pytest.raises(ys.UnsupportedSyntax, match="Make the generator outside the function"):
        ys.simplegrad(m.makes_a_generator, np.zeros(3))


def test_an_int_that_picks_the_batch_compiles_once_for_300_iterations():
    ys.clear_cache()
    w = np.array([0.1, -0.2, 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ys.RecompileWarning)
        for it in range(300):
            value, g = ys.grad(m.autograd_objective, w, it)
            if it % 97 == 0:
                assert value == m.autograd_objective(w, it)
                np.testing.assert_allclose(
                    g[0], numeric(lambda x: m.autograd_objective(x, it), w), rtol=1e-6,
                    atol=1e-6)
    assert g[1] is None
    assert ys.cache_info()["misses"] == 1 and ys.cache_info()["hits"] == 299
    assert "type(it) is not int" in g.source


def test_a_run_time_int_slicing_a_differentiable_argument():
    ys.clear_cache()
    w = np.linspace(0.1, 1.0, 6)
    for i in (0, 2, 4, 2):
        value, g = ys.grad(m.window, w, i)
        assert value == m.window(w, i)
        np.testing.assert_allclose(g[0], numeric(lambda x: m.window(x, i), w), rtol=1e-6,
                                   atol=1e-6)
    value, g = ys.grad(m.window, w, 5)        # a shorter slice: guarded, compiled again
    np.testing.assert_allclose(g[0], numeric(lambda x: m.window(x, 5), w), rtol=1e-6, atol=1e-6)
    assert ys.cache_info()["misses"] == 2


def test_an_int_the_code_needs_at_compile_time_is_static_and_warns_once():
    ys.clear_cache()
    w = np.array([0.1, -0.2, 0.3])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(12):
            value, g = ys.grad(m.repeated, w, n)
            assert value == m.repeated(w, n)
    recompile = [c for c in caught if issubclass(c.category, ys.RecompileWarning)]
    assert len(recompile) == 1 and "int argument 'n'" in str(recompile[0].message)
    assert ys.cache_info()["misses"] == 12


def test_a_rebound_global_of_the_same_shape_is_read_without_compiling_again():
    ys.clear_cache()
    w = np.array([0.1, -0.2, 0.3])
    df = ys.simplegrad(m.least_squares, w)
    ys.grad(m.least_squares, w)
    saved = m.Y
    try:
        m.Y = saved + 1.0
        np.testing.assert_allclose(df(w)[1], numeric(m.least_squares, w), rtol=1e-6, atol=1e-6)
        value, g = ys.grad(m.least_squares, w)
        assert value == m.least_squares(w) and ys.cache_info()["misses"] == 1
    finally:
        m.Y = saved


def test_a_global_of_an_ndarray_subclass_fails_the_exact_type_check():
    w = np.array([0.1, -0.2, 0.3])
    df = ys.simplegrad(m.least_squares, w)
    saved = m.SMALL
    try:
        m.SMALL = np.ma.masked_array(saved)
        with pytest.raises(ValueError, match=r"outside.SMALL \(read at outside.py:\d+\), read from outside the function"):
            df(w)
    finally:
        m.SMALL = saved


def test_a_module_that_cannot_be_imported_by_name_says_so(tmp_path):
    import importlib.util
    path = tmp_path / "unregistered_model.py"
    path.write_text("import numpy as np\nBIG = np.ones(100)\n\n\n"
                    "def f(x):\n    return np.sum(x * BIG)\n")
    spec = importlib.util.spec_from_file_location("unregistered_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)                 # not put in sys.modules
    with pytest.raises(ys.StaticValueError, match=r"the global BIG .* cannot import by name"):
        ys.simplegrad(module.f, np.ones(100))


@BOTH
def test_a_global_list_of_arrays_is_read_item_by_item_and_its_length_checked(buffers):
    w = np.array([0.1, -0.2, 0.3])
    df = ys.simplegrad(m.through_layers, w, buffers=buffers)
    text = ys.source(df)
    assert "outside.LAYERS[1]" in text and "if len(tests.programs.outside.LAYERS) != 2:" in text
    assert "if tuple(tests.programs.outside.TABLES) != ('a', 'b'):" in text
    np.testing.assert_allclose(df(w)[1], numeric(m.through_layers, w), rtol=1e-6, atol=1e-6)
    m.LAYERS[1] = -np.ones((3, 3))              # an item replaced: read at call time
    try:
        np.testing.assert_allclose(df(w)[1], numeric(m.through_layers, w), rtol=1e-6,
                                   atol=1e-6)
        m.LAYERS.append(np.eye(3))              # the list grew: checked
        with pytest.raises(ValueError, match=r"len\(tests.programs.outside.LAYERS\) \(read at outside.py:\d+\), read from "
                                             r"outside the function, was 2 .* is 3 now"):
            df(w)
        value, g = ys.grad(m.through_layers, w)     # compiles for three layers
        assert value == m.through_layers(w)
    finally:
        del m.LAYERS[2:]
        m.LAYERS[1] = 0.5 * np.ones((3, 3))


def test_a_call_on_a_global_is_not_a_constant_its_size_is_checked():
    """``np.unique(LABELS)`` of a global read when the code runs is checked to have as many
    elements as when compiled (a call made of constants alone, np.meshgrid of np.arange,
    needs no check): changed in place to hold three labels, the code raises GuardError."""
    w = np.array([0.3, -0.4, 0.5])
    df = ys.simplegrad(m.labelled, w)
    assert np.isclose(df(w)[0], m.labelled(w))
    np.testing.assert_allclose(df(w)[1], numeric(m.labelled, w), rtol=1e-6, atol=1e-8)
    saved = m.LABELS.copy()
    try:
        m.LABELS[...] = [0, 1, 2, 0]
        with pytest.raises(ValueError, match="giving 2 elements") as raised:
            df(w)       # (the generated module's own GuardError, a ValueError)
        assert type(raised.value).__name__ == "GuardError"
    finally:
        m.LABELS[...] = saved


def test_type_of_a_list_read_from_a_closure_is_list():
    """``type(sizes)(...)`` rebuilds a list (autograd's test_nested_list, through its shim):
    the frontend's wrapper of a list read from outside is not the user's type."""
    sizes = [1.0, [2.0]]

    def rebuilt(x):
        parts = type(sizes)([x * sizes[0], x * sizes[1][0]])
        return np.sum(parts[0] + parts[1]) + (1.0 if type(sizes) is list else 0.0)
    value, (g,) = ys.grad(rebuilt, np.ones(2))
    assert value == 7.0
    np.testing.assert_array_equal(g, [3.0, 3.0])


# ----- a dict keyed by objects (autograd's convnet: WeightsParser keyed by its layers) ---------
class _Layer:
    pass


def _parsed_loss():
    layers = [_Layer(), _Layer()]
    where = {layers[0]: (slice(0, 2), (2,)), layers[1]: (slice(2, 5), (3,))}

    def loss(w):
        total = 0.0
        for layer in layers:
            idxs, shape = where[layer]
            total = total + np.sum(np.tanh(np.reshape(w[idxs], shape)))
        return total
    return loss, where, layers


def test_a_dict_keyed_by_objects_is_read_by_them_and_guarded_by_a_copy_that_keeps_them():
    loss, where, layers = _parsed_loss()
    w = np.linspace(-1.0, 1.0, 5)
    value, g = ys.grad(loss, w)
    assert np.isclose(value, loss(w)) and np.allclose(g[0], 1 - np.tanh(w) ** 2)
    where[layers[1]] = (slice(1, 5), (4,))          # changed in place: compiled again
    value, g = ys.grad(loss, w)
    assert np.isclose(value, loss(w)) and np.allclose(g[0][1], 2 * (1 - np.tanh(w[1]) ** 2))
