"""`af.GraphOptions`, `af.OptimizerOptions`, `af.RewriterConfig`: TF1's switches for the graph optimisations.

These mirror the protos of tensorflow/core/protobuf/config.proto and rewriter_config.proto (same field
names, defaults and enum numbers), so `ConfigProto(graph_options=GraphOptions(...))` reads as in TF1, and
TF's own proto objects work too: `enabled_passes` only reads attributes.

TF1 optimises a graph twice: the classic optimizer (`OptimizerOptions`: common subexpression elimination
and constant folding, both on at the default `opt_level=L1`, which overrides `do_...=False`) and grappler
(`RewriterConfig`: one toggle per optimizer, all on by default, all off with `disable_meta_optimizer`).
asyncflow runs each pass once (exec/optimize.py); a pass is on when either optimizer of TF1 would do it:

  pass                          on when (grappler's X means: meta optimizer on and X != OFF)
  common_subexpression          opt_level L1, or do_common_subexpression_elimination, or grappler's
                                arithmetic_optimization and common_subgraph_elimination (TF1.15 deduplicated
                                inside the arithmetic optimizer; later versions have a toggle of its own)
  constant_folding              opt_level L1, or do_constant_folding, or grappler's constant_folding;
                                bounded by max_folded_constant_in_bytes (0: 10 MiB, TF's limit)
  identity                      grappler's dependency_optimization, or model pruning (not disable_model_pruning)
  arithmetic                    grappler's arithmetic_optimization (double negation, inverse transposes,
                                casts and reshapes to what the tensor already is)
  simplification                grappler's constant_folding (x*1, x/1, integer x+0, Tile by ones, Pad by
                                zeros, full Slice, no-op Squeeze/Reverse/Transpose, Split in one)

So everything is off with `GraphOptions(optimizer_options=OptimizerOptions(opt_level=OptimizerOptions.L0),
rewrite_options=RewriterConfig(disable_meta_optimizer=True))`, as in TF1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["GraphOptions", "OptimizerOptions", "RewriterConfig"]

DEFAULT_FOLD_LIMIT = 10 << 20  # TF's limit on a folded constant (both optimizers), bytes


class OptimizerOptions:
    """TF's `OptimizerOptions`: the classic graph optimizer's switches (config.proto)."""

    # Level
    L1 = 0  # the default: common subexpression elimination and constant folding
    L0 = -1  # no optimisations
    # GlobalJitLevel (accepted, asyncflow has no JIT)
    DEFAULT = 0
    OFF = -1
    ON_1 = 1
    ON_2 = 2

    def __init__(self, do_common_subexpression_elimination: bool = False, do_constant_folding: bool = False,
                 max_folded_constant_in_bytes: int = 0, do_function_inlining: bool = False, opt_level: int = L1,
                 global_jit_level: int = DEFAULT, cpu_global_jit: bool = False):
        self.do_common_subexpression_elimination = do_common_subexpression_elimination
        self.do_constant_folding = do_constant_folding
        self.max_folded_constant_in_bytes = max_folded_constant_in_bytes
        self.do_function_inlining = do_function_inlining
        self.opt_level = opt_level
        self.global_jit_level = global_jit_level
        self.cpu_global_jit = cpu_global_jit

    def __repr__(self) -> str:
        return f"OptimizerOptions({_fields(self)})"


class RewriterConfig:
    """TF's `RewriterConfig`: grappler's switches (rewriter_config.proto); unknown fields are kept, unused."""

    # Toggle
    DEFAULT = 0
    ON = 1
    OFF = 2
    AGGRESSIVE = 3
    EXPERIMENTAL_MLIR = 4
    EXPERIMENTAL_BOTH = 5
    # NumIterationsType
    DEFAULT_NUM_ITERS = 0
    ONE = 1
    TWO = 2
    # MemOptType
    DEFAULT_MEM_OPT = 0
    NO_MEM_OPT = 1
    MANUAL = 2
    HEURISTICS = 3
    SWAPPING_HEURISTICS = 4
    RECOMPUTATION_HEURISTICS = 5
    SCHEDULING_HEURISTICS = 6

    def __init__(self, constant_folding: int = DEFAULT, arithmetic_optimization: int = DEFAULT,
                 dependency_optimization: int = DEFAULT, common_subgraph_elimination: int = DEFAULT,
                 layout_optimizer: int = DEFAULT, shape_optimization: int = DEFAULT, remapping: int = DEFAULT,
                 loop_optimization: int = DEFAULT, function_optimization: int = DEFAULT,
                 debug_stripper: int = DEFAULT, disable_model_pruning: bool = False,
                 disable_meta_optimizer: bool = False, meta_optimizer_iterations: int = DEFAULT_NUM_ITERS,
                 min_graph_nodes: int = 0, memory_optimization: int = DEFAULT_MEM_OPT,
                 optimizers: Any = (), **other_fields: Any):
        self.constant_folding = constant_folding
        self.arithmetic_optimization = arithmetic_optimization
        self.dependency_optimization = dependency_optimization
        self.common_subgraph_elimination = common_subgraph_elimination
        self.layout_optimizer = layout_optimizer
        self.shape_optimization = shape_optimization
        self.remapping = remapping
        self.loop_optimization = loop_optimization
        self.function_optimization = function_optimization
        self.debug_stripper = debug_stripper
        self.disable_model_pruning = disable_model_pruning
        self.disable_meta_optimizer = disable_meta_optimizer
        self.meta_optimizer_iterations = meta_optimizer_iterations
        self.min_graph_nodes = min_graph_nodes
        self.memory_optimization = memory_optimization
        self.optimizers = list(optimizers)
        self.__dict__.update(other_fields)

    def __repr__(self) -> str:
        return f"RewriterConfig({_fields(self)})"


class GraphOptions:
    """TF's `GraphOptions`; as with a proto, its two messages exist from the start (set fields on them)."""

    def __init__(self, enable_recv_scheduling: bool = False, optimizer_options: OptimizerOptions | None = None,
                 build_cost_model: int = 0, build_cost_model_after: int = 0, infer_shapes: bool = False,
                 place_pruned_graph: bool = False, enable_bfloat16_sendrecv: bool = False, timeline_step: int = 0,
                 rewrite_options: RewriterConfig | None = None):
        self.enable_recv_scheduling = enable_recv_scheduling
        self.optimizer_options = optimizer_options if optimizer_options is not None else OptimizerOptions()
        self.build_cost_model = build_cost_model
        self.build_cost_model_after = build_cost_model_after
        self.infer_shapes = infer_shapes
        self.place_pruned_graph = place_pruned_graph
        self.enable_bfloat16_sendrecv = enable_bfloat16_sendrecv
        self.timeline_step = timeline_step
        self.rewrite_options = rewrite_options if rewrite_options is not None else RewriterConfig()

    def __repr__(self) -> str:
        return f"GraphOptions({_fields(self)})"


