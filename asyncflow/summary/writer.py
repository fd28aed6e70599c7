"""`FileWriter` and `FileWriterCache`, as tf.compat.v1.summary: event files TensorBoard reads.

The file itself is written by TensorBoard's own `EventFileWriter` (a queue drained by a thread
into `events.out.tfevents.<time>.<host>.<pid>.<n>` records with masked CRC-32C), over TensorBoard's
protos; this module only builds the `Event`s as TF1's `SummaryToEventTransformer` does:
`add_summary` (a serialized `Summary` or the proto; a tag's `SummaryMetadata` is written the first
time the tag is seen only), `add_graph` (an `af.Graph` or a graph document, converted to a TF
`GraphDef` for the graph tab), `add_meta_graph`, `add_run_metadata` (tagged, each tag once),
`add_session_log`, `add_event`. `close` then `reopen` starts a new event file in the same
directory; writing while closed warns and writes nothing (TF1). The `tensorboard` extra is needed
from the first `FileWriter` on; `import asyncflow` does not load it.
"""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any

import numpy as np

from asyncflow.graph import Graph, get_default_graph
from asyncflow.summary.graph_def import graph_def_proto, meta_graph_proto, run_metadata_proto


def _event_pb2() -> Any:
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
    except ImportError:
        raise ImportError("af.summary.FileWriter writes with TensorBoard's library: "
                          "pip install 'asyncflow[tensorboard]'") from None
    return event_pb2, summary_pb2


def _as_proto(value: Any, cls: Any) -> Any:
    """`value` as TensorBoard's `cls`: serialized bytes, or any protobuf message of the same shape."""
    if isinstance(value, cls):
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bytes, np.bytes_)):
        return cls.FromString(bytes(value))
    if hasattr(value, "SerializeToString"):
        return cls.FromString(value.SerializeToString())
    raise TypeError(f"expected a {cls.__name__} proto or its serialized bytes, got {type(value).__name__}")


