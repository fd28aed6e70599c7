"""The variable store behind `af.get_variable`: full name -> Variable or PartitionedVariable, per graph.

`_VariableStore.get_variable` applies TF1's reuse rules (see asyncflow/variable_scope.py, which owns
the scopes that feed it), creates single variables and the shards of partitioned ones
(asyncflow/partitioned_variables.py), picks the default initializer, and adds regularization losses.
"""

from __future__ import annotations

import enum
import inspect
import os
import traceback
from collections.abc import Callable
from typing import Any

from asyncflow import dtypes
from asyncflow.graph import GraphKeys, Tensor, add_to_collection, colocate_with, get_default_graph
from asyncflow.init_ops import GlorotUniform, Zeros
from asyncflow.ops import array
from asyncflow.ops.registry import convert_to_tensor
from asyncflow.partitioned_variables import (
    PartitionedVariable,
    SaveSliceInfo,
    _call_partitioner,
    _iter_slices,
    _PartitionInfo,
    _set_save_slice_info,
    _slice_dim_and_num_slices,
)
from asyncflow.shapes import as_shape, unknown_shape
from asyncflow.variables import Variable


class _ReuseMode(enum.Enum):
    """Mode for variable access within a variable scope."""

    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_traceback() -> list[traceback.FrameSummary]:
    """The last five frames outside asyncflow: where the user created a variable."""
    frames = [f for f in traceback.extract_stack() if not os.path.abspath(f.filename).startswith(_PACKAGE_DIR)]
    return frames[-5:]


