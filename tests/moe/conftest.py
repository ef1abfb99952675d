"""Tiny test tensors run fastest single-threaded; with a shared, busy CPU two OpenMP threads spin-wait
on each other and small ops get ~50x slower. Restored after each test so other folders are unaffected."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
