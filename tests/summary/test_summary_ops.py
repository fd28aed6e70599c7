"""af.summary's ops: names, tags, families and collections as TF1's, the values they hold, and TF's errors.
Names, tags, pixel values and messages were checked against TensorFlow 2.21 (tf.compat.v1) with tfdiff."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest

import asyncflow as af
from asyncflow.ops.summary_ops_encode import DBL_MAX, default_bucket_limits

summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")


def parse(serialized: bytes):
    return summary_pb2.Summary.FromString(serialized)


def run(fetch, feed=None):
    with af.Session() as sess:
        return sess.run(fetch, feed)


def decode_png(data: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)))


def test_names_tags_families_and_collections_as_tf1():
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [None], name="x")
        s1 = af.summary.scalar("loss", af.reduce_mean(x))
        with af.name_scope("layer1"):
            s2 = af.summary.histogram("weights", x)
            s3 = af.summary.scalar("loss", af.reduce_sum(x), family="fam")
            s3b = af.summary.scalar("loss", af.reduce_sum(x), family="fam")
        s4 = af.summary.scalar("bad name!", x[0], collections=["mine"])
        s5 = af.summary.scalar("loss", x[1])
        s6 = af.summary.image("pic", af.zeros([2, 2, 3, 1]), max_outputs=1)
        s7 = af.summary.audio("snd", af.zeros([2, 5]), 8000, max_outputs=2)
        t = af.summary.text("notes", af.constant(["a", "b"]))
        m = af.summary.merge([s1, s2], name="merged")
        m2 = af.summary.merge([s1])
        ma = af.summary.merge_all()
        ma2 = af.summary.merge_all(scope="layer1")
        ma3 = af.summary.merge_all(key="mine")
        # TF 2.21's names: the family goes into the scope, the tag gets it once more in front.
        assert [v.op.name for v in [s1, s2, s3, s3b, s4, s5, s6, s7, t, m, m2, ma, ma2, ma3]] == [
            "loss", "layer1/weights", "layer1/fam/loss", "layer1/fam/loss_1", "bad_name_", "loss_1", "pic", "snd",
            "notes", "merged/merged", "Merge/MergeSummary", "Merge_1/MergeSummary", "Merge_2/MergeSummary",
            "Merge_3/MergeSummary"]
        assert [v.op.type for v in [s1, s2, s6, s7, t, m]] == [
            "ScalarSummary", "HistogramSummary", "ImageSummary", "AudioSummaryV2", "TensorSummaryV2", "MergeSummary"]
        assert [v.op.name for v in g.get_collection(af.GraphKeys.SUMMARIES)] == [
            "loss", "layer1/weights", "layer1/fam/loss", "layer1/fam/loss_1", "loss_1", "pic", "snd", "notes"]
        assert [i.name for i in ma2.op.inputs] == ["layer1/weights:0", "layer1/fam/loss:0", "layer1/fam/loss_1:0"]
        assert [i.name for i in ma3.op.inputs] == ["bad_name_:0"]
        assert [i.name for i in s7.op.inputs] == ["snd/tag:0", "zeros_1:0", "snd/sample_rate:0"]
        assert s6.op.get_attr("max_images") == 1 and list(s6.op.get_attr("bad_color")) == [255, 0, 0, 255]
        assert all(v.shape.as_list() == [] and v.dtype == af.string for v in [s1, s2, s6, m])
        got = run(ma, {x: np.array([0.5, -3.0, 0.0, 2.5], np.float32)})
        assert [v.tag for v in parse(got).value] == [
            "loss", "layer1/weights", "fam/layer1/fam/loss", "fam/layer1/fam/loss_1", "loss_1", "pic/image",
            "snd/audio/0", "snd/audio/1", "notes"]


def test_merge_all_of_an_empty_collection_is_none_and_adds_nothing():
    with af.Graph().as_default() as g:
        af.placeholder(af.float32, [2])
        before = len(g.get_operations())
        assert af.summary.merge_all() is None
        assert len(g.get_operations()) == before
        with pytest.raises(ValueError, match="shorter than minimum length 1"):
            af.summary.merge([])


def test_scalar_values_and_several_tags():
    with af.Graph().as_default():
        from asyncflow.ops.summary_ops import scalar_summary

        got = run([af.summary.scalar("i", af.constant(7, af.int64)), scalar_summary(["a", "b"], [1.5, 2.0])])
    assert parse(got[0]).value[0].simple_value == 7.0
    assert [(v.tag, v.simple_value) for v in parse(got[1]).value] == [("a", 1.5), ("b", 2.0)]


def test_scalar_with_a_non_scalar_value_is_invalid_argument():
    with af.Graph().as_default():
        x = af.placeholder(af.float32, [None])
        s = af.summary.scalar("v", x)  # no static check, as TF1: the kernel refuses it
        with pytest.raises(af.errors.InvalidArgumentError,
                           match=r"tags and values are not the same shape: \[\] != \[3\] \(tag 'v'\)"):
            run(s, {x: np.zeros(3, np.float32)})


def _reference_histogram(values: np.ndarray) -> list[tuple[float, float]]:
    """TF's Histogram::Add and EncodeToProto written plainly: (limit, count) per emitted bucket."""
    import bisect

    limits = list(default_bucket_limits())
    counts = [0.0] * len(limits)
    for v in values.tolist():
        counts[min(bisect.bisect_right(limits, v), len(limits) - 1)] += 1
    out, i = [], 0
    while i < len(counts):
        end, count, j = limits[i], counts[i], i + 1
        while count <= 0 and j < len(counts) and counts[j] <= 0:
            end, count, j = limits[j], counts[j], j + 1
        out.append((end, count))
        i = j
    return out


