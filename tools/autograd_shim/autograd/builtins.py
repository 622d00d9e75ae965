"""autograd's container constructors: plain Python containers hold traced values here."""
import builtins as _b

from ._internal import internals

list = _b.list  # noqa: A001
tuple = _b.tuple  # noqa: A001
dict = _b.dict  # noqa: A001
isinstance = _b.isinstance  # noqa: A001
type = _b.type  # noqa: A001
internals(globals(), "SequenceBox", "DictBox", "container_take")
