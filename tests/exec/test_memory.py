"""A step's memory: values dropped at their last reader, buffers forwarded to outputs, peak bytes reported.

Forwarding (an elementwise kernel writing into an input buffer nothing else will read) must never
touch a fed array, a constant, a variable's buffer, a fetched value, or a buffer another value
shares (an Identity's output, a view); every case here checks the values against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import asyncflow as af
from asyncflow.exec.step_stats import peak_bytes

N = 1 << 18  # float32 elements: 1 MiB, above the forwarding threshold
DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def _traced_peak(sess: af.Session, fetches, feeds) -> tuple[object, int]:
    meta = af.RunMetadata()
    out = sess.run(fetches, feeds, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE), run_metadata=meta)
    return out, peak_bytes(meta.step_stats)[DEVICE]


def _chain(x):
    y = x * 2.0
    for i in range(6):
        y = y + 1.0 if i % 2 else af.tanh(y)
    return y


def _chain_np(x):
    y = x * np.float32(2.0)
    for i in range(6):
        y = y + np.float32(1.0) if i % 2 else np.tanh(y)
    return y


@pytest.mark.parametrize("shuffle", [None, 3])
def test_a_chain_of_elementwise_ops_holds_one_buffer_and_never_writes_the_feed(shuffle):
    x = af.placeholder(af.float32, [None])
    y = _chain(x)
    data = np.linspace(-1, 1, N, dtype=np.float32)
    kept = data.copy()
    with af.Session(config=af.ConfigProto(shuffle_seed=shuffle)) as sess:
        out, peak = _traced_peak(sess, y, {x: data})
        np.testing.assert_allclose(out, _chain_np(kept), rtol=1e-6)
        assert np.array_equal(data, kept)  # the fed array is never a forwarding target
        assert peak == data.nbytes  # the first op allocates; the six after it write into that buffer
        again = sess.run(y, {x: data})
        np.testing.assert_allclose(again, out, rtol=0)


def test_without_forwarding_a_value_is_dropped_at_its_last_reader():
    x = af.placeholder(af.float32, [None])
    y = x
    for _ in range(8):
        y = af.sigmoid(y)  # computes into a new array each time (not a plain ufunc)
    data = np.linspace(-1, 1, N, dtype=np.float32)
    with af.Session() as sess:
        out, peak = _traced_peak(sess, y, {x: data})
    ref = data
    for _ in range(8):
        ref = 1 / (1 + np.exp(-ref))
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    assert peak == 2 * data.nbytes  # an op's input and its output, never more


def test_fetched_values_constants_and_variables_are_never_overwritten():
    base = np.linspace(0, 1, N, dtype=np.float32)
    x = af.placeholder(af.float32, [None])
    c = af.constant(base)
    v = af.Variable(base)
    a = x * 2.0  # fetched: must keep its value although `b` is its only reader
    b = a + 1.0
    from_const = c + 3.0
    from_var = v + 4.0
    from_read = af.identity(v.read_value()) * 5.0
    with af.Session() as sess:
        sess.run(v.initializer)
        for _ in range(2):
            got = sess.run([a, b, from_const, from_var, from_read], {x: base})
            np.testing.assert_array_equal(got[0], base * np.float32(2))
            np.testing.assert_array_equal(got[1], base * np.float32(2) + np.float32(1))
            np.testing.assert_array_equal(got[2], base + np.float32(3))
            np.testing.assert_array_equal(got[3], base + np.float32(4))
            np.testing.assert_array_equal(got[4], base * np.float32(5))
            np.testing.assert_array_equal(sess.run(c), base)
            np.testing.assert_array_equal(sess.run(v), base)


def test_shared_buffers_identities_and_views_are_not_forwarded():
    x = af.placeholder(af.float32, [N])
    a = x * 2.0
    b = af.identity(a)  # the same array as `a`
    c = a + 1.0
    d = b + 1.0
    r = af.reshape(a, [N // 2, 2])  # views of `a`
    s = af.reshape(a, [2, N // 2])
    e = r * 3.0
    f = s * 4.0
    data = np.arange(N, dtype=np.float32)
    two = data * np.float32(2)
    for shuffle in (None, 1, 2, 5):
        with af.Session(config=af.ConfigProto(shuffle_seed=shuffle)) as sess:
            got = sess.run([c, d, e, f], {x: data})
        np.testing.assert_array_equal(got[0], two + 1)
        np.testing.assert_array_equal(got[1], two + 1)
        np.testing.assert_array_equal(got[2], (two * 3).reshape(N // 2, 2))
        np.testing.assert_array_equal(got[3], (two * 4).reshape(2, N // 2))


def test_broadcasting_and_dtype_changes_allocate_where_the_input_cannot_hold_the_output():
    x = af.placeholder(af.float32, [None, 1])
    y = af.placeholder(af.float32, [None])
    wide = (x * 2.0) + y  # [n, 1] + [m] -> [n, m]: the input buffer is too small
    as_int = af.cast(x * 3.0, af.int32) + 1  # a cast in between: int32 result
    xs = np.linspace(0, 1, N, dtype=np.float32).reshape(-1, 1)
    ys = np.arange(4, dtype=np.float32)
    with af.Session() as sess:
        got_wide, got_int = sess.run([wide, as_int], {x: xs, y: ys})
    np.testing.assert_array_equal(got_wide, xs * np.float32(2) + ys)
    np.testing.assert_array_equal(got_int, (xs * np.float32(3)).astype(np.int32) + 1)


def test_a_step_on_the_loop_with_offloaded_kernels_forwards_safely():
    n = 1 << 21  # 8 MiB: kernels run in worker threads when the step runs on an event loop (a queue's step)
    x = af.placeholder(af.float32, [n])
    q = af.FIFOQueue(4, [af.float32], shapes=[[n]])
    enqueue = q.enqueue([x])
    y = _chain(q.dequeue())
    z = y * 0.5
    data = np.linspace(-1, 1, n, dtype=np.float32)
    kept = data.copy()
    with af.Session() as sess:
        for _ in range(3):
            sess.run(enqueue, {x: data})
        results = [sess.run([y, z]) for _ in range(3)]
    ref = _chain_np(kept)
    for got_y, got_z in results:
        np.testing.assert_allclose(got_y, ref, rtol=1e-6)
        np.testing.assert_allclose(got_z, ref * np.float32(0.5), rtol=1e-6)
    assert np.array_equal(data, kept)


def test_a_failing_step_leaves_nothing_behind_and_the_next_step_is_right():
    x = af.placeholder(af.float32, [None])
    idx = af.placeholder(af.int32, [])
    y = af.gather(x * 2.0 + 1.0, idx)
    data = np.arange(N, dtype=np.float32)
    with af.Session() as sess:
        with pytest.raises(af.errors.InvalidArgumentError):
            sess.run(y, {x: data, idx: N + 5})
        assert sess.run(y, {x: data, idx: 7}) == np.float32(15)
