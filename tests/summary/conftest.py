"""Shared set-up for the summary tests: TensorBoard is needed (the `tensorboard`/`test` extras), and
every test ends with `FileWriterCache` closed and emptied (the hooks' writers are process-wide)."""

import pytest

pytest.importorskip("tensorboard")


@pytest.fixture(autouse=True)
def _clear_writer_cache():
    yield
    import asyncflow as af

    af.summary.FileWriterCache.clear()
