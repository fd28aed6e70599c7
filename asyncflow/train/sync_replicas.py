"""`af.train.SyncReplicasOptimizer`: synchronous SGD with backup workers, TF1's mechanism.

Every variable gets a ConditionalAccumulator on its own device (shared by name across replicas).
A replica's step applies its gradients to the accumulators, tagged with its local step, then
takes a token from the sync token queue; the token is the global step its next gradients will be
computed against. The chief's queue runner runs the sync op: take the mean of
`replicas_to_aggregate` gradients from each accumulator, apply it with the wrapped optimizer
(which advances the global step), and put `total_num_replicas` new tokens in the queue. With
`total_num_replicas > replicas_to_aggregate` the extra replicas are backups: their gradients
arrive late, carry an old step, and are dropped by the accumulator.

Beyond TF1, the dropped gradients are counted: `dropped_gradients` is an int64 tensor (how many
replica gradients the accumulators have dropped as stale), and the session hook logs it with the step, because
TF1 users could never tell when their gradients were thrown away.

Also beyond TF1, the hook keeps a quorum. The accumulators count gradients, not replicas (TF1's
mechanism: a replica that takes a token left by another computes a second gradient for the same
step, and it counts), so in TF1 a lone survivor of a crash goes on training with its own gradients
standing in for the dead replicas'. Here, before each step, the hook asks the master which tasks
of the replica's job its heartbeats see alive (at most every `QUORUM_CHECK_S`): with fewer than
`replicas_to_aggregate`, it waits up to `QUORUM_WAIT_S` for a restart and then fails the step with
`UnavailableError` naming the dead tasks, which `MonitoredTrainingSession` answers by recreating
the session and trying again, so training resumes once enough replicas are back. A task counts as
dead once it has been silent for the master's heartbeat timeout.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from asyncflow import dtypes, errors
from asyncflow.device import DeviceSpec
from asyncflow.gradients import IndexedSlices
from asyncflow.graph import GraphKeys, colocate_with, control_dependencies, device, name_scope
from asyncflow.ops.array import fill, identity, stack
from asyncflow.ops.control import group, no_op
from asyncflow.ops.math import cast, reduce_max
from asyncflow.ops.state import assign
from asyncflow.train.hooks import SessionRunArgs, SessionRunHook
from asyncflow.train.optimizer import Optimizer
from asyncflow.variables import Variable, report_uninitialized_variables

log = logging.getLogger("asyncflow.train")

QUORUM_CHECK_S = 0.5  # how often the hook asks the master which replicas are alive
QUORUM_WAIT_S = 1.0  # how long it waits for enough of them before failing the step


class SyncReplicasOptimizer(Optimizer):
    """Wraps `opt` so that each update is the mean of `replicas_to_aggregate` replicas' gradients."""

    def __init__(self, opt: Optimizer, replicas_to_aggregate: int, total_num_replicas: int | None = None,
                 variable_averages: Any = None, variables_to_average: Any = None, use_locking: bool = False,
                 name: str = "sync_replicas"):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        if replicas_to_aggregate < 1 or total_num_replicas < 1:
            raise ValueError("replicas_to_aggregate and total_num_replicas must be positive")
        super().__init__(use_locking, name)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._gradients_applied = False
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulators: list[Any] = []
        self.local_step_init_op = None
        self.chief_init_op = None
        self.ready_for_local_init_op = None
        self.dropped_gradients = None

    def compute_gradients(self, *args: Any, **kwargs: Any) -> list[tuple[Any, Any]]:
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: str | None = None) -> Any:
        from asyncflow.ops.data_flow import FIFOQueue
        from asyncflow.ops.data_flow_accumulators import ConditionalAccumulator, SparseConditionalAccumulator
        from asyncflow.train.queue_runner import QueueRunner

        grads_and_vars = [(g, v) for g, v in grads_and_vars]
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        self._global_step = global_step
        # The local step is this replica's own, on its worker (TF1 colocates it with a local anchor op): on
        # the PS it would be one variable shared by name by every replica, and a straggler's gradient would be
        # tagged with the token another replica took last, never counted stale.
        local_anchor = no_op()
        with colocate_with(local_anchor), name_scope(""):
            self._local_step = Variable(0, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                                        dtype=global_step.dtype.base_dtype, name="sync_rep_local_step")
        self.local_step_init_op = assign(self._local_step, global_step)
        self.ready_for_local_init_op = report_uninitialized_variables(
            [v for v in _global_variables() if v is not self._local_step])
        train_ops, aggregated, dropped = [], [], []
        chief_init_ops = [self.local_step_init_op]  # as TF1: a chief started by a Supervisor sets its local step
        with name_scope(None, self._name):
            for grad, var in grads_and_vars:
                if grad is None:
                    aggregated.append(None)
                    continue
                with device(var.device):
                    shared = f"{var.name}/grad_accum"
                    if isinstance(grad, IndexedSlices):
                        accum = SparseConditionalAccumulator(grad.dtype.base_dtype, shape=var.get_shape(),
                                                             shared_name=shared)
                        train_ops.append(accum.apply_indexed_slices_grad(grad, local_step=self._local_step))
                        aggregated.append(accum.take_indexed_slices_grad(self._replicas_to_aggregate))
                    else:
                        accum = ConditionalAccumulator(grad.dtype.base_dtype, shape=var.get_shape(),
                                                       shared_name=shared)
                        train_ops.append(accum.apply_grad(grad, local_step=self._local_step))
                        aggregated.append(accum.take_grad(self._replicas_to_aggregate))
                    chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
                    dropped.append(accum.num_dropped())
                    self._accumulators.append(accum)
            # Every accumulator drops the same late replica's gradient: count replicas' gradients, not
            # variables' (the largest count, as a straggler may reach some accumulators in time).
            self.dropped_gradients = reduce_max(stack(dropped)) if len(dropped) > 1 else identity(dropped[0])
            with device(global_step.device), name_scope(""):
                update_op = self._opt.apply_gradients(
                    [(g, v) for g, (_, v) in zip(aggregated, grads_and_vars) if g is not None], global_step)
                token_queue = FIFOQueue(-1, global_step.dtype.base_dtype, shapes=(), name="sync_token_q",
                                        shared_name="sync_token_q")
                self._sync_token_queue = token_queue
                dummy_queue = FIFOQueue(1, dtypes.int32, shapes=(), name="dummy_queue", shared_name="dummy_queue")
                with control_dependencies(train_ops):
                    token = token_queue.dequeue()
                train_op = assign(self._local_step, token)
                with control_dependencies([update_op]):
                    tokens = fill([self._tokens_per_step], global_step)
                    sync_op = token_queue.enqueue_many((tokens,))
                self._chief_queue_runner = QueueRunner(dummy_queue, [sync_op])
        self.chief_init_op = group(*chief_init_ops)
        self._gradients_applied = True
        return train_op

    def get_chief_queue_runner(self) -> Any:
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens: int = -1) -> Any:
        """Puts the first tokens in the queue (the chief runs it once): by default one per backup."""
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) vs {needed} (needed)")
        if num_tokens <= 0:
            return None
        with device(self._global_step.device), name_scope(""):
            return self._sync_token_queue.enqueue_many((fill([num_tokens], self._global_step),))

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> list[str]:
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list[Any]:
        return self._opt.variables()

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> SessionRunHook:
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


