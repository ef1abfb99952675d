"""``zoo.moe.local_expert_init``: each process builds only its share of the experts, and that share is exactly what a
whole build spread by ``to_expert_parallel`` would keep.

- for every named expert type, rank r of P built alone holds the whole bank's experts [r E / P, (r + 1) E / P), the
  router and shared experts whole, and leaves the global generator where a whole build leaves it;
- the budget refuses a layer before allocating it, in one line naming what to do;
- the whole bank never exists: building rank 0's quarter of a 64 MiB bank raises the process's peak memory by about
  16 MiB (a whole build, measured the same way, by 64).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from zoo_testing import hang_guard

from zoo.moe import MoE, local_expert_init
from zoo.moe.errors import ConfigError


def _build(seed: int, experts: str, share: tuple[int, int] | None = None) -> tuple[MoE, torch.Tensor]:
    torch.manual_seed(seed)
    if share is None:
        layer = MoE(dim=8, hidden=12, num_experts=4, experts=experts, num_shared=1, router="noisy_topk")
    else:
        with local_expert_init(*share):
            layer = MoE(dim=8, hidden=12, num_experts=4, experts=experts, num_shared=1, router="noisy_topk")
    return layer, torch.rand(5)  # the generator's next draws, after the build


@pytest.mark.parametrize("experts", ["ffn", "swiglu", "lowrank", "linear"])
@pytest.mark.parametrize("ep_size", [2, 4])
def test_each_rank_builds_the_whole_banks_share_and_the_same_random_stream(experts, ep_size):
    whole, after_whole = _build(0, experts)
    count = 4 // ep_size
    for rank in range(ep_size):
        part, after_part = _build(0, experts, (rank, ep_size))
        assert (part.experts.first_expert, part.experts.num_experts) == (rank * count, count)
        assert part.num_experts == 4
        assert torch.equal(after_part, after_whole)
        full = whole.state_dict()
        assert part.state_dict().keys() == full.keys()
        for key, value in part.state_dict().items():
            expected = full[key][rank * count : (rank + 1) * count] if key.startswith("experts.") else full[key]
            assert torch.equal(value, expected), key


def test_outside_the_context_a_bank_is_whole():
    layer, _ = _build(0, "ffn")
    assert (layer.experts.first_expert, layer.experts.num_experts) == (0, 4)
    assert layer.experts.w1.shape == (4, 8, 12)


def test_the_budget_refuses_before_allocating():
    # 8 experts of 2 x (256 x 256) fp32 weights + biases: 4.02 MiB whole, 2.01 MiB a rank at ep_size 2
    with local_expert_init(0, 2, max_bytes=3 << 20):
        MoE(dim=256, hidden=256, num_experts=8)
    with pytest.raises(ConfigError, match=r"need .* MiB of weights at ep_size 1, over its budget of 3.0 MiB"):
        with local_expert_init(0, 1, max_bytes=3 << 20):
            MoE(dim=256, hidden=256, num_experts=8)


def test_experts_that_do_not_split_are_refused():
    with pytest.raises(ConfigError, match="6 experts do not split over ep_size 4"):
        with local_expert_init(0, 4):
            MoE(dim=4, hidden=4, num_experts=6)


_PEAK = """
import sys, torch
from zoo.moe import MoE, local_expert_init

def status(field):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field)) / 1024

torch.zeros(1)
open("/proc/self/clear_refs", "w").write("5")  # Linux: the peak resident size (VmHWM) restarts from now
before = status("VmRSS")
if sys.argv[1] == "share":
    with local_expert_init(0, 4):
        layer = MoE(dim=1024, hidden=1024, num_experts=8, experts="ffn")
else:
    layer = MoE(dim=1024, hidden=1024, num_experts=8, experts="ffn")
print(status("VmHWM") - before)
"""


def _peak_growth_mib(mode: str) -> float:
    done = subprocess.run([sys.executable, "-c", _PEAK, mode], capture_output=True, text=True, timeout=hang_guard(300))
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak memory is read from Linux's /proc/self")
def test_the_whole_bank_never_exists():
    # the bank: 8 experts x 2 x (1024 x 1024) fp32 = 64 MiB; rank 0 of 4 keeps 16 MiB and draws the rest into
    # one expert's 4 MiB scratch
    whole, share = _peak_growth_mib("whole"), _peak_growth_mib("share")
    assert whole > 56, whole  # the measurement sees a whole bank
    assert share < 28, share