@pytest.mark.parametrize("values", [
    np.random.default_rng(0).normal(0, 3, 500).astype(np.float32),
    np.array([3, -7, 0, 1000000], np.int64),
    np.zeros(0, np.float32),
    np.array([1e-13, -1e-13, 0.0, 1e-12, 1e19, -1e21], np.float64),
], ids=["normal", "int64", "empty", "edges"])
def test_histogram_buckets_match_tf_and_numpy(values):
    with af.Graph().as_default():
        h = parse(run(af.summary.histogram("h", values))).value[0].histo
    assert list(zip(h.bucket_limit, h.bucket)) == _reference_histogram(values.astype(np.float64))
    assert h.num == values.size and sum(h.bucket) == values.size
    # numpy's count of the values between consecutive written limits agrees with every bucket
    edges = [-np.inf] + list(h.bucket_limit)
    x = values.astype(np.float64)
    assert [float(np.sum((x >= lo) & (x < hi))) for lo, hi in zip(edges, edges[1:])] == list(h.bucket)
    if values.size:
        assert (h.min, h.max) == (x.min(), x.max())
        np.testing.assert_allclose([h.sum, h.sum_squares], [x.sum(), (x * x).sum()], rtol=1e-12)
    else:  # TF 2.21: an empty histogram keeps its initial min/max and one empty bucket
        assert (h.min, h.max, list(h.bucket_limit)) == (DBL_MAX, -DBL_MAX, [DBL_MAX])


def test_default_bucket_limits_are_tfs():
    limits = default_bucket_limits()
    assert limits.size == 2 * 775 + 1 and limits[775] == 0.0 and limits[-1] == DBL_MAX
    assert limits[776] == 1e-12 and np.array_equal(limits[:775], -limits[776:][::-1])
    assert 0.47069243095356195 in limits and 107.67633591020055 in limits  # pinned from TF 2.21 histograms
    assert np.all(np.diff(limits) > 0)


@pytest.mark.parametrize("values, message", [
    ([1.0, np.nan], "Nan in summary histogram for: h"),
    ([np.inf, np.nan], "Infinity in Histogram for: h"),
])
def test_histogram_non_finite_is_invalid_argument(values, message):
    with af.Graph().as_default():
        with pytest.raises(af.errors.InvalidArgumentError, match=message):
            run(af.summary.histogram("h", np.array(values, np.float32)))


# TF 2.21's pixels (decoded from its PNGs) for each input.
IMAGES = [
    ("u8", np.arange(24, dtype=np.uint8).reshape(1, 2, 4, 3), np.arange(24, dtype=np.uint8).reshape(2, 4, 3)),
    ("f64_rgba", np.array([[[[0.5, -0.25, 1e-3, 0.7]]]]), [[[218, 82, 128, 255]]]),
    ("f16_inf_pixel", np.array([[[[0.3, 0.1, 0.9], [np.inf, 0.2, 0.3]]]], np.float16), [[[85, 28, 254], [255, 0, 0]]]),
    ("zeros", np.zeros([1, 1, 2, 1], np.float32), [[0, 0]]),
    ("tiny_negative", np.array([[[[-1e-7], [1e-7]]]], np.float32), [[128, 128]]),
    ("rgba_nan", np.array([[[[0.1, 0.2, 0.3, 0.4], [1.0, np.nan, 0.0, 0.5]]]], np.float32),
     [[[63, 127, 191, 255], [255, 0, 0, 255]]]),
    ("f16_range", np.linspace(-3, 7, 12).reshape(1, 3, 4, 1).astype(np.float16),
     [[73, 90, 106, 123], [139, 156, 172, 189], [205, 222, 238, 255]]),
    ("f32_range", np.linspace(0.001, 9.7, 10).reshape(1, 2, 5, 1).astype(np.float32),
     [[0, 28, 56, 85, 113], [141, 170, 198, 226, 255]]),
]


