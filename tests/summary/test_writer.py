"""FileWriter's event files read back with TensorBoard's own EventAccumulator and event file loader:
scalars, histograms, images, audio, text, the graph tab, run metadata, and TF1's writer life cycle
(flush, close, reopen, FileWriterCache)."""

from __future__ import annotations

import io
import os
import warnings
import wave

import numpy as np
import pytest

import asyncflow as af
from tests.summary.reading import accumulator, event_files, events


def test_every_kind_of_summary_reads_back(tmp_path):
    rng = np.random.default_rng(3)
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [None], name="x")
        img = af.placeholder(af.uint8, [2, 4, 3, 3], name="img")
        clip = af.placeholder(af.float32, [1, 6], name="clip")
        af.summary.scalar("loss", af.reduce_mean(x))
        af.summary.histogram("weights", x, family="params")
        af.summary.image("pic", img, max_outputs=2)
        af.summary.audio("snd", clip, 16000, max_outputs=1)
        af.summary.text("notes", af.as_string(af.reduce_max(x)))
        merged = af.summary.merge_all()
        feeds, writer = [], af.summary.FileWriter(str(tmp_path), g)
        with af.Session() as sess:
            for step in range(3):
                feed = {x: rng.normal(step, 1.0, 200).astype(np.float32),
                        img: rng.integers(0, 256, (2, 4, 3, 3)).astype(np.uint8),
                        clip: rng.uniform(-1, 1, (1, 6)).astype(np.float32)}
                writer.add_summary(sess.run(merged, feed), global_step=step)
                feeds.append(feed)
        writer.close()

    acc = accumulator(tmp_path)
    tags = acc.Tags()
    assert tags["scalars"] == ["loss"] and tags["histograms"] == ["params/params/weights"]
    assert tags["images"] == ["pic/image/0", "pic/image/1"] and tags["audio"] == ["snd/audio"]
    assert tags["tensors"] == ["notes"] and tags["graph"] and tags["meta_graph"]
    scalars = acc.Scalars("loss")
    assert [s.step for s in scalars] == [0, 1, 2]
    np.testing.assert_allclose([s.value for s in scalars], [f[x].mean() for f in feeds], rtol=1e-6)
    for event, feed in zip(acc.Histograms("params/params/weights"), feeds):
        h, values = event.histogram_value, feed[x].astype(np.float64)
        assert h.num == 200 and (h.min, h.max) == (values.min(), values.max())
        edges = [-np.inf] + list(h.bucket_limit)  # numpy's counts between consecutive limits
        assert list(h.bucket) == [float(np.sum((values >= lo) & (values < hi))) for lo, hi in zip(edges, edges[1:])]
    from PIL import Image

    for i in range(2):
        for event, feed in zip(acc.Images(f"pic/image/{i}"), feeds):
            assert (event.height, event.width) == (4, 3)
            assert np.array_equal(np.asarray(Image.open(io.BytesIO(event.encoded_image_string))), feed[img][i])
    for event, feed in zip(acc.Audio("snd/audio"), feeds):
        assert (event.sample_rate, event.length_frames, event.content_type) == (16000, 6, "audio/wav")
        with wave.open(io.BytesIO(event.encoded_audio_string)) as w:
            got = np.frombuffer(w.readframes(6), "<i2")
        want = np.clip(np.floor(np.abs(feed[clip][0].astype(np.float64) * 32768) + 0.5) * np.sign(feed[clip][0]),
                       -32768, 32767)
        assert got.tolist() == want.astype(int).tolist()
    from tensorboard.util import tensor_util

    texts = [tensor_util.make_ndarray(e.tensor_proto)[()] for e in acc.Tensors("notes")]
    assert [float(t) for t in texts] == pytest.approx([f[x].max() for f in feeds], rel=1e-5)