class FileWriter:
    """Writes `Summary` protos and graphs to an event file in `logdir` (see the module docstring)."""

    def __init__(self, logdir: str, graph: Any = None, max_queue: int = 10, flush_secs: float = 120,
                 graph_def: Any = None, filename_suffix: str | None = None, session: Any = None):
        del session  # TF writes through a session's summary ops there; asyncflow writes in this process
        self._logdir = str(logdir)
        self._max_queue, self._flush_secs, self._suffix = max_queue, flush_secs, filename_suffix or ""
        self._session_run_tags: set[str] = set()
        self._seen_summary_tags: set[str] = set()
        self._writer = self._open()
        self._closed = False
        if graph is not None or graph_def is not None:
            graph_proto = self._graph_proto(graph, graph_def)
            self._add_event(self._pb.Event(graph_def=graph_proto.SerializeToString()), None)
            self.add_meta_graph(meta_graph_proto(graph_proto))

    def _open(self) -> Any:
        self._pb, self._summary_pb = _event_pb2()
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        return EventFileWriter(self._logdir, self._max_queue, self._flush_secs, self._suffix)

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def get_logdir(self) -> str:
        return self._logdir

    # -- events ------------------------------------------------------------------------------------
    def _warn_if_closed(self) -> bool:
        if self._closed:
            warnings.warn("Attempting to use a closed FileWriter. The operation will be a noop unless the "
                          "FileWriter is explicitly reopened.", stacklevel=3)
        return self._closed

    def _add_event(self, event: Any, global_step: Any) -> None:
        if self._warn_if_closed():
            return
        event.wall_time = time.time()
        if global_step is not None:
            event.step = int(global_step)
        self._writer.add_event(event)

    def add_event(self, event: Any) -> None:
        """Writes an `Event` as it is (its wall time and step included)."""
        if not self._warn_if_closed():
            self._writer.add_event(_as_proto(event, self._pb.Event))

    def add_summary(self, summary: Any, global_step: Any = None) -> None:
        """Writes a `Summary` (serialized, as a summary op returns it, or the proto) at `global_step`."""
        summary = _as_proto(summary, self._summary_pb.Summary)
        for value in summary.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")  # TensorBoard needs a tag's metadata once per run
            else:
                self._seen_summary_tags.add(value.tag)
        self._add_event(self._pb.Event(summary=summary), global_step)

    def add_session_log(self, session_log: Any, global_step: Any = None) -> None:
        self._add_event(self._pb.Event(session_log=_as_proto(session_log, self._pb.SessionLog)), global_step)

    @staticmethod
    def _graph_proto(graph: Any, graph_def: Any) -> Any:
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        given = graph if graph is not None else graph_def
        if isinstance(given, (Graph, dict)):
            return graph_def_proto(given)
        if hasattr(given, "SerializeToString") and hasattr(given, "node"):
            from tensorboard.compat.proto import graph_pb2

            return _as_proto(given, graph_pb2.GraphDef)
        raise TypeError("The passed graph must be an instance of `Graph` or the deprecated `GraphDef`")

    def add_graph(self, graph: Any, global_step: Any = None, graph_def: Any = None) -> None:
        """Writes the graph for TensorBoard's graph tab (an `af.Graph`, a graph document or a GraphDef)."""
        proto = self._graph_proto(graph, graph_def)
        self._add_event(self._pb.Event(graph_def=proto.SerializeToString()), global_step)

    def add_meta_graph(self, meta_graph_def: Any, global_step: Any = None) -> None:
        """Writes a `MetaGraphDef` (the proto, or asyncflow's meta graph document with its `graph_def`)."""
        if isinstance(meta_graph_def, dict) and "graph_def" in meta_graph_def:
            meta_graph_def = meta_graph_proto(graph_def_proto(meta_graph_def["graph_def"]))
        if not (hasattr(meta_graph_def, "SerializeToString") and hasattr(meta_graph_def, "graph_def")):
            raise TypeError(f"meta_graph_def must be type MetaGraphDef, saw type: {type(meta_graph_def)}")
        self._add_event(self._pb.Event(meta_graph_def=meta_graph_def.SerializeToString()), global_step)

    def add_run_metadata(self, run_metadata: Any, tag: str, global_step: Any = None) -> None:
        """Writes a step's RunMetadata under `tag` (once per tag), for the graph tab's per-step view."""
        if tag in self._session_run_tags:
            raise ValueError("The provided tag was already used for this event type")
        self._session_run_tags.add(tag)
        tagged = self._pb.TaggedRunMetadata(tag=tag, run_metadata=run_metadata_proto(run_metadata).SerializeToString())
        self._add_event(self._pb.Event(tagged_run_metadata=tagged), global_step)

    # -- the file ----------------------------------------------------------------------------------
    def flush(self) -> None:
        """Writes what is queued to disk."""
        if not self._warn_if_closed():
            self._writer.flush()

    def close(self) -> None:
        """Flushes and closes the event file; `reopen` starts a new one."""
        if not self._closed:
            self._writer.close()
        self._closed = True

    def reopen(self) -> None:
        """After `close`: a new event file in the same directory (a no-op while open)."""
        if self._closed:
            self._writer = self._open()
            self._closed = False


class FileWriterCache:
    """One `FileWriter` per directory, shared by the hooks of a process (TF1's `SummaryWriterCache`)."""

    _cache: dict[str, FileWriter] = {}
    _lock = threading.RLock()

    @staticmethod
    def clear() -> None:
        """Closes and forgets every cached writer."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache = {}

    @staticmethod
    def get(logdir: str) -> FileWriter:
        """The writer for `logdir`, made (with the default graph) on first use."""
        with FileWriterCache._lock:
            if logdir not in FileWriterCache._cache:
                FileWriterCache._cache[logdir] = FileWriter(logdir, graph=get_default_graph())
            return FileWriterCache._cache[logdir]


__all__ = ["FileWriter", "FileWriterCache"]
