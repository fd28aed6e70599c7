"""What a user without the optional extras sees: `import asyncflow` and building summaries work;
running an image summary without Pillow, or any summary without TensorBoard's protos, fails the step
with UnimplementedError naming the extra to install; FileWriter without TensorBoard is ImportError."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import asyncflow as af


def test_image_summary_without_pillow_names_the_image_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with af.Graph().as_default():
        s = af.summary.image("pic", np.zeros([1, 2, 2, 1], np.float32))
        with af.Session() as sess:
            with pytest.raises(af.errors.UnimplementedError, match=r"ImageSummary 'pic'.*asyncflow\[image\]"):
                sess.run(s)
            assert sess.run(af.summary.scalar("still", 1.0))  # the other summaries do not need Pillow


def test_summaries_without_tensorboard_name_the_tensorboard_extra(monkeypatch, tmp_path):
    for name in ("tensorboard.compat.proto", "tensorboard.compat.proto.summary_pb2",
                 "tensorboard.compat.proto.event_pb2"):
        monkeypatch.setitem(sys.modules, name, None)
    with af.Graph().as_default():
        s = af.summary.scalar("loss", 1.0)  # building needs nothing
        with af.Session() as sess:
            with pytest.raises(af.errors.UnimplementedError, match=r"ScalarSummary 'loss'.*asyncflow\[tensorboard\]"):
                sess.run(s)
    with pytest.raises(ImportError, match=r"asyncflow\[tensorboard\]"):
        af.summary.FileWriter(str(tmp_path))
    with pytest.raises(ImportError, match=r"asyncflow\[tensorboard\]"):
        af.summary.Summary  # noqa: B018 - the lazily loaded proto