def test_graph_tab_gets_the_graph_def(tmp_path):
    with af.Graph().as_default() as g:
        with af.device("/cpu:0"):
            x = af.placeholder(af.float32, [None, 3], name="x")
        w = af.Variable(af.ones([3, 2]), name="w")
        y = af.matmul(x, w, name="y")
        with af.control_dependencies([y]):
            done = af.no_op(name="done")
        big = af.constant(np.zeros(5000, np.float32), name="big")
        with af.summary.FileWriter(str(tmp_path)) as writer:
            writer.add_graph(g)
    graph = accumulator(tmp_path).Graph()
    nodes = {n.name: n for n in graph.node}
    assert set(g.as_graph_def()["node"][i]["name"] for i in range(len(g.get_operations()))) == set(nodes)
    assert nodes["y"].op == "MatMul" and list(nodes["y"].input) == ["x", "w/read"]
    assert list(nodes["done"].input) == ["^y"]
    assert nodes["x"].device == "/device:CPU:0"
    assert nodes["x"].attr["dtype"].type == 1  # DT_FLOAT
    assert [d.size for d in nodes["x"].attr["shape"].shape.dim] == [-1, 3]
    assert [[d.size for d in s.dim] for s in nodes["y"].attr["_output_shapes"].list.shape] == [[-1, 2]]
    assert nodes["w"].attr["_output_shapes"].list.shape[0].dim[1].size == 2
    ones = nodes["ones"].attr["value"].tensor
    from tensorboard.util import tensor_util

    assert tensor_util.make_ndarray(ones).tolist() == np.ones([3, 2]).tolist()
    # a large constant keeps its dtype and shape but not its values
    value = nodes["big"].attr["value"].tensor
    assert [d.size for d in value.tensor_shape.dim] == [5000] and not value.tensor_content
    assert big.op.name == "big" and done.type == "NoOp"


def test_graph_given_to_the_constructor_writes_graph_and_meta_graph(tmp_path):
    with af.Graph().as_default() as g:
        af.constant(1.0, name="c")
        af.summary.FileWriter(str(tmp_path), graph=g).close()
    kinds = [e.WhichOneof("what") for e in events(tmp_path)]
    assert kinds == ["file_version", "graph_def", "meta_graph_def"]
    acc = accumulator(tmp_path)
    assert [n.name for n in acc.Graph().node] == ["c"] and [n.name for n in acc.MetaGraph().graph_def.node] == ["c"]


def test_add_graph_refuses_bad_arguments(tmp_path):
    with af.Graph().as_default() as g, af.summary.FileWriter(str(tmp_path)) as writer:
        with pytest.raises(ValueError, match="Please pass only graph, or graph_def"):
            writer.add_graph(g, graph_def=g.as_graph_def())
        with pytest.raises(TypeError, match="must be an instance of `Graph`"):
            writer.add_graph("graph")
        writer.add_graph(None, graph_def=g.as_graph_def())  # a graph document is accepted as graph_def too


def test_run_metadata_is_written_tagged_once(tmp_path):
    with af.Graph().as_default():
        x = af.constant([1.0, 2.0], name="x")
        y = af.multiply(x, 2.0, name="y")
        meta = af.RunMetadata()
        with af.Session() as sess:
            sess.run(y, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE), run_metadata=meta)
        with af.summary.FileWriter(str(tmp_path)) as writer:
            writer.add_run_metadata(meta, "step1", global_step=4)
            with pytest.raises(ValueError, match="The provided tag was already used for this event type"):
                writer.add_run_metadata(meta, "step1")
    acc = accumulator(tmp_path)
    assert acc.Tags()["run_metadata"] == ["step1"]
    stats = acc.RunMetadata("step1").step_stats
    names = {n.node_name for dev in stats.dev_stats for n in dev.node_stats}
    assert "y" in names and all(dev.device for dev in stats.dev_stats)
    assert [e.step for e in events(tmp_path) if e.HasField("tagged_run_metadata")] == [4]


