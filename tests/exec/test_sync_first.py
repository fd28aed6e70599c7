"""Queue steps from a plain thread run there first, and move onto the session's loop only to wait.

A step whose only async kernels are queue ops tries them in the calling thread: an enqueue with
room or a dequeue with rows completes at once; one that would wait raises WouldWait before it
changes anything and the step goes on, from that node, on the loop. Elements are never lost or
duplicated, whichever thread serves whom.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import asyncflow as af


def test_a_queue_step_that_need_not_wait_never_starts_the_loop():
    q = af.FIFOQueue(4, [af.int32], shapes=[[]])
    x = af.placeholder(af.int32, [])
    enqueue = q.enqueue([x])
    dequeue = q.dequeue()
    with af.Session() as sess:
        plan_steps = [sess.run(enqueue, {x: i}) for i in range(3)]
        got = [int(sess.run(dequeue)) for _ in range(3)]
        assert sess._loop is None  # nothing waited: no hop to an event loop
    assert plan_steps == [None] * 3 and got == [0, 1, 2]


def test_a_dequeue_that_must_wait_moves_to_the_loop_and_is_served_by_another_threads_enqueue():
    q = af.FIFOQueue(2, [af.float32], shapes=[[3]])
    x = af.placeholder(af.float32, [3])
    enqueue = q.enqueue([x])
    doubled = q.dequeue() * 2.0
    with af.Session() as sess:
        result = {}
        reader = threading.Thread(target=lambda: result.setdefault("v", sess.run(doubled)))
        reader.start()
        time.sleep(0.1)
        assert reader.is_alive()  # waiting on the loop
        sess.run(enqueue, {x: [1.0, 2.0, 3.0]})  # from this thread, synchronously: wakes the waiter
        reader.join(10)
        assert not reader.is_alive()
    np.testing.assert_array_equal(result["v"], [2.0, 4.0, 6.0])


def test_an_enqueue_into_a_full_queue_waits_until_a_dequeue_makes_room():
    q = af.FIFOQueue(1, [af.int32], shapes=[[]])
    x = af.placeholder(af.int32, [])
    enqueue = q.enqueue([x])
    dequeue = q.dequeue()
    with af.Session() as sess:
        sess.run(enqueue, {x: 1})
        writer = threading.Thread(target=lambda: sess.run(enqueue, {x: 2}))
        writer.start()
        time.sleep(0.1)
        assert writer.is_alive()
        assert int(sess.run(dequeue)) == 1
        writer.join(10)
        assert not writer.is_alive()
        assert int(sess.run(dequeue)) == 2
        assert int(sess.run(q.size())) == 0


def test_a_waiting_step_times_out_and_leaves_the_queue_usable():
    q = af.FIFOQueue(2, [af.int32], shapes=[[]])
    x = af.placeholder(af.int32, [])
    with af.Session() as sess:
        with pytest.raises(af.errors.DeadlineExceededError):
            sess.run(q.dequeue(), options=af.RunOptions(timeout_in_ms=100))
        sess.run(q.enqueue([x]), {x: 5})
        assert int(sess.run(q.dequeue())) == 5


def test_many_threads_enqueue_and_dequeue_without_losing_or_duplicating_an_element():
    q = af.FIFOQueue(8, [af.int32], shapes=[[]])
    x = af.placeholder(af.int32, [])
    enqueue = q.enqueue([x])
    dequeue = q.dequeue()
    n_threads, per_thread = 4, 150
    got: list[int] = []
    lock = threading.Lock()
    with af.Session() as sess:
        def produce(t: int) -> None:
            for i in range(per_thread):
                sess.run(enqueue, {x: t * 1000 + i})

        def consume() -> None:
            mine = [int(sess.run(dequeue)) for _ in range(per_thread)]
            with lock:
                got.extend(mine)

        threads = [threading.Thread(target=produce, args=(t,)) for t in range(n_threads)]
        threads += [threading.Thread(target=consume) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
        assert int(sess.run(q.size())) == 0
    assert sorted(got) == sorted(t * 1000 + i for t in range(n_threads) for i in range(per_thread))


def test_a_closed_empty_queue_still_gives_out_of_range_through_the_loop():
    q = af.FIFOQueue(2, [af.int32], shapes=[[]])
    x = af.placeholder(af.int32, [])
    with af.Session() as sess:
        sess.run(q.enqueue([x]), {x: 3})
        sess.run(q.close())
        assert int(sess.run(q.dequeue())) == 3  # rows left before the close are served at once
        with pytest.raises(af.errors.OutOfRangeError):
            sess.run(q.dequeue())
