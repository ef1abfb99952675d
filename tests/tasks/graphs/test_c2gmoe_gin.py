"""zoo_tasks.graphs.gin: GIN-0's forward equals the paper's equations written out densely; it learns a toy task."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch_geometric.data import Batch, Data

from zoo_tasks.graphs.gin import GIN
from zoo_tasks.graphs.module import GraphClassifier


def _batch() -> Batch:
    g = torch.Generator().manual_seed(0)
    triangle = Data(x=torch.randn(3, 4, generator=g), edge_index=torch.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]]))
    path = Data(x=torch.randn(4, 4, generator=g), edge_index=torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]]))
    return Batch.from_data_list([triangle, path])


def _bn_eval(bn: torch.nn.BatchNorm1d, h: torch.Tensor) -> torch.Tensor:
    return (h - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias


def test_gin0_forward_matches_the_equations_by_hand():
    torch.manual_seed(0)
    model = GIN(in_dim=4, num_classes=3, hidden=8, num_layers=2, dropout=0.5).eval()
    for bn in model.modules():  # non-trivial BatchNorm statistics and affine terms
        if isinstance(bn, torch.nn.BatchNorm1d):
            bn.running_mean.uniform_(-1, 1), bn.running_var.uniform_(0.5, 2), bn.weight.data.uniform_(0.5, 2)
    batch = _batch()
    out = model(batch.x, batch.edge_index, None, batch.batch)

    n = batch.num_nodes
    adj = torch.zeros(n, n)
    adj[batch.edge_index[1], batch.edge_index[0]] = 1.0  # row v sums the messages of v's neighbours
    pool = F.one_hot(batch.batch).float().t()  # (B, N): sum readout
    hs = [batch.x]
    for conv, norm in zip(model.convs, model.norms):
        lin1, bn, _, lin2 = conv.nn
        z = (1 + 0.0) * hs[-1] + adj @ hs[-1]  # Eq. 4.1 with eps = 0
        z = lin2(torch.relu(_bn_eval(bn, lin1(z))))
        hs.append(torch.relu(_bn_eval(norm, z)))
    score = sum(linear(pool @ h) for h, linear in zip(hs, model.predict))  # Eq. 4.2: every depth, the input included
    assert torch.allclose(out.log_probs, F.log_softmax(score, -1), atol=1e-6)
    assert out.log_probs.shape == (2, 3) and not out.routings and float(out.aux_loss) == 0.0
    assert not any("eps" in name for name, _ in model.named_parameters())  # GIN-0: eps fixed, not learnt


def test_gin_classifier_learns_to_tell_triangles_from_paths():
    torch.manual_seed(0)
    graphs = []
    b = _batch()
    for _ in range(16):
        graphs += [Data(x=torch.ones(3, 1), edge_index=b[0].edge_index, y=torch.tensor([0]))]
        graphs += [Data(x=torch.ones(4, 1), edge_index=b[1].edge_index, y=torch.tensor([1]))]
    batch = Batch.from_data_list(graphs)
    module = GraphClassifier(model="gin", in_dim=1, num_classes=2, hidden=16, num_layers=2, dropout=0.0)
    opt = module.configure_optimizers()
    losses = []
    for _ in range(30):
        loss = F.nll_loss(module(batch).log_probs, batch.y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.1 * losses[0]
