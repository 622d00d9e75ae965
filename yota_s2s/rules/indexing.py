"""Indexing: ``x[key]`` and the accumulating update its gradient is made of.

The gradient of ``y = a[key]`` is ``da[key] += dy``. backward.py gathers every such
contribution to one array into a single buffer (one ``np.zeros`` per array, not one per
index), which is what makes element-by-element code like the seed polynomial cheap.
``index_add`` is that update as a primitive: in place on a buffer nobody else reads; the
generated code writes ``dx[2] += t`` for plain keys and ``np.add.at`` where integer-array keys
may repeat an index.
"""
import operator

import numpy as np

from .registry import diffrule, primitive, scatter_rule

primitive(operator.getitem, "a, key", name="getitem", emit=("getitem",), view=True)
scatter_rule(operator.getitem, "a")


def index_add(a, key, v):
    """``a[key] += v`` in place, accumulating repeated indices."""
    np.add.at(a, key, v)
    return a


primitive(index_add, "a, key, v", name="index_add", emit=("index_add",), inplace=True)
diffrule(index_add, "a", "dy")
diffrule(index_add, "v", "dy[key]")
