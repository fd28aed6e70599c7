"""Summary ops against Summary protos written out here, with values pinned from TensorFlow 2.21
(tf.compat.v1, checked with tfdiff while this was written): the serialized bytes each kernel returns
equal those of the proto TF's kernel returns (PNG bytes excepted: TF's libpng and Pillow compress
differently; the pixels are the same, see tests/summary/test_summary_ops.py)."""

from __future__ import annotations

import io

import numpy as np
import pytest

from tests.ops.harness import Case, case_params, check_case

summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")

X = np.array([0.5, -3.0, 0.0, 2.5, 1e-13, 100.0], np.float32)
DBL_MAX = np.finfo(np.float64).max
# TF 2.21's HistogramSummary of X: its default buckets, empty runs collapsed.
X_HISTO = dict(min=-3.0, max=100.0, num=6.0, sum=100.0000000000001, sum_squares=10015.5,
               bucket_limit=[-3.1665833053880363, -2.8787120958073054, 0.0, 1e-12, 0.47069243095356195,
                             0.51776167404891815, 2.3791009056258718, 2.6170109961884593, 97.88757810018231,
                             107.67633591020055, DBL_MAX],
               bucket=[0, 1, 0, 2, 0, 1, 0, 1, 0, 1, 0])
# TF 2.21's AudioSummaryV2 WAV bytes for two clips at 8000 Hz.
CLIPS = np.array([[0.0, 0.5, -0.5, 1.0, -1.2], [0.1, 0.2, 0.3, 0.00002, -0.00002]], np.float32)
WAV = [bytes.fromhex("524946462e00000057415645666d74201000000001000100401f0000803e000002001000646174610a"
                     "0000000000004000c0ff7f0080"),
       bytes.fromhex("524946462e00000057415645666d74201000000001000100401f0000803e000002001000646174610a"
                     "000000cd0c9a1966260100ffff")]
IMAGE = np.array([[[[-1.0], [0.5], [np.nan]], [[2.0], [0.0], [1.0]]]], np.float32)
IMAGE_PIXELS = np.array([[64, 159, 255], [255, 128, 191]], np.uint8)  # TF's normalisation of IMAGE


def one(summary) -> np.ndarray:
    return np.array([summary.SerializeToString()], dtype=object)


def values(*vals) -> np.ndarray:
    return one(summary_pb2.Summary(value=list(vals)))


def png(pixels: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels, mode="L").save(buf, format="PNG")
    return buf.getvalue()


V = summary_pb2.Summary.Value

CASES = [
    Case("scalar_summary_float_and_int", ("ScalarSummary",),
         lambda af: af.stack([af.summary.scalar("loss", af.reduce_mean(X)), af.summary.scalar("n", 7)]),
         lambda: np.concatenate([values(V(tag="loss", simple_value=16.666666)), values(V(tag="n", simple_value=7))])),
    Case("histogram_summary_default_buckets", ("HistogramSummary",),
         lambda af: af.stack([af.summary.histogram("w", X)]),
         lambda: values(V(tag="w", histo=summary_pb2.HistogramProto(**X_HISTO)))),
    Case("image_summary_float_normalised", ("ImageSummary",),
         lambda af: af.stack([af.summary.image("pic", IMAGE, max_outputs=1)]),
         lambda: values(V(tag="pic/image", image=summary_pb2.Summary.Image(
             height=2, width=3, colorspace=1, encoded_image_string=png(IMAGE_PIXELS))))),
    Case("audio_summary_v2_wav", ("AudioSummaryV2",),
         lambda af: af.stack([af.summary.audio("snd", CLIPS, 8000, max_outputs=2)]),
         lambda: values(*[V(tag=f"snd/audio/{i}", audio=summary_pb2.Summary.Audio(
             sample_rate=8000, num_channels=1, length_frames=5, encoded_audio_string=WAV[i], content_type="audio/wav"))
             for i in range(2)])),
    Case("tensor_summary_v2_text_and_ints", ("TensorSummaryV2",),
         lambda af: af.stack([af.summary.text("notes", af.constant(["a", "b"])),
                              af.summary.tensor_summary("t", [[1, 2], [3, 4]], display_name="dn")]),
         lambda: np.concatenate([
             values(V(tag="notes", tensor=dict(dtype=7, tensor_shape=dict(dim=[dict(size=2)]), string_val=[b"a", b"b"]),
                      metadata=dict(plugin_data=dict(plugin_name="text")))),
             values(V(tag="t", tensor=dict(dtype=3, tensor_shape=dict(dim=[dict(size=2), dict(size=2)]),
                                           tensor_content=np.arange(1, 5, dtype="<i4").tobytes()),
                      metadata=dict(display_name="dn")))])),
    Case("merge_summary_in_input_order", ("MergeSummary",),
         lambda af: af.stack([af.summary.merge([af.summary.scalar("b", 2.0), af.summary.scalar("a", 1.0)])]),
         lambda: values(V(tag="b", simple_value=2.0), V(tag="a", simple_value=1.0))),
]


@pytest.mark.parametrize("case", case_params(CASES))
def test_summary_op(case: Case) -> None:
    check_case(case)
