"""Building PyG's ``processed/`` cache: one process at a time (zoo.data.build_lock), and a half-written cache
(a build killed mid-write, or read while another process wrote it) is rebuilt rather than failing the run."""

from __future__ import annotations

import threading

import pytest

from zoo.data.build_lock import build_lock
from zoo_tasks.graphs.data import TUDataModule


def test_build_lock_makes_a_second_holder_wait(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    entered = threading.Event()

    def second_builder():
        with build_lock("TUDataset-MUTAG"):
            entered.set()

    with build_lock("TUDataset-MUTAG"):
        other = threading.Thread(target=second_builder)
        other.start()
        assert not entered.wait(0.3)  # blocked while the first build holds the lock
    assert entered.wait(10)
    other.join()
    with build_lock("TUDataset-PTC_MR"):  # other datasets are independent
        pass


def test_unreadable_processed_cache_is_rebuilt(data_mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    graphs = len(TUDataModule("MUTAG")._dataset())
    processed = next(tmp_path.glob("work/TUDataset/MUTAG/processed"))
    for f in processed.glob("data*.pt"):
        f.write_bytes(f.read_bytes()[:100])  # truncated mid-write
    with pytest.warns(UserWarning, match=r"MUTAG/processed: unreadable cache .*; rebuilding it"):
        assert len(TUDataModule("MUTAG")._dataset()) == graphs == 188