def test_flush_close_reopen_and_logdir(tmp_path):
    from asyncflow.summary import SessionLog, Summary

    writer = af.summary.FileWriter(str(tmp_path / "run"), flush_secs=600)
    assert writer.get_logdir() == str(tmp_path / "run") and os.path.isdir(tmp_path / "run")
    writer.add_summary(Summary(value=[Summary.Value(tag="a", simple_value=1.0)]), 3)
    writer.add_session_log(SessionLog(status=SessionLog.START), 1)
    writer.flush()  # on disk now, before close
    written = [(e.step, e.WhichOneof("what")) for e in events(tmp_path / "run")]
    assert written[1:] == [(3, "summary"), (1, "session_log")]
    writer.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer.add_summary(Summary(value=[Summary.Value(tag="b", simple_value=1.0)]), 4)  # closed: a no-op
    assert "closed FileWriter" in str(caught[0].message)
    writer.reopen()
    writer.add_summary(Summary(value=[Summary.Value(tag="c", simple_value=2.0)]).SerializeToString(), 5)
    writer.close()
    assert len(event_files(tmp_path / "run")) == 2  # reopen starts a new file
    acc = accumulator(tmp_path / "run")
    assert sorted(acc.Tags()["scalars"]) == ["a", "c"]
    assert [(s.step, s.value) for s in acc.Scalars("c")] == [(5, 2.0)]


def test_add_event_and_metadata_once_per_tag(tmp_path):
    from asyncflow.summary import Event, Summary

    with af.Graph().as_default():
        text = af.summary.text("t", af.constant("hi"))
        with af.Session() as sess:
            value = sess.run(text)
    with af.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(value, 1)
        writer.add_summary(value, 2)
        writer.add_event(Event(step=9, wall_time=1.0, summary=Summary(value=[Summary.Value(tag="e", simple_value=3)])))
    summaries = [e for e in events(tmp_path) if e.HasField("summary")]
    assert [e.summary.value[0].HasField("metadata") for e in summaries[:2]] == [True, False]
    assert (summaries[2].step, summaries[2].wall_time) == (9, 1.0)


def test_file_writer_cache_shares_one_writer_per_directory(tmp_path):
    with af.Graph().as_default():
        a = af.summary.FileWriterCache.get(str(tmp_path))
        assert af.summary.FileWriterCache.get(str(tmp_path)) is a
        assert af.summary.FileWriterCache.get(str(tmp_path / "other")) is not a
        af.summary.FileWriterCache.clear()
        assert af.summary.FileWriterCache.get(str(tmp_path)) is not a


def test_what_the_tensorboard_server_reads(tmp_path):
    """`tensorboard --logdir` loads runs through its plugin event multiplexer (summaries migrated to
    its plugins' tensors): each kind lands in its dashboard's plugin, and the graph in the graph tab."""
    from tensorboard.backend.event_processing import plugin_event_multiplexer

    with af.Graph().as_default() as g:
        x = af.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(1, 3, 4, 1))
        merged = af.summary.merge([af.summary.scalar("s", af.reduce_mean(x)), af.summary.histogram("h", x),
                                   af.summary.image("i", x), af.summary.audio("a", af.reshape(x, [1, 12]), 8000),
                                   af.summary.text("t", af.constant("hello"))])
        with af.Session() as sess, af.summary.FileWriter(str(tmp_path / "run1"), g) as writer:
            writer.add_summary(sess.run(merged), 1)
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(tmp_path))
    mux.Reload()
    acc = mux.GetAccumulator("run1")
    plugins = {tag: acc.SummaryMetadata(tag).plugin_data.plugin_name for tag in acc.Tags()["tensors"]
               if tag != "__run_graph__"}
    assert plugins == {"s": "scalars", "h": "histograms", "i/image/0": "images", "a/audio/0": "audio", "t": "text"}
    assert acc.Tags()["graph"] and {n.name for n in acc.Graph().node} >= {"s", "h", "i", "a", "t"}


def test_tf1_top_level_proto_names():
    """TF1 programs build `tf.Summary(value=[tf.Summary.Value(...)])` and `tf.SessionLog` at the top level."""
    import asyncflow as top

    summary = top.Summary(value=[top.Summary.Value(tag="loss", simple_value=0.5)])
    assert top.Summary is top.summary.Summary and top.Event is top.summary.Event
    assert summary.value[0].simple_value == 0.5 and top.SessionLog.START == 1
    assert top.SummaryMetadata is top.summary.SummaryMetadata
