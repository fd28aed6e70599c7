"""Fixtures of the timeline tests: a real `asyncflow` cluster (one ps, two workers, a master) per module."""

from __future__ import annotations

import pytest

from tests.integration.conftest import LocalCluster, Processes


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    procs = Processes(tmp_path_factory.mktemp("cluster"))
    try:
        yield LocalCluster(procs)
    finally:
        procs.kill_all()
