"""How the TF1 namespaces (`af.math`, `af.linalg`, `af.random`, `af.initializers`, `af.debugging`) get their
names: each lists TF1's names and, where TF1 renames a function, what it stands for (`linalg.inv` is
`matrix_inverse`); a name resolves to the package's own object (`af.<name>`, else `af.nn.<name>`), so
there is one implementation per function. Names asyncflow does not have are left out of the namespace
and listed in its `NOT_YET`, which the README's "Not yet" is checked against.
"""

from __future__ import annotations

import sys
from typing import Any


def _resolve(path: str) -> Any:
    obj: Any = sys.modules["asyncflow"]
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def bind(namespace: dict[str, Any], names: str, renames: dict[str, str] | None = None) -> list[str]:
    """Binds each of the space-separated TF1 `names` in `namespace`; returns those bound (its `__all__`)."""
    renames = renames or {}
    bound, missing = [], []
    for name in names.split():
        target = renames.get(name)
        value = _resolve(target) if target else (_resolve(name) or _resolve("nn." + name))
        if value is None:
            missing.append(name)
        else:
            namespace[name] = value
            bound.append(name)
    namespace["NOT_YET"] = tuple(missing)
    return bound
