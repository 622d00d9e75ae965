from ._internal import internals

internals(globals(), "primitive", "defvjp", "defjvp", "defvjp_argnum", "defjvp_argnum",
          "def_linear", "vspace", "VSpace", "Box", "notrace_primitive", "SparseObject")