# -- the store --------------------------------------------------------------------------------------------
class _VariableStore:
    """The variables `get_variable` created in one graph, by full name."""

    def __init__(self) -> None:
        self._vars: dict[str, Variable] = {}
        self._partitioned_vars: dict[str, PartitionedVariable] = {}
        self._created_at: dict[str, list[traceback.FrameSummary]] = {}

    def get_variable(self, name: str, shape: Any = None, dtype: Any = dtypes.float32, initializer: Any = None,
                     regularizer: Any = None, reuse: Any = None, trainable: bool | None = None,
                     collections: Any = None, caching_device: Any = None, partitioner: Any = None,
                     validate_shape: bool = True, use_resource: Any = None, custom_getter: Any = None,
                     constraint: Any = None, synchronization: Any = None, aggregation: Any = None) -> Any:
        dtype = dtypes.as_dtype(dtype).base_dtype
        trainable = True if trainable is None else trainable

        def _true_getter(name: str, shape: Any = None, dtype: Any = dtypes.float32, initializer: Any = None,
                         regularizer: Any = None, reuse: Any = None, trainable: bool | None = None,
                         collections: Any = None, caching_device: Any = None, partitioner: Any = None,
                         validate_shape: bool = True, use_resource: Any = None, constraint: Any = None,
                         synchronization: Any = None, aggregation: Any = None) -> Any:
            kwargs = dict(shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer, reuse=reuse,
                          trainable=trainable, collections=collections, validate_shape=validate_shape,
                          constraint=constraint)
            is_scalar = shape is not None and isinstance(shape, (list, tuple)) and not shape
            if partitioner is not None and not is_scalar:
                if not callable(partitioner):
                    raise ValueError(f"Partitioner must be callable, but received: {partitioner}")
                with get_default_graph().name_scope(None):
                    return self._get_partitioned_variable(name, partitioner, **kwargs)
            if reuse is True and name in self._partitioned_vars:
                return self._get_partitioned_variable(name, None, **kwargs)
            if f"{name}/part_0" in self._vars:
                raise ValueError(f"No partitioner was provided, but a partitioned version of the variable was found: "
                                 f"{name}/part_0. Perhaps a variable of the same name was already created with "
                                 f"partitioning?")
            return self._get_single_variable(name, **kwargs)

        args = dict(shape=shape, dtype=dtype, initializer=initializer, regularizer=regularizer, reuse=reuse,
                    trainable=trainable, collections=collections, caching_device=caching_device,
                    partitioner=partitioner, validate_shape=validate_shape, use_resource=use_resource,
                    synchronization=synchronization, aggregation=aggregation)
        if custom_getter is None:
            return _true_getter(name, constraint=constraint, **args)
        params = inspect.signature(custom_getter).parameters
        if "constraint" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            args["constraint"] = constraint
        return custom_getter(getter=_true_getter, name=name, **args)

    def _get_partitioned_variable(self, name: str, partitioner: Any, shape: Any = None,
                                  dtype: Any = dtypes.float32, initializer: Any = None, regularizer: Any = None,
                                  reuse: Any = None, trainable: bool | None = None, collections: Any = None,
                                  validate_shape: bool = True, constraint: Any = None) -> PartitionedVariable:
        """The shards of `name` (created, or found and checked), as TF1's `_get_partitioned_variable`."""
        from_tensor = isinstance(initializer, Tensor)
        if name in self._vars:
            raise ValueError(f"A partitioner was provided, but an unpartitioned version of the variable was found: "
                             f"{name}.  Perhaps a variable of the same name was already created without "
                             f"partitioning?")
        shape = as_shape(shape) if shape is not None else unknown_shape()
        if from_tensor:
            shape = shape.merge_with(initializer.shape)
        partitions = None
        if not reuse or partitioner:
            partitions = _call_partitioner(partitioner, shape, dtype)
        if name in self._partitioned_vars:
            if reuse is False:
                raise ValueError(f"Partitioned variable with name {name} already exists. Did you mean to set "
                                 f"reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
            existing = self._partitioned_vars[name]
            if not shape.is_compatible_with(existing.get_shape()):
                raise ValueError(f"Trying to reuse partitioned variable {name}, but specified shape {shape} and "
                                 f"found shape {existing.get_shape()}.")
            if dtype.base_dtype != existing.dtype.base_dtype:
                raise ValueError(f"Trying to reuse partitioned variable {name}, but specified dtype {dtype.name} "
                                 f"and found dtype {existing.dtype.name}.")
            if partitions is not None and existing._get_partitions() != partitions:
                raise ValueError(f"Trying to reuse partitioned variable {name}, but specified partitions "
                                 f"{partitions} and found partitions {existing._get_partitions()}.")
            return existing
        if reuse is True:
            raise ValueError(f"PartitionedVariable {name} does not exist, or was not created with "
                             f"tf.get_variable(). Did you mean to set reuse=False or reuse=tf.AUTO_REUSE in "
                             f"VarScope?")
        slice_dim, num_slices = _slice_dim_and_num_slices(partitions)
        if f"{name}/part_0" in self._vars:
            if f"{name}/part_{num_slices - 1}" not in self._vars:
                raise ValueError(f"Partitioner returned a different partitioning than what was already found.  "
                                 f"Partitioner returned {num_slices} shards, and shard {name}/part_0 was found, but "
                                 f"{name}/part_{num_slices - 1} was not.")
            if f"{name}/part_{num_slices}" in self._vars:
                raise ValueError(f"Partitioner returned a different partitioning than what was already found.  "
                                 f"Partitioner returned {num_slices} shards, and shard {name}/part_0 was found, but "
                                 f"so was the extra shard {name}/part_{num_slices}.")
        graph = get_default_graph()
        shards = []
        for i, (offset, var_shape) in enumerate(_iter_slices(shape.as_list(), num_slices, slice_dim)):
            info = _PartitionInfo(full_shape=shape.as_list(), var_offset=offset)
            shard_name = f"{name}/part_{i}"
            shard_dtype = dtype
            with graph.name_scope(shard_name + "/PartitionedInitializer"):
                if initializer is None:
                    init, init_shape = _default_initializer(name, dtype), var_shape
                elif callable(initializer):
                    init, init_shape = initializer, var_shape
                elif from_tensor:
                    init, init_shape = array.slice(initializer, offset, var_shape), None
                    shard_dtype = init.dtype.base_dtype
                else:
                    value = convert_to_tensor(initializer, dtype=dtype)
                    init, init_shape = array.slice(value, offset, var_shape), None
            with graph.name_scope(None):
                var = self._get_single_variable(
                    shard_name, shape=init_shape, dtype=shard_dtype, initializer=init, partition_info=info,
                    regularizer=regularizer, reuse=reuse, trainable=trainable, collections=collections,
                    validate_shape=validate_shape, constraint=constraint)
            _set_save_slice_info(var, SaveSliceInfo(name, shape.as_list(), offset, var_shape))
            shards.append(var)
        partitioned = PartitionedVariable(name=name, shape=shape, dtype=dtype, variable_list=shards,
                                          partitions=partitions)
        self._partitioned_vars[name] = partitioned
        return partitioned

    def _get_single_variable(self, name: str, shape: Any = None, dtype: Any = dtypes.float32,
                             initializer: Any = None, regularizer: Any = None, partition_info: Any = None,
                             reuse: Any = None, trainable: bool | None = None, collections: Any = None,
                             validate_shape: bool = True, constraint: Any = None) -> Variable:
        """One Variable (a whole variable or a shard), created or found, as TF1's `_get_single_variable`."""
        from_value = initializer is not None and not callable(initializer)
        if shape is not None and from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dtype = dtypes.as_dtype(dtype)
        if shape is not None:
            shape = as_shape(shape)
        if name in self._vars:
            if reuse is False:
                where = "".join(traceback.format_list(self._created_at.get(name, [])))
                raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to set reuse=True or "
                                 f"reuse=tf.AUTO_REUSE in VarScope? Originally defined at:\n\n{where}")
            found = self._vars[name]
            if shape is not None and not shape.is_compatible_with(found.get_shape()):
                raise ValueError(f"Trying to share variable {name}, but specified shape {shape} and found shape "
                                 f"{found.get_shape()}.")
            if dtype.base_dtype != found.dtype.base_dtype:
                raise ValueError(f"Trying to share variable {name}, but specified dtype {dtype.name} and found "
                                 f"dtype {found.dtype.name}.")
            return found
        if reuse is True:
            raise ValueError(f"Variable {name} does not exist, or was not created with tf.get_variable(). Did you "
                             f"mean to set reuse=tf.AUTO_REUSE in VarScope?")
        if initializer is None:
            if shape is None:
                raise ValueError(f"Variable {name} did not get an initializer, so its `shape` argument must be "
                                 f"specified.")
            initializer = _default_initializer(name, dtype)
        if from_value:
            init_val, variable_dtype = initializer, None
        else:
            if inspect.isclass(initializer):
                initializer = initializer()
            if shape is not None and shape.is_fully_defined():
                dims, init_fn = shape.as_list(), initializer
                if _accepts(initializer, "partition_info"):
                    def init_val() -> Any:
                        return init_fn(dims, dtype=dtype, partition_info=partition_info)
                else:
                    def init_val() -> Any:
                        return init_fn(dims, dtype=dtype)
                variable_dtype = dtype.base_dtype
            elif _needs_no_arguments(initializer):
                init_val, variable_dtype = initializer, None
            else:
                raise ValueError("The initializer passed is not valid. It should be a callable with no arguments "
                                 "and the shape should not be provided or an instance of "
                                 "`tf.keras.initializers.*' and `shape` should be fully defined.")
        graph = get_default_graph()
        with graph.init_scope():  # TF1 creates variables under init_scope, outside any loop or cond
            v = Variable(initial_value=init_val, name=name, trainable=trainable, collections=collections,
                         dtype=variable_dtype, validate_shape=validate_shape, constraint=constraint, shape=shape)
        self._vars[name] = v
        self._created_at[name] = _user_traceback()
        if regularizer:
            with colocate_with(v.op), graph.name_scope(name + "/Regularizer/"), graph.init_scope():
                loss = regularizer(v)
            if loss is not None:
                add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return v


def _default_initializer(name: str, dtype: dtypes.DType) -> Any:
    """glorot_uniform for floating variables, zeros for integer, bool and string ones (TF1's defaults)."""
    if dtype.is_floating:
        return GlorotUniform()
    if dtype.is_integer or dtype.is_unsigned or dtype.is_bool or dtype.base_dtype == dtypes.string:
        return Zeros()
    raise ValueError(f"An initializer for variable {name} of {dtype.base_dtype} is required")


def _accepts(fn: Callable[..., Any], arg: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return arg in params


def _needs_no_arguments(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not inspect.Parameter.empty or p.kind in (inspect.Parameter.VAR_POSITIONAL,
                                                                        inspect.Parameter.VAR_KEYWORD)
               for p in params)
