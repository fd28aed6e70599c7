"""Widely copied TF1 programs, run with `import asyncflow as tf` in place of TensorFlow (each module in this
package is the program as its authors wrote it, but for the data: the digits and the Zen of Python). The
expectations are what TF 2.21's compat.v1 runtime gave on the same programs and data (accuracies,
variable names, a resumed run equal to an uninterrupted one); our random streams differ from TF's, so
accuracies are compared with margins, never exactly."""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as tf
from tests.programs import (
    char_rnn,
    cifar10,
    fully_connected_feed,
    gan,
    mnist_deep,
    mnist_softmax,
    multilayer_perceptron,
    ptb_word_lm,
    recurrent_network,
    save_restore_model,
    word2vec_basic,
)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def test_mnist_softmax():
    assert mnist_softmax.main(tf)["accuracy"] > 0.92  # TF: 0.956


def test_mnist_deep():
    out = mnist_deep.main(tf)
    assert out["accuracy"] > 0.85  # TF: 0.95


def test_fully_connected_feed(tmp_path):
    out = fully_connected_feed.main(tf, str(tmp_path))
    assert out["precision"] > 0.9  # TF: 0.949
    assert out["names"] == ['hidden1/biases', 'hidden1/weights', 'hidden2/biases', 'hidden2/weights',
                            'softmax_linear/biases', 'softmax_linear/weights']
    assert out["latest"] == str(tmp_path / "model.ckpt-399")


def test_multilayer_perceptron():
    out = multilayer_perceptron.main(tf)
    assert out["accuracy"] > 0.93  # TF: 0.98
    assert out["costs"][-1] < out["costs"][0] / 3


def test_gan():
    out = gan.main(tf)
    history, samples = out["history"], out["samples"]
    assert np.all(np.isfinite(history)) and samples.shape == (16, 64)
    assert np.all((samples > 0) & (samples < 1))
    assert history[:20, 1].mean() > history[-20:, 1].mean()  # the discriminator learns (TF: 1.35 -> 0.9)


def test_save_restore_model(tmp_path):
    out = save_restore_model.main(tf, str(tmp_path / "model.ckpt"))
    assert out["save_path"] == str(tmp_path / "model.ckpt")
    assert out["restored"] == out["first"]
    np.testing.assert_allclose(out["resumed"], out["uninterrupted"], rtol=1e-5, atol=1e-6)
    assert out["final"] > out["first"]


def test_word2vec_basic():
    out = word2vec_basic.main(tf)
    assert out["last_loss"] < out["first_loss"] / 2  # TF: 6.8 -> 1.9
    np.testing.assert_allclose(out["norms"], 1.0, rtol=1e-5)
    assert len(out["nearest"]) == 3


def test_cifar10(tmp_path):
    out = cifar10.main(tf, str(tmp_path))
    assert out["last_loss"] < out["first_loss"] - 0.3  # TF: 2.47 -> 1.58
    assert out["precision"] > 0.5  # TF: 0.79, from the moving averages
    assert out["restored"] == ['conv1/biases/ExponentialMovingAverage', 'conv1/weights/ExponentialMovingAverage',
                               'conv2/biases/ExponentialMovingAverage']


def test_ptb_word_lm():
    out = ptb_word_lm.main(tf)
    train = out["train_perplexity"]
    assert train[-1] < train[0] and out["valid_perplexity"] < out["vocab"]  # TF: 28.2 -> 24.5, valid 22.7
    cells = [f'Model/RNN/multi_rnn_cell/cell_{i}/basic_lstm_cell/{v}' for i in (0, 1) for v in ('bias', 'kernel')]
    assert out["names"] == cells + ['Model/embedding', 'Model/global_step', 'Model/softmax_b', 'Model/softmax_w',
                                    'Train/Model/Variable']  # as TF names them


def test_recurrent_network():
    out = recurrent_network.main(tf)
    assert out["accuracy"] > 0.8 and out["last_loss"] < out["first_loss"]  # TF: 0.92
    assert out["names"] == ['Variable', 'Variable_1', 'rnn/basic_lstm_cell/bias', 'rnn/basic_lstm_cell/kernel']


def test_char_rnn(tmp_path):
    out = char_rnn.main(tf, str(tmp_path))
    assert out["last_loss"] < out["first_loss"]  # TF: 3.74 -> 3.11
    assert out["sample"].startswith("The ") and len(out["sample"]) == 24
    cells = [f'model/rnnlm/multi_rnn_cell/cell_{i}/lstm_cell/{v}' for i in (0, 1) for v in ('bias', 'kernel')]
    slots = [f'model/model/rnnlm/multi_rnn_cell/cell_{i}/lstm_cell/{v}/Adam{s}'
             for i in (0, 1) for v in ('bias', 'kernel') for s in ('', '_1')]
    assert set(cells + slots + ['model/beta1_power', 'model/embedding', 'model/rnnlm/softmax_w']) <= set(out["names"])
