"""Derivative rules, one file per family, all registered in one ``RuleSet`` (``RULES``).

    operators.py    + - * / ** unary -, % and the piecewise-constant ones (// < == & ...)
    elementwise.py  numpy ufuncs, math functions on floats, abs/float, astype
    reductions.py   sum mean max min prod
    linalg.py       @ (matmul) and np.dot
    shape.py        reshape transpose expand_dims squeeze broadcast_to concatenate stack ...
    indexing.py     x[key] and the accumulating update behind its gradient
    creation.py     zeros ones full arange ... (no gradient)
    control.py      guards (no gradient)

The same ``diffrule``/``nodiff`` calls that users make register the built-ins, so these files
are also the examples to learn from.
"""
from . import control, creation, elementwise, indexing, linalg, operators, reductions, shape
from .registry import RULES, Rule, RuleSet, alias, diffrule, nodiff, primitive, scatter_rule

__all__ = ["RULES", "Rule", "RuleSet", "alias", "diffrule", "nodiff", "primitive", "scatter_rule",
           "control", "creation", "elementwise", "indexing", "linalg", "operators", "reductions",
           "shape"]