@pytest.mark.parametrize("name, images, pixels", IMAGES, ids=[c[0] for c in IMAGES])
def test_image_pixels_as_tf(name, images, pixels):
    with af.Graph().as_default():
        value = parse(run(af.summary.image(name, images, max_outputs=5))).value
    assert [v.tag for v in value] == [f"{name}/image/0"]
    img = value[0].image
    assert (img.height, img.width, img.colorspace) == images.shape[1:]
    assert np.array_equal(decode_png(img.encoded_image_string), np.asarray(pixels, np.uint8))


def test_image_batch_is_cut_at_max_outputs_and_tags_follow_it():
    batch = np.random.default_rng(1).integers(0, 255, (4, 3, 2, 3)).astype(np.uint8)
    with af.Graph().as_default():
        many, single, empty = run([af.summary.image("m", batch, max_outputs=2), af.summary.image("s", batch, 1),
                                   af.summary.image("e", np.zeros([0, 2, 2, 1], np.float32))])
    assert [v.tag for v in parse(many).value] == ["m/image/0", "m/image/1"]
    assert [v.tag for v in parse(single).value] == ["s/image"]
    assert not parse(empty).value
    for i, v in enumerate(parse(many).value):
        assert np.array_equal(decode_png(v.image.encoded_image_string), batch[i])


def test_audio_as_16_bit_wav():
    clips = np.array([[[0.0, 0.5], [-0.5, 1.0], [-1.2, 0.3]]], np.float32)  # 1 clip, 3 frames, 2 channels
    with af.Graph().as_default():
        value = parse(run(af.summary.audio("a", clips, 8000.7, max_outputs=1))).value
    assert [v.tag for v in value] == ["a/audio"]
    audio = value[0].audio
    assert (audio.num_channels, audio.length_frames, audio.content_type) == (2, 3, "audio/wav")
    assert audio.sample_rate == pytest.approx(8000.7)
    with wave.open(io.BytesIO(audio.encoded_audio_string)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == (2, 2, 8001, 3)
        frames = np.frombuffer(w.readframes(3), "<i2").reshape(3, 2)
    assert frames.tolist() == [[0, 16384], [-16384, 32767], [-32768, 9830]]


def test_text_and_tensor_summaries():
    with af.Graph().as_default():
        meta = af.summary.SummaryMetadata(display_name="shown")
        text, tens, flag = run([af.summary.text("notes", af.constant([["a", "b"]])),
                                af.summary.tensor_summary("t", np.array([1.5, -2], np.float16), summary_metadata=meta,
                                                          summary_description="about"),
                                af.summary.tensor_summary("b", True)])
    from tensorboard.util import tensor_util

    v = parse(text).value[0]
    assert v.metadata.plugin_data.plugin_name == "text"
    assert tensor_util.make_ndarray(v.tensor).tolist() == [[b"a", b"b"]]
    v = parse(tens).value[0]
    assert (v.metadata.display_name, v.metadata.summary_description) == ("shown", "about")
    assert tensor_util.make_ndarray(v.tensor).tolist() == [1.5, -2.0]
    v = parse(flag).value[0]
    assert v.tensor.HasField("tensor_shape") and tensor_util.make_ndarray(v.tensor) == np.array(True)


def test_text_needs_a_string_tensor():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match=r"Expected tensor Const:0 to have dtype string, got <dtype: 'int32'>"):
            af.summary.text("t", af.constant(1))


def _merge_twice(s):
    return af.summary.merge([s, af.summary.scalar("x", 2.0, family="f"), s])


@pytest.mark.parametrize("build, message", [
    (lambda: _merge_twice(af.summary.scalar("loss", 1.0)), "Duplicate tag loss found in summary inputs"),
    (lambda: af.summary.merge([af.constant(b"\xff\xff")]), "Could not parse one of the summary inputs"),
    (lambda: af.summary.image("b", af.zeros([2, 3, 2])), r"Tensor must be 4-D with last dim 1, 3, or 4, not \[2,3,2\]"),
    (lambda: af.summary.audio("b", af.zeros([2]), 8000.0), r"Tensor must be 3-D or 2-D, got: \[2\]"),
    (lambda: af.summary.audio("b", af.zeros([2, 3]), -1.0), "sample_rate must be > 0"),
])
def test_bad_input_fails_the_step_with_tfs_message(build, message):
    with af.Graph().as_default():
        with pytest.raises(af.errors.InvalidArgumentError, match=message):
            run(build())


def test_merge_keeps_untagged_values_and_flattens_string_vectors():
    with af.Graph().as_default():
        a, b = af.summary.tensor_summary("", [1]), af.summary.tensor_summary("", [2])
        stacked = af.stack([af.summary.scalar("q", 1.0), af.summary.scalar("r", 2.0)])
        got = run([af.summary.merge([a, b]), af.summary.merge([stacked])])
    assert [v.tag for v in parse(got[0]).value] == ["", ""]
    assert [v.tag for v in parse(got[1]).value] == ["q", "r"]