def _global_variables() -> list[Any]:
    from asyncflow.variables import global_variables

    return global_variables()


class _SyncReplicasOptimizerHook(SessionRunHook):
    """Initialises the local step, puts the first tokens in (chief), runs the chief's queue runner,
    and logs the dropped-gradient count whenever it changes."""

    def __init__(self, sync_optimizer: SyncReplicasOptimizer, is_chief: bool, num_tokens: int):
        self._opt = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens
        self.dropped = 0  # the last value seen
        self._job: str | None = None  # the replicas' job, from the local step's device
        self._next_check = 0.0

    def begin(self) -> None:
        opt = self._opt
        if not opt._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before using the hook.")
        if self._is_chief:
            self._local_init_op = group(opt.chief_init_op, opt.local_step_init_op)
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None
        self._dropped = cast(opt.dropped_gradients, dtypes.int64)
        device = opt._local_step.device
        self._job = DeviceSpec.from_string(device).job if device else None

    def after_create_session(self, session: Any, coord: Any) -> None:
        self._next_check = 0.0
        not_ready = session.run(self._opt.ready_for_local_init_op)
        if len(not_ready):
            raise RuntimeError(f"Init operations did not make model ready for SyncReplicasOptimizer local_init. "
                               f"Init op: {self._local_init_op.name}, error: variables not initialized: "
                               f"{[n.decode() if isinstance(n, bytes) else n for n in not_ready]}")
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)

    def before_run(self, run_context: Any) -> SessionRunArgs:
        self._check_quorum(run_context.session)
        return SessionRunArgs({"dropped": self._dropped, "step": self._opt._global_step})

    def _check_quorum(self, session: Any) -> None:
        """UnavailableError when fewer than replicas_to_aggregate tasks of the replicas' job are alive (see the
        module docstring); nothing to check in-process or without a job."""
        status = getattr(session, "_task_status", None)  # remote sessions only
        if status is None or self._job is None or time.monotonic() < self._next_check:
            return
        need = self._opt._replicas_to_aggregate
        deadline = time.monotonic() + QUORUM_WAIT_S
        while True:
            tasks = status()
            prefix = f"/job:{self._job}/"
            alive = [t for t in tasks["alive"] if t.startswith(prefix)]
            if len(alive) >= need:
                self._next_check = time.monotonic() + QUORUM_CHECK_S
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        dead = [t for t in tasks["dead"] if t.startswith(prefix)]
        err = errors.UnavailableError(
            None, None, f"SyncReplicasOptimizer aggregates {need} replicas' gradients per step but only "
                        f"{len(alive)} {self._job} task(s) are alive (down: {', '.join(dead) or 'none'}); the step "
                        f"waits for enough replicas instead of training on repeated gradients")
        err.task = dead[0] if dead else ""  # type: ignore[attr-defined]
        raise err

    def after_run(self, run_context: Any, run_values: Any) -> None:
        dropped = int(run_values.results["dropped"])
        if dropped != self.dropped:
            log.info("global_step %s: %d stale gradients dropped so far", run_values.results["step"], dropped)
        self.dropped = dropped


__all__ = ["SyncReplicasOptimizer"]
