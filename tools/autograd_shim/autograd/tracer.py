from ._internal import internals

internals(globals(), "primitive", "isbox", "getval", "Box", "trace", "notrace_primitive")
