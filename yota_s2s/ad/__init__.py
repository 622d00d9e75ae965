"""The AD engine: the reverse sweep (sweep.py) and its two uses, reverse mode (backward.py)
and forward mode (forward.py), and the derivatives of a loop region (regions.py) and of a
branch (branches.py) and a while loop (whiles.py).

The engine knows no region: regions.py registers the loop's structural rule in
``sweep.STRUCTURAL_RULES``, branches.py the branch's, whiles.py the while's, and they are imported here, so that whoever imports any module of
the engine (``from yota_s2s.ad.backward import backward``) has the rule registered.
"""
from . import regions  # noqa: F401  (registers the loop region's structural rule)
from . import branches  # noqa: F401  (registers the branch's structural rule)
from . import whiles  # noqa: F401  (registers the while's structural rule)
from . import branch_tangents  # noqa: F401  (registers the branch's JVP, forward mode)
from . import while_tangents  # noqa: F401  (registers the while's JVP, forward mode)
from . import unwind_tangents  # noqa: F401  (registers the unwind's JVP, forward mode)
from . import batch_regions  # noqa: F401  (registers the loop region's batching, ys.vmap)
from . import batch_branches  # noqa: F401  (registers the branch's batching, ys.vmap)
from . import batch_whiles  # noqa: F401  (registers the while's batching, ys.vmap)
