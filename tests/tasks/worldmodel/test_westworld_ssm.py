import torch

from zoo_tasks.worldmodel.ssm import MambaMixer, naive_selective_scan


def test_parallel_scan_equals_naive_recurrence():
    torch.manual_seed(0)
    mixer = MambaMixer(dim=8, d_state=4)
    block = mixer.block
    b, length, ed, n = 3, 13, block.config.d_inner, 4
    x = torch.randn(b, length, ed, dtype=torch.float64)
    delta = torch.nn.functional.softplus(torch.randn(b, length, ed, dtype=torch.float64))
    a = -torch.rand(ed, n, dtype=torch.float64) - 0.1
    bb, cc = torch.randn(b, length, n, dtype=torch.float64), torch.randn(b, length, n, dtype=torch.float64)
    d = torch.randn(ed, dtype=torch.float64)
    ref = naive_selective_scan(x, delta, a, bb, cc, d)
    assert torch.allclose(block.selective_scan(x, delta, a, bb, cc, d), ref, atol=1e-9)
    assert torch.allclose(block.selective_scan_seq(x, delta, a, bb, cc, d), ref, atol=1e-9)


def test_mixer_is_causal():
    torch.manual_seed(0)
    mixer = MambaMixer(dim=8, d_state=4)
    x = torch.randn(2, 16, 8)
    y = mixer(x)
    x2 = x.clone()
    x2[:, 10:] += 1.0
    y2 = mixer(x2)
    assert torch.allclose(y[:, :10], y2[:, :10], atol=1e-6)
    assert not torch.allclose(y[:, 10:], y2[:, 10:])
