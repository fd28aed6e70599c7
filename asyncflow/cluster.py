"""The cluster spec: which tasks each job has and where they listen (`ClusterSpec`).

Both the distributed runtime (`asyncflow.net`: servers, master, workers) and the training API
(`asyncflow.train`, which re-exports it as `af.train.ClusterSpec`) use it, so it sits below both;
it imports nothing of asyncflow. A spec is TF's list form `{"ps": ["h:p"]}` or the sparse dict
form `{"worker": {1: "h:p"}}`, checked when built (job names, task indices, "host:port"
addresses, no address used twice).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_JOB = re.compile(r"^[A-Za-z0-9_]+$")


def _check_address(job: str, index: int, address: Any) -> str:
    if not isinstance(address, str):
        raise ValueError(f"cluster spec: task {job}:{index} address must be a 'host:port' string, got {address!r}")
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"cluster spec: task {job}:{index} address {address!r} is not 'host:port' with a port "
                         f"in 1..65535")
    return address


class ClusterSpec:
    """`af.train.ClusterSpec(cluster)`: the tasks of each job and their addresses."""

    def __init__(self, cluster: Any):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        if not isinstance(cluster, Mapping):
            raise TypeError(f"ClusterSpec expects a dict of job name -> list or dict of addresses (or a "
                            f"ClusterSpec), got {type(cluster).__name__}")
        self._jobs: dict[str, dict[int, str]] = {}
        seen: dict[str, str] = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str) or not _JOB.match(job):
                raise ValueError(f"cluster spec: bad job name {job!r} (letters, digits and _ only)")
            if isinstance(tasks, (list, tuple)):
                items = dict(enumerate(tasks))
            elif isinstance(tasks, Mapping):
                items = {}
                for k, v in tasks.items():
                    if isinstance(k, str) and k.isdigit():
                        k = int(k)
                    if type(k) is not int or k < 0:
                        raise ValueError(f"cluster spec: job {job!r} has a bad task index {k!r}")
                    items[k] = v
            else:
                raise ValueError(f"cluster spec: job {job!r} must list its task addresses, got {tasks!r}")
            for index, address in items.items():
                _check_address(job, index, address)
                if address in seen:
                    raise ValueError(f"cluster spec: address {address} is used by both {seen[address]} and "
                                     f"{job}:{index}")
                seen[address] = f"{job}:{index}"
            self._jobs[job] = dict(sorted(items.items()))

    @classmethod
    def from_json(cls, text_or_path: str) -> ClusterSpec:
        """A spec from a JSON string or from the path of a JSON file; ValueError naming what is wrong."""
        import orjson

        text = text_or_path.strip()
        if not text.startswith("{"):
            try:
                with open(text_or_path, "rb") as f:
                    text = f.read().decode("utf-8")
            except OSError as e:
                raise ValueError(f"cluster spec {text_or_path!r} is neither JSON nor a readable file: "
                                 f"{e.strerror}") from None
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as e:
            raise ValueError(f"cluster spec is not valid JSON: {e}") from None
        if isinstance(data, dict) and "cluster" in data and isinstance(data["cluster"], dict):
            data = data["cluster"]  # ASYNCFLOW_CONFIG's shape
        return cls(data)

    def as_dict(self) -> dict[str, Any]:
        """Jobs with dense task indices as lists, sparse ones as dicts (TF's rule)."""
        out: dict[str, Any] = {}
        for job, tasks in self._jobs.items():
            dense = list(tasks) == list(range(len(tasks)))
            out[job] = list(tasks.values()) if dense else dict(tasks)
        return out

    @property
    def jobs(self) -> list[str]:
        return list(self._jobs)

    def num_tasks(self, job_name: str) -> int:
        return len(self._tasks(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        return list(self._tasks(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        tasks = self._tasks(job_name)
        if task_index not in tasks:
            raise ValueError(f"No task with index {task_index} in job {job_name}")
        return tasks[task_index]

    def job_tasks(self, job_name: str) -> list[str]:
        return list(self._tasks(job_name).values())

    def _tasks(self, job_name: str) -> dict[int, str]:
        if job_name not in self._jobs:
            raise ValueError(f"No such job in cluster: {job_name!r}")
        return self._jobs[job_name]

    def tasks(self) -> list[tuple[str, int, str]]:
        """(job, index, address) of every task, jobs in spec order."""
        return [(job, i, a) for job, tasks in self._jobs.items() for i, a in tasks.items()]

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __repr__(self) -> str:
        return f"ClusterSpec({self.as_dict()!r})"


__all__ = ["ClusterSpec"]
