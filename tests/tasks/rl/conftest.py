"""ScaleMoE tests run tiny networks: one intra-op thread (more only add contention on a shared CPU)."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
