"""Cluster helpers, as tf.train: `ClusterSpec`, `Server`, `replica_device_setter` and its strategies.

`ClusterSpec`, the job -> task -> "host:port" map, lives in `asyncflow.cluster` (the distributed
runtime uses it too, and must not import this module); it is re-exported here as TF's name.
`Server(cluster, job_name, task_index)`
runs one task of the cluster, worker and master API together, inside this process (on its own
event-loop thread); its `target` is what `af.Session(target)` connects to.
`replica_device_setter` returns the device function that puts variables on the ps tasks
(round-robin, or `GreedyLoadBalancingStrategy` by bytes) and everything else on the worker.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from asyncflow.cluster import ClusterSpec
from asyncflow.device import DeviceSpec


# -- running a task in this process ---------------------------------------------------------------------
class Server:
    """`af.train.Server(cluster, job_name, task_index)`: one task (worker and master API) in this process.

    It serves on its own event-loop thread until `stop()`; `target` is the `http://host:port` a
    Session connects to. `config` may be a dict with `host` (bind address, default 127.0.0.1),
    `token` (the cluster token; default `ASYNCFLOW_TOKEN`) and `heartbeat_timeout_s`.
    """

    def __init__(self, server_or_cluster_def: Any, job_name: str | None = None, task_index: int | None = None,
                 protocol: str | None = None, config: Any = None, start: bool = True):
        if protocol not in (None, "http", "grpc"):
            raise ValueError(f"Server protocol {protocol!r}: asyncflow serves HTTP")
        self._cluster = ClusterSpec(server_or_cluster_def)
        jobs = self._cluster.jobs
        if job_name is None:
            if len(jobs) != 1:
                raise ValueError(f"Server needs a job_name: the cluster has jobs {jobs}")
            job_name = jobs[0]
        if task_index is None:
            indices = self._cluster.task_indices(job_name)
            if len(indices) != 1:
                raise ValueError(f"Server needs a task_index: job {job_name!r} has tasks {indices}")
            task_index = indices[0]
        self._job, self._task = job_name, int(task_index)
        self._address = self._cluster.task_address(self._job, self._task)
        self._config = dict(config or {}) if isinstance(config, Mapping) or config is None else {}
        self._thread: Any = None
        self._loop: Any = None
        self._server: Any = None
        if start:
            self.start()

    @property
    def target(self) -> str:
        host, _, port = self._address.rpartition(":")
        return f"http://{'127.0.0.1' if host == 'localhost' else host}:{port}"

    @property
    def server_def(self) -> dict[str, Any]:
        return {"cluster": self._cluster.as_dict(), "job_name": self._job, "task_index": self._task,
                "protocol": "http"}

    def start(self) -> None:
        """Starts serving (once); raises what binding raised (a busy port: OSError)."""
        import asyncio
        import threading

        from asyncflow.net.auth import load_token
        from asyncflow.net.server import ServerOptions, TaskServer

        if self._thread is not None:
            return
        options = ServerOptions(host=self._config.get("host", "127.0.0.1"),
                                token=self._config.get("token") or load_token(),
                                heartbeat_timeout_s=float(self._config.get("heartbeat_timeout_s", 10.0)))
        if isinstance(options.token, str):
            options.token = options.token.encode()
        started = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop

            async def main() -> None:
                self._server = TaskServer(self._cluster, self._job, self._task, options)
                try:
                    await self._server.start()
                except BaseException as e:  # noqa: BLE001 - handed to the starting thread
                    failure.append(e)
                    await self._server.stop()
                    started.set()
                    return
                started.set()
                await self._server.stopped.wait()
                await self._server.stop()

            try:
                loop.run_until_complete(main())
            finally:
                loop.close()

        self._thread = threading.Thread(target=serve, name=f"asyncflow-server-{self._job}-{self._task}", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]

    def join(self) -> None:
        """Blocks until the server stops (`stop()`, or a cluster shutdown)."""
        if self._thread is not None:
            self._thread.join()

    def stop(self) -> None:
        """Stops serving and releases the port."""
        if self._thread is None or self._server is None:
            return
        loop = self._loop
        try:
            loop.call_soon_threadsafe(self._server.stopped.set)
        except RuntimeError:
            pass  # the loop is already closed
        self._thread.join(timeout=30)

    @staticmethod
    def create_local_server(config: Any = None, start: bool = True) -> Server:
        """A one-task cluster (`localhost`) on a free port of 127.0.0.1, as TF's."""
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return Server({"localhost": [f"127.0.0.1:{port}"]}, "localhost", 0, config=config, start=start)


