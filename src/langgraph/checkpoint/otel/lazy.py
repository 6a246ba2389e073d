"""Names a package exports, imported on first use (PEP 562): importing the package loads none of
the modules behind them until one of its names is read."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any


def lazy_names(
    package: str, exports: Mapping[str, str | tuple[str, str]], public: Collection[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`.

    Args:
        package: the package's `__name__`.
        exports: public name -> the module under `package` that defines it (the attribute of
            the same name), or (module, attribute).
        public: the package's `__all__`.

    A name is imported when first read, then kept in the package's namespace.
    """

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = (target, name) if isinstance(target, str) else target
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *public})

    return __getattr__, __dir__
