"""A worker's step table without sockets: owners, deadlines and the cap on unstarted steps per peer."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import asyncflow as af
from asyncflow.net import wire
from asyncflow.net.steps import TooManySteps
from asyncflow.net.worker import WorkerService
from asyncflow.ops.comm import rendezvous_key
from asyncflow.train.cluster import ClusterSpec

CLUSTER = ClusterSpec({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]})
PS = "/job:ps/replica:0/task:0/device:CPU:0"
W0 = "/job:worker/replica:0/task:0/device:CPU:0"


def _key(ps: WorkerService, name: str = "t:0") -> str:
    return rendezvous_key(PS, ps.incarnation, W0, name)


def test_a_peer_holds_at_most_its_cap_of_unstarted_steps_and_each_goes_with_its_pull():
    ps = WorkerService(CLUSTER, "ps", 0, max_unstarted_steps_per_peer=3)

    async def main():
        pulls = [asyncio.ensure_future(ps.serve_tensor(step, _key(ps), "10.0.0.1")) for step in (1, 2, 3)]
        await asyncio.sleep(0)
        assert sorted(ps.steps) == [1, 2, 3]
        with pytest.raises(TooManySteps, match="10.0.0.1 already waits on 3 steps"):
            await ps.serve_tensor(4, _key(ps), "10.0.0.1")
        assert 4 not in ps.steps and ps.counters["step_pulls_refused_total"] == 1
        other = asyncio.ensure_future(ps.serve_tensor(4, _key(ps), "10.0.0.2"))  # another peer has its own cap
        await asyncio.sleep(0)
        assert 4 in ps.steps
        pulls[0].cancel()  # its peer disconnected
        await asyncio.gather(pulls[0], return_exceptions=True)
        assert 1 not in ps.steps and ps.counters["unstarted_steps_released_total"] == 1
        pulls.append(asyncio.ensure_future(ps.serve_tensor(5, _key(ps), "10.0.0.1")))  # room again
        await asyncio.sleep(0)
        assert 5 in ps.steps
        # A second pull of the same step joins its entry; the entry goes with the last of them.
        joined = asyncio.ensure_future(ps.serve_tensor(2, _key(ps, "u:0"), "10.0.0.2"))
        await asyncio.sleep(0)
        pulls[1].cancel()
        await asyncio.gather(pulls[1], return_exceptions=True)
        assert 2 in ps.steps
        joined.cancel()
        await asyncio.gather(joined, return_exceptions=True)
        assert 2 not in ps.steps
        ps.abort(3, wire.ErrorInfo(af.errors.CANCELLED, "step failed elsewhere"))
        with pytest.raises(af.errors.AbortedError, match="step failed elsewhere"):
            await pulls[2]
        assert 3 not in ps.steps and ps.counters["unstarted_steps_aborted_total"] == 1
        for job in (other, pulls[3]):
            job.cancel()
        await asyncio.gather(other, pulls[3], return_exceptions=True)
        assert not ps.steps and not ps.table.unstarted_by_peer

    asyncio.run(main())


def test_an_unstarted_step_expires_and_a_late_run_fails_at_once_while_a_started_one_is_adopted():
    ps = WorkerService(CLUSTER, "ps", 0, step_start_timeout_s=0.05)

    async def main():
        with pytest.raises(af.errors.DeadlineExceededError, match="did not start on /job:ps/replica:0/task:0 within"):
            await ps.serve_tensor(7, _key(ps), "peer")
        assert 7 not in ps.steps and ps.counters["unstarted_steps_expired_total"] == 1
        with pytest.raises(af.errors.DeadlineExceededError):
            ps._state(7)  # the run that never came in time fails at once
        # A pull that comes before its run: the run adopts the entry, which then outlives the deadline.
        pull = asyncio.ensure_future(ps.serve_tensor(8, _key(ps), "peer"))
        await asyncio.sleep(0)
        state = ps._state(8)
        assert state.started and not ps.table.unstarted_by_peer
        await asyncio.sleep(0.1)
        state.rendezvous.send(_key(ps), np.float32(4.0))
        assert await pull == np.float32(4.0)
        ps.table.finish(8, state, None)
        assert not ps.steps

    asyncio.run(main())


def test_a_finished_step_fails_the_pulls_still_waiting_for_a_key_it_never_sent():
    ps = WorkerService(CLUSTER, "ps", 0)

    async def main():
        state = ps._state(9)
        waiting = asyncio.ensure_future(ps.serve_tensor(9, _key(ps), "peer"))
        await asyncio.sleep(0)
        ps.table.finish(9, state, None)
        with pytest.raises(af.errors.AbortedError, match="finished on /job:ps/replica:0/task:0 without sending"):
            await waiting
        assert not ps.steps

    asyncio.run(main())
