"""`af.summary`, as `tf.compat.v1.summary`: summary ops and TensorBoard event files.

    loss_summary = af.summary.scalar("loss", loss)           # a string tensor: a serialized Summary
    merged = af.summary.merge_all()                           # every summary in GraphKeys.SUMMARIES
    writer = af.summary.FileWriter("logs/run1", sess.graph)   # the graph tab, then:
    writer.add_summary(sess.run(merged, feed), global_step=step)

Then `tensorboard --logdir logs`. The protos (`Summary`, `Event`, `SessionLog`, `SummaryMetadata`,
`SummaryDescription`, `TaggedRunMetadata`) are TensorBoard's own, loaded on first use of the name,
so `import asyncflow` works without the `tensorboard` extra. Where things live: `summary.py` (the
functions that build summary ops), `writer.py` (FileWriter, FileWriterCache), `graph_def.py` (graph
documents and RunMetadata as TF protos); the ops themselves are in asyncflow/ops/summary_ops.py.
"""

from typing import Any

from asyncflow.summary import summary as _summary
from asyncflow.summary import writer as _writer
from asyncflow.summary.summary import *
from asyncflow.summary.writer import *

_PROTOS = {"Summary": "summary_pb2", "SummaryDescription": "summary_pb2", "SummaryMetadata": "summary_pb2",
           "Event": "event_pb2", "SessionLog": "event_pb2", "TaggedRunMetadata": "event_pb2"}


def __getattr__(name: str) -> Any:
    module = _PROTOS.get(name)
    if module is None:
        raise AttributeError(f"module 'asyncflow.summary' has no attribute {name!r}")
    import importlib

    try:
        return getattr(importlib.import_module(f"tensorboard.compat.proto.{module}"), name)
    except ImportError:
        raise ImportError(f"af.summary.{name} is TensorBoard's proto: pip install 'asyncflow[tensorboard]'") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PROTOS))


__all__ = _summary.__all__ + _writer.__all__