def _fields(obj: Any) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in vars(obj).items())


@dataclass(frozen=True)
class Passes:
    """Which of exec/optimize.py's passes run (see the module docstring for what turns each off)."""

    common_subexpression: bool = True
    constant_folding: bool = True
    identity: bool = True
    arithmetic: bool = True
    simplification: bool = True
    max_constant_bytes: int = DEFAULT_FOLD_LIMIT

    def any(self) -> bool:
        return self.common_subexpression or self.constant_folding or self.identity or self.arithmetic \
            or self.simplification


ALL_PASSES = Passes()
NO_PASSES = Passes(False, False, False, False, False)


def enabled_passes(options: Any) -> Passes:
    """The passes `options` allows: a GraphOptions (ours or TF's proto; attributes are read, so a proto's unset
    messages read as their defaults), a `Passes`, or None (TF1's defaults: every pass on)."""
    if options is None:
        return ALL_PASSES
    if isinstance(options, Passes):
        return options
    opt = getattr(options, "optimizer_options", None)
    rw = getattr(options, "rewrite_options", None)
    classic = int(_read(opt, "opt_level", OptimizerOptions.L1)) >= OptimizerOptions.L1
    meta = not _read(rw, "disable_meta_optimizer", False)

    def grappler(toggle: str) -> bool:
        return meta and int(_read(rw, toggle, RewriterConfig.DEFAULT)) != RewriterConfig.OFF

    limit = int(_read(opt, "max_folded_constant_in_bytes", 0))
    return Passes(
        common_subexpression=classic or bool(_read(opt, "do_common_subexpression_elimination", False))
        or (grappler("arithmetic_optimization") and grappler("common_subgraph_elimination")),
        constant_folding=classic or bool(_read(opt, "do_constant_folding", False)) or grappler("constant_folding"),
        identity=grappler("dependency_optimization") or (meta and not _read(rw, "disable_model_pruning", False)),
        arithmetic=grappler("arithmetic_optimization"),
        simplification=grappler("constant_folding"),
        max_constant_bytes=limit if limit > 0 else DEFAULT_FOLD_LIMIT,
    )


def _read(message: Any, name: str, default: Any) -> Any:
    return default if message is None else getattr(message, name, default)
