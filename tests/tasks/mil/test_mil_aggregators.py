"""MIL aggregators (tasks/mil/aggregators.py): every aggregator, with and without MAMMOTH (ours and the package):
a bag's logit does not depend on the order of its instances, nor on the padding of a batch (each shuffled bag alone
vs the padded batch). Real MUSK1 bags."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.mil.aggregators import AGGREGATORS, make_aggregator
from zoo_tasks.mil.mil_data import MUSK1DataModule, collate_bags
from zoo_tasks.mil.module import PROJECTIONS, MILModule


@pytest.fixture(scope="module")
def musk1_batch(data_mirror):
    data = MUSK1DataModule(fold=0, repeat=0)
    data.setup()
    bags = sorted(range(len(data.bags.labels)), key=lambda i: -len(data.bags.features[i]))[:4:2]
    bags.append(min(range(len(data.bags.labels)), key=lambda i: len(data.bags.features[i])))
    return collate_bags(data._items(bags))


def _model(aggregator: str, projection: str) -> MILModule:
    if projection == "mammoth_pkg":
        pytest.importorskip("mammoth")
    torch.manual_seed(0)
    return MILModule(166, aggregator=aggregator, projection=projection, plot_bags=0).eval()


@pytest.mark.parametrize("projection", PROJECTIONS)
@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_bag_permutation_invariance(musk1_batch, aggregator, projection):
    model = _model(aggregator, projection)
    x, mask = musk1_batch["x"], musk1_batch["mask"]
    with torch.no_grad():
        logits = model(x, mask).logits
        for i in range(x.shape[0]):
            n = int(mask[i].sum())
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(i))
            shuffled = model(x[i : i + 1, perm], mask[i : i + 1, :n]).logits
            torch.testing.assert_close(shuffled, logits[i : i + 1], rtol=1e-4, atol=1e-5)


def test_attention_is_a_distribution_over_real_instances(musk1_batch):
    for name in ("abmil", "gated_abmil", "dsmil"):
        agg = make_aggregator(name, 166).eval()
        _, attention = agg(musk1_batch["x"], musk1_batch["mask"])
        torch.testing.assert_close(attention.sum(1), torch.ones(attention.shape[0]))
        assert attention[~musk1_batch["mask"]].abs().max() == 0


def test_unknown_names_raise():
    with pytest.raises(ConfigError, match="aggregator"):
        make_aggregator("transmil", 8)
    with pytest.raises(ConfigError, match="projection"):
        MILModule(8, projection="mlp")
    with pytest.raises(ConfigError, match="in_dim must be 64"):
        MILModule(32, encoder="digits_cnn")
