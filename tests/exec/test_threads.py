"""Compute threads (asyncflow/exec/threads.py): BLAS threads from ConfigProto(intra_op_parallelism_threads),
the offload pool sized so that pool workers x BLAS threads <= cores, and the user's environment respected.

Every test puts the process back as it found it (BLAS counts, the policy's state, the environment)."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import asyncflow as af
from asyncflow.exec import executor, threads


def blas_counts() -> list[int]:
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


@pytest.fixture(autouse=True)
def restore_threads(monkeypatch: pytest.MonkeyPatch):
    before = blas_counts()
    for name in threads.BLAS_ENV_VARS:  # each test states the environment it means
        monkeypatch.delenv(name, raising=False)
    yield
    threads.restore_defaults()
    assert blas_counts() == before


@pytest.mark.parametrize("cores, blas, workers", [(2, 2, 1), (2, 1, 2), (8, 2, 4), (8, 3, 2), (1, 4, 1), (16, 16, 1)])
def test_pool_workers_times_blas_threads_never_exceed_the_cores(cores: int, blas: int, workers: int) -> None:
    assert threads.pool_workers_for(cores, blas) == workers
    assert workers * blas <= cores or workers == 1


@pytest.mark.parametrize("n", [1, 2])
def test_session_config_sets_blas_threads_and_pool_size(n: int) -> None:
    if not blas_counts():
        pytest.skip("no BLAS library that threadpoolctl can see")
    af.Session(graph=af.Graph(), config=af.ConfigProto(intra_op_parallelism_threads=n)).close()
    assert blas_counts() == [n] * len(blas_counts())
    s = threads.settings()
    assert (s.blas_threads, s.blas_source) == (n, "config")
    assert s.pool_workers == threads.pool_workers_for(threads.available_cores(), n)
    assert threads.offload_pool()._max_workers == s.pool_workers
    assert executor._pool() is threads.offload_pool()  # the executor offloads to this pool


def test_session_config_given_as_a_dict() -> None:
    af.Session(graph=af.Graph(), config={"intra_op_parallelism_threads": 1}).close()
    assert threads.settings().blas_threads == 1


def test_default_config_leaves_blas_as_it_is() -> None:
    before = blas_counts()
    af.Session(graph=af.Graph(), config=af.ConfigProto(intra_op_parallelism_threads=0)).close()
    af.Session(graph=af.Graph()).close()
    assert blas_counts() == before
    s = threads.settings()
    assert (s.blas_threads, s.blas_source) == (s.cores, "default")  # TF1's 0: the machine's cores
    assert s.pool_workers == threads.pool_workers_for(s.cores, s.cores) == 1


@pytest.mark.parametrize("name", threads.BLAS_ENV_VARS)
def test_the_users_environment_wins_over_the_default(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "1")
    before = blas_counts()
    af.Session(graph=af.Graph()).close()
    assert blas_counts() == before  # the library keeps what it read from the environment
    s = threads.settings()
    assert (s.blas_threads, s.blas_source) == (1, "env")
    assert s.pool_workers == s.cores
    assert threads.offload_pool()._max_workers == s.cores


def test_openblas_variable_comes_first_and_bad_values_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3,1")  # nested levels: the first is the outer one
    assert threads.env_blas_threads() == 3
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    assert threads.env_blas_threads() == 2
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "zero")
    monkeypatch.setenv("OMP_NUM_THREADS", "0")
    assert threads.env_blas_threads() is None


def test_an_explicit_config_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    s = threads.configure(1)
    assert (s.blas_threads, s.blas_source) == (1, "config")
    if blas_counts():
        assert set(blas_counts()) == {1}


def test_the_pool_follows_a_change_and_restore_puts_everything_back() -> None:
    first = threads.offload_pool()
    assert threads.offload_pool() is first  # stable while the policy is
    cores = threads.available_cores()
    threads.configure(1)
    assert threads.offload_pool()._max_workers == cores
    assert (threads.offload_pool() is first) == (first._max_workers == cores)
    threads.configure(0)  # 0 changes nothing
    assert threads.settings().blas_source == "config"
    threads.restore_defaults()
    assert threads.settings().blas_source == "default"
    assert threads.offload_pool()._max_workers == 1


def test_a_configured_session_computes_offloaded_kernels_correctly() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1100, 1100), dtype=np.float32)  # 4.6 MiB: above the offload threshold
    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, [None, None])
        y = af.matmul(x, x) + x
    with af.Session(graph=graph, config=af.ConfigProto(intra_op_parallelism_threads=1)) as sess:
        np.testing.assert_allclose(sess.run(y, {x: a}), a @ a + a, rtol=1e-4, atol=1e-3)


def test_the_server_flag_sets_the_same_policy_and_rejects_a_negative_count() -> None:
    from asyncflow import cli

    args = cli._parser().parse_args(["worker", "--cluster", '{"worker": ["127.0.0.1:1"]}', "--job", "worker",
                                     "--task", "0", "--intra-op-threads", "1"])
    cli._options(args)
    assert threads.settings().blas_threads == 1 and threads.settings().blas_source == "config"
    assert set(blas_counts()) == {1}
    args.intra_op_threads = -2
    with pytest.raises(cli._Fail, match="--intra-op-threads"):
        cli._options(args)
