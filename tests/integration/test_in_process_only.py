"""A py_func graph stays in its process: the remote session refuses to send it, naming the op, and the
same session keeps working for graphs without one."""

import numpy as np
import pytest

import asyncflow as af


def test_remote_session_refuses_a_graph_holding_a_py_func(cluster):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2], name="x")
        y = af.multiply(x, 2.0, name="y")
    with af.Session(cluster.target, graph=g) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0]}), [2.0, 4.0])
        with g.as_default():
            z = af.py_func(lambda a: a + 1, [y], af.float32, name="plus_one")
        with pytest.raises(af.errors.InvalidArgumentError, match="PyFunc 'plus_one' calls a Python function"):
            sess.run(z, {x: [1.0, 2.0]})
    with af.Session(graph=g) as local:  # in process it runs
        np.testing.assert_array_equal(local.run(z, {x: [1.0, 2.0]}), [3.0, 5.0])
