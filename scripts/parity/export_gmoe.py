"""Export the GMoE parity fixture from the authors' code (VITA-Group/Graph-Mixture-of-Experts).

Runs the reference ``MoE`` layer of ``graphproppred/moe.py`` (hop-wise experts, noisy top-k gate, importance + load
cv² loss) on a small random graph and saves numbers only to ``tests/fixtures/parity/gmoe.pt``:

    python scripts/parity/export_gmoe.py --upstream /tmp/upstream/gmoe --commit SHA \\
        --out tests/fixtures/parity/gmoe.pt

The reference passes its expert convolutions in (``experts_conv``, ``experts_bn``); its own OGB convolutions need
bond features, so the experts here are PyG ``GCNConv`` (what our GMoE uses) behind a wrapper taking the reference's
``(x, edge_index, edge_attr)`` call, each followed by ``BatchNorm1d`` as in ``GNN_SpMoE_node``. Gate and noise
matrices (zero at init in the reference) get random values so the gate is not a tie. Objective:
``sum(y * R) + loss`` for a fixed random R; one SGD step (lr 0.1) on it (plain SGD: the expert convolutions'
biases sit before a train-mode BatchNorm, so their gradient is 0 up to round-off, which Adam would blow up to
a full lr-sized step of random sign). The noisy gate draws its noise with
``torch.randn_like`` right after ``torch.manual_seed(seed)``; the drawn noise is saved so a test can check that it
draws the same numbers.
"""

from __future__ import annotations

import sys

import torch
import torch_geometric
from fixture_io import exporter_args
from torch import nn
from torch_geometric.nn import GCNConv

CONFIG = {"num_nodes": 12, "in_dim": 6, "out_dim": 5, "num_experts": 4, "num_hop1": 2, "k": 2, "coef": 1e-2}
SEED, NOISE_SEED, LR = 0, 1234, 0.1


class ReferenceCallGCN(nn.Module):
    """PyG ``GCNConv`` with the reference experts' call signature ``(x, edge_index, edge_attr)`` (edge_attr unused)."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.conv = GCNConv(in_dim, out_dim, cached=False)

    def forward(self, x, edge_index, edge_attr=None):
        return self.conv(x, edge_index)


def random_graph(n: int, m: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(2, 2m) undirected edge_index without self-loops, and its (2, M) two-hop edges (A², self-loops removed)."""
    src = torch.randint(0, n, (m,), generator=generator)
    dst = (src + torch.randint(1, n, (m,), generator=generator)) % n
    edges = torch.unique(torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], 1), dim=1)
    adj = torch.zeros(n, n)
    adj[edges[0], edges[1]] = 1.0
    two = (adj @ adj) > 0
    two.fill_diagonal_(False)
    return edges, two.nonzero().T.contiguous()


def main() -> None:
    args = exporter_args(__doc__.splitlines()[0], "VITA-Group/Graph-Mixture-of-Experts")
    sys.path.insert(0, str(args.upstream / "graphproppred"))
    from moe import MoE  # the reference layer (needs torch and numpy only)

    c = CONFIG
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    edge_index, edge_index_2hop = random_graph(c["num_nodes"], 16, gen)
    x = torch.randn(c["num_nodes"], c["in_dim"], generator=gen)
    target_weights = torch.randn(c["num_nodes"], c["out_dim"], generator=gen)
    convs = nn.ModuleList(ReferenceCallGCN(c["in_dim"], c["out_dim"]) for _ in range(c["num_experts"]))
    bns = nn.ModuleList(nn.BatchNorm1d(c["out_dim"]) for _ in range(c["num_experts"]))
    moe = MoE(
        c["in_dim"],
        c["out_dim"],
        c["num_experts"],
        convs,
        bns,
        noisy_gating=True,
        k=c["k"],
        coef=c["coef"],
        num_experts_1hop=c["num_hop1"],
    )
    with torch.no_grad():
        moe.w_gate.copy_(torch.randn(c["in_dim"], c["num_experts"], generator=gen))
        moe.w_noise.copy_(0.5 * torch.randn(c["in_dim"], c["num_experts"], generator=gen))
        for bn in bns:  # non-trivial affine parameters
            bn.weight.copy_(1 + 0.1 * torch.randn(c["out_dim"], generator=gen))
            bn.bias.copy_(0.1 * torch.randn(c["out_dim"], generator=gen))
    moe.train()
    state = {k: v.clone() for k, v in moe.state_dict().items()}

    recorded: dict[str, torch.Tensor] = {}
    gating = moe.noisy_top_k_gating

    def recording_gating(inputs, train, *rest):
        gates, load = gating(inputs, train, *rest)
        recorded["gates"], recorded["load"] = gates.detach().clone(), load.detach().clone()
        return gates, load

    moe.noisy_top_k_gating = recording_gating  # observe the gate; the computation is unchanged
    experts: list[torch.Tensor] = []
    for bn in bns:
        bn.register_forward_hook(lambda _m, _i, out: experts.append(out.detach().clone()))

    torch.manual_seed(NOISE_SEED)
    noise = torch.randn(c["num_nodes"], c["num_experts"])
    torch.manual_seed(NOISE_SEED)
    y, aux = moe(x, edge_index, None, edge_index_2hop, None)
    objective = (y * target_weights).sum() + aux
    optimizer = torch.optim.SGD(moe.parameters(), lr=LR)
    optimizer.zero_grad()
    objective.backward()
    grads = {name: p.grad.detach().clone() for name, p in moe.named_parameters()}
    optimizer.step()

    fixture = {
        "meta": {
            "upstream": "VITA-Group/Graph-Mixture-of-Experts",
            "commit": args.commit,
            "call": (
                "graphproppred/moe.py MoE(in_dim, out_dim, num_experts, experts_conv=[PyG GCNConv x E], "
                "experts_bn=[BatchNorm1d x E], noisy_gating=True, k, coef, num_experts_1hop) in train mode; "
                "torch.manual_seed(noise_seed); y, loss = moe(x, edge_index, None, edge_index_2hop, None); "
                "objective = sum(y * R) + loss; SGD(lr).step()"
            ),
            "config": dict(c, seed=SEED, noise_seed=NOISE_SEED, optimizer="SGD", lr=LR),
            "exported_with": {"torch": str(torch.__version__), "torch_geometric": torch_geometric.__version__},
        },
        "inputs": {
            "x": x,
            "edge_index": edge_index,
            "edge_index_2hop": edge_index_2hop,
            "target_weights": target_weights,
            "noise": noise,
        },
        "state": state,
        "outputs": {
            "y": y.detach(),
            "gates": recorded["gates"],
            "load": recorded["load"],
            "expert_outputs": torch.stack(experts, dim=1),
        },
        "loss": {"aux": aux.detach().reshape(()), "objective": objective.detach()},
        "grads": grads,
        "after_step": {k: v.clone() for k, v in moe.state_dict().items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(fixture, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