# -- device functions ------------------------------------------------------------------------------------
STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
                   "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp")


class _RoundRobinStrategy:
    """Assigns ps ops to tasks 0, 1, ..., n-1, 0, ... in creation order."""

    def __init__(self, num_tasks: int):
        self._num_tasks = num_tasks
        self._next = 0

    def __call__(self, op: Any) -> int:
        task = self._next
        self._next = (self._next + 1) % self._num_tasks
        return task


def byte_size_load_fn(op: Any) -> float:
    """The load of a variable op: the bytes of its value (its `shape` attr and dtype), as TF's."""
    shape = op.get_attr("shape") if "shape" in op.attrs else None
    out = op.outputs[0] if op.outputs else None
    if shape is None and out is not None:
        shape = out.shape
    dims = getattr(shape, "as_list", lambda: None)() if shape is not None else None
    if dims is None or any(d is None for d in dims):
        raise ValueError(f"byte_size_load_fn: variable '{op.name}' has no fully defined shape ({shape})")
    size = out.dtype.base_dtype.size if out is not None else 4
    return float(math.prod(dims) * size)


class GreedyLoadBalancingStrategy:
    """Puts each ps op on the ps task with the least load so far (`load_fn`: bytes by default)."""

    def __init__(self, num_tasks: int, load_fn: Callable[[Any], float] = byte_size_load_fn):
        if num_tasks <= 0:
            raise ValueError("GreedyLoadBalancingStrategy needs at least one task")
        self._loads = [0.0] * num_tasks
        self._load_fn = load_fn

    def __call__(self, op: Any) -> int:
        task = min(range(len(self._loads)), key=lambda i: (self._loads[i], i))
        self._loads[task] += self._load_fn(op)
        return task


class _ReplicaDeviceChooser:
    def __init__(self, ps_tasks: int, ps_device: str, worker_device: str, merge_devices: bool,
                 ps_ops: tuple[str, ...], ps_strategy: Callable[[Any], int]):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = ps_ops
        self._ps_strategy = ps_strategy

    def device_function(self, op: Any) -> str:
        if not self._merge_devices and op.device:
            return op.device
        current = DeviceSpec.from_string(op.device or "")
        if self._ps_tasks and self._ps_device and op.type in self._ps_ops:
            ps = DeviceSpec.from_string(self._ps_device)
            if ps.job and (not current.job or current.job == ps.job):
                ps = DeviceSpec(ps.job, ps.replica, self._ps_strategy(op), ps.device_type, ps.device_index)
            return ps.merge(current).to_string()
        return DeviceSpec.from_string(self._worker_device or "").merge(current).to_string()


def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps", worker_device: str = "/job:worker",
                          merge_devices: bool = True, cluster: Any = None, ps_ops: Any = None,
                          ps_strategy: Callable[[Any], int] | None = None) -> Callable[[Any], str] | None:
    """`af.train.replica_device_setter`: a device function for `af.device(...)`, None without ps tasks."""
    if cluster is not None:
        spec = ClusterSpec(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job or "ps"
        ps_tasks = spec.num_tasks(ps_job) if ps_job in spec.jobs else 0
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if not merge_devices:
        import warnings

        warnings.warn("DEPRECATION: It is recommended to set merge_devices=true in replica_device_setter",
                      stacklevel=2)
    strategy = ps_strategy if ps_strategy is not None else _RoundRobinStrategy(ps_tasks)
    if not callable(strategy):
        raise TypeError("ps_strategy must be callable")
    chooser = _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices, tuple(ps_ops), strategy)
    return chooser.device_function


__all__ = ["ClusterSpec", "Server", "replica_device_setter", "GreedyLoadBalancingStrategy", "byte_size_load_fn",
           "STANDARD_PS_OPS"]
