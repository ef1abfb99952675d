"""A Python dispatch mode around an MoE step on two CPU threads (``FlopCounterMode``, what Lightning's
``measure_flops`` uses): the step finishes and every expert GEMM is counted. The segment kernel's GEMMs run on OpenMP
workers that cannot re-enter Python, so under a mode the experts run on the Python loop; before, the step hung."""

from __future__ import annotations

import subprocess
import sys

from zoo_testing import hang_guard

STEP_UNDER_THE_COUNTER = """
import torch
from torch.utils.flop_counter import FlopCounterMode
from zoo.moe import MoE

torch.set_num_threads(2)
torch.manual_seed(0)
layer = MoE(dim=64, num_experts=8, top_k=2, hidden=128)
x = torch.randn(100, 64, requires_grad=True)
with FlopCounterMode(display=False) as counter:
    layer(x)[0].sum().backward()
print(counter.get_total_flops())
"""


def test_an_moe_step_under_the_flop_counter_on_two_threads_ends_and_counts_every_expert_gemm():
    done = subprocess.run(
        [sys.executable, "-c", STEP_UNDER_THE_COUNTER], capture_output=True, text=True, timeout=hang_guard(20)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    tokens, dim, hidden, experts, k = 100, 64, 128, 8, 2
    gate = 2 * tokens * dim * experts
    ffn = 2 * tokens * k * 2 * dim * hidden  # every routed slot through both expert matrices
    assert int(done.stdout.split()[-1]) == 3 * (gate + ffn)  # forward, input and weight gradients
