"""The embedded session's placer, as TF1's DirectSession: a device this process does not have is an
InvalidArgumentError naming the op and the devices; `allow_soft_placement` falls back to the CPU
for a device type or index, never for another job or task. TF1's behaviour was pinned with TF 2.21's
compat.v1 runtime (`/gpu:0`, `/cpu:1`, `/device:XLA_CPU:0` refused, then run with soft placement;
`/job:ps/task:0` refused either way; `/job:localhost/task:0/cpu:0` runs)."""

import numpy as np
import pytest

import asyncflow as af


def _graph(device):
    g = af.Graph()
    with g.as_default():
        a = af.constant(1.0, name="a")
        with af.device(device):
            b = af.add(a, 2.0, name="b")
    return g, b


@pytest.mark.parametrize("device", ["/gpu:0", "/device:GPU:1", "/cpu:1", "/device:XLA_CPU:0", "/job:ps/task:0",
                                    "/job:localhost/task:1"])
def test_a_device_this_process_lacks_is_invalid_argument_naming_op_and_devices(device):
    g, b = _graph(device)
    with af.Session(graph=g) as sess:
        with pytest.raises(af.errors.InvalidArgumentError) as info:
            sess.run(b)
    message = str(info.value)
    assert "Cannot assign a device for operation b" in message
    assert af.DeviceSpec.from_string(device).to_string() in message
    assert "/job:localhost/replica:0/task:0/device:CPU:0" in message
    assert info.value.op is not None and info.value.op.name in ("b", "b/y")  # b or its constant input


@pytest.mark.parametrize("device", ["/gpu:0", "/device:GPU:1", "/cpu:1", "/device:XLA_CPU:0"])
def test_soft_placement_runs_an_unknown_device_type_or_index_on_the_cpu(device):
    g, b = _graph(device)
    with af.Session(graph=g, config=af.ConfigProto(allow_soft_placement=True)) as sess:
        assert sess.run(b) == np.float32(3.0)


@pytest.mark.parametrize("device", ["/job:ps/task:0", "/job:localhost/task:1"])
def test_soft_placement_does_not_move_an_op_to_another_task(device):
    g, b = _graph(device)
    with af.Session(graph=g, config={"allow_soft_placement": True}) as sess:
        with pytest.raises(af.errors.InvalidArgumentError, match="operation b"):
            sess.run(b)


@pytest.mark.parametrize("device", ["/cpu:0", "/device:CPU:0", "/job:localhost/task:0/cpu:0",
                                    "/job:localhost/replica:0/task:0/device:CPU:0"])
def test_this_process_cpu_runs(device):
    g, b = _graph(device)
    with af.Session(graph=g) as sess:
        assert sess.run(b) == np.float32(3.0)


def test_a_variable_on_a_gpu_fails_at_its_initializer_until_soft_placement():
    g = af.Graph()
    with g.as_default(), af.device("/gpu:0"):
        v = af.Variable([1.0, 2.0], name="v")
        init = af.global_variables_initializer()
    with af.Session(graph=g) as sess, pytest.raises(af.errors.InvalidArgumentError, match="GPU|gpu"):
        sess.run(init)
    with af.Session(graph=g, config=af.ConfigProto(allow_soft_placement=True)) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
