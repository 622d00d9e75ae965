"""Codegen: tape -> readable Python module text (emit.py, module.py) -> imported module (loader.py)."""
from .loader import cache_dir, load, module_name_for
from .module import function_name, write_module

__all__ = ["cache_dir", "load", "module_name_for", "function_name", "write_module"]
