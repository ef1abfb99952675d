"""zoo_tasks.rl.simba: the stacked SimBa experts compute exactly independent SimBa encoders (Lee et al. 2025)."""

import torch

from zoo_tasks.rl.simba import SimbaEncoder, StackedSimba, simba_encoder_params


def test_stacked_simba_experts_equal_independent_simba_encoders():
    """Reference check: expert e of StackedSimba computes exactly a SimbaEncoder holding expert e's weights."""
    torch.manual_seed(0)
    E, d, h, blocks = 3, 6, 8, 2
    stacked = StackedSimba(E, d, h, blocks)
    with torch.no_grad():  # make LayerNorm affines non-trivial so the per-expert gather is exercised
        for p in [*stacked.ln_w, *stacked.ln_b]:
            p.normal_()
    x = torch.randn(10, d)
    dense_out = stacked.forward_dense(x)  # (T, E, h)
    for e in range(E):
        enc = SimbaEncoder(d, h, blocks)
        with torch.no_grad():
            enc.embed.weight.copy_(stacked.embed_w[e].t())
            enc.embed.bias.copy_(stacked.embed_b[e])
            for i, block in enumerate(enc.blocks):
                block.norm.weight.copy_(stacked.ln_w[i][e])
                block.norm.bias.copy_(stacked.ln_b[i][e])
                block.fc1.weight.copy_(stacked.w1[i][e].t())
                block.fc1.bias.copy_(stacked.b1[i][e])
                block.fc2.weight.copy_(stacked.w2[i][e].t())
                block.fc2.bias.copy_(stacked.b2[i][e])
            enc.norm.weight.copy_(stacked.ln_w[blocks][e])
            enc.norm.bias.copy_(stacked.ln_b[blocks][e])
        torch.testing.assert_close(dense_out[:, e], enc(x), rtol=1e-5, atol=1e-5)
    assert simba_encoder_params(d, h, blocks) == sum(p.numel() for p in enc.parameters())


def test_stacked_simba_sorted_rows_run_only_their_own_expert():
    """forward_sorted on rows sorted by expert equals forward_dense's column of that expert (the dispatch path)."""
    torch.manual_seed(0)
    stacked = StackedSimba(3, 4, 8, 1, out_dim=2)
    x = torch.randn(6, 4)
    counts = [1, 3, 2]
    sorted_out = stacked.forward_sorted(x, counts)
    dense = stacked.forward_dense(x)  # (6, 3, 2)
    experts = torch.repeat_interleave(torch.arange(3), torch.tensor(counts))
    torch.testing.assert_close(sorted_out, dense[torch.arange(6), experts], rtol=1e-5, atol=1e-5)
