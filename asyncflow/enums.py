"""TF1's option constants that programs pass by name: `af.UnconnectedGradients` and `af.AggregationMethod`
(for `af.gradients`), `af.VariableAggregation` and `af.VariableSynchronization` (for `af.Variable` and
`af.get_variable`, which accept and record nothing from them: there is no distribution strategy to obey).

UnconnectedGradients is a StrEnum, so its members are the very strings `af.gradients` checks
("none", "zero"), as TF's values are.
"""

from __future__ import annotations

import enum


class UnconnectedGradients(enum.StrEnum):
    """What `af.gradients` returns for an x that the ys do not depend on: None, or zeros."""

    NONE = "none"
    ZERO = "zero"


class AggregationMethod:
    """How `af.gradients` adds the gradients of a tensor used several times (asyncflow always uses AddN;
    the experimental methods give the same values)."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class VariableSynchronization(enum.Enum):
    """When a distributed variable is synchronised (TF1's values)."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How a distributed variable's updates are combined (TF1's values; ONLY_FIRST_TOWER is TF1's alias)."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3


__all__ = ["UnconnectedGradients", "AggregationMethod", "VariableSynchronization", "VariableAggregation"]
