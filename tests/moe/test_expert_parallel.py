"""Expert parallelism (``zoo.moe.ExpertParallelMoE``) means what one ``zoo.moe.MoE`` means on the ranks' batches put
together: 2 gloo CPU processes (1 thread each), each with E / 2 experts, against one process with all E.

One spawn (module fixture ``two_ranks``) runs every scenario on both ranks and saves what they saw; the one-process
references are computed here. Per expert-parallel group the reference is one `MoE` (same weights) on the group's
batches concatenated in rank order; each rank's loss is ``(y * target).mean() + layer.aux_loss(routing)`` and the
objective is the mean of the ranks' losses. fp32, compared at 1e-6 of each tensor's largest value.

- outputs, input gradients (a rank's own loss: world size times its share of the mean) and every parameter gradient
  after ``reduce_gradients``, for: top-k with shared experts, a condition and every aux loss (ERC too); capacity
  overflow with padding; dtop_p (a k per token) with capacity; the grouped router; an expert and a whole rank that
  receive no token; and world 2 as plain data parallel (ep_size 1);
- routing: the same kept slots and weights, capacity and dropped slots (summed over the ranks), aux values, and
  routing summaries that add up to the one-process one; dtop_p's threshold state identical;
- the sigmoid_bias router's bias stays identical on both ranks, and equal to one process's, over training steps;
- state dicts gather into the one-process layout and shard back (world 2 <-> world 1), ModuleList experts included;
- ``gradient_buckets`` puts every parameter in exactly one group: experts in their dp group, the rest in the world.
In this process, without communication: capacity over 3 simulated ranks equals ``apply_capacity`` on their batch.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from zoo.moe import LOSSES, MoE, apply_capacity, make_router, routing_summary
from zoo.moe.errors import ConfigError
from zoo.moe.expert_parallel import ExpertParallelMoE, to_expert_parallel
from zoo.moe.parallel_groups import build_parallel_groups, gradient_buckets, reduce_gradients
from zoo.moe.parallel_routing import apply_global_capacity, group_counts, local_counts
from zoo.moe.parallel_state_dict import gather_state_dict, shard_state_dict

WORLD, BATCH, SEQ, DIM = 2, 3, 5, 8
ALL_AUX = {"load_balance": 0.3, "z": 0.1, "cv_squared": 0.2, "entropy": 0.05}

# name -> expert-parallel size, MoE arguments, data: condition / padding / a router skewed to overflow / starved experts
CONFIGS = {
    "topk_shared_condition_erc": dict(
        ep=2,
        layer=dict(router="topk", num_shared=1, condition_dim=2, aux_weights={**ALL_AUX, "erc": 0.5}),
        condition=True,
    ),
    "capacity_overflow_padding": dict(
        ep=2,
        layer=dict(router="topk", experts="swiglu", capacity_factor=0.6, aux_weights=ALL_AUX),
        valid=True,
        skew=True,
    ),
    "dtop_p_capacity": dict(
        ep=2,
        layer=dict(router="dtop_p", experts="lowrank", rank=3, capacity_factor=0.5, aux_weights=ALL_AUX),
        valid=True,
    ),
    "grouped": dict(
        ep=2,
        layer=dict(
            router="grouped",
            top_k=1,
            condition_dim=2,
            router_kwargs={"num_tasks": 2, "experts_per_task": 1, "num_shared_group": 1},
            aux_weights=ALL_AUX,
        ),
        condition=True,
    ),
    "expert_without_tokens": dict(ep=2, layer=dict(router="topk", top_k=1, aux_weights=ALL_AUX), starve=[1, 3]),
    "rank_without_tokens": dict(ep=2, layer=dict(router="topk", aux_weights=ALL_AUX), starve=[2, 3]),
    "data_parallel_only": dict(ep=1, layer=dict(router="topk", capacity_factor=0.8, aux_weights=ALL_AUX), valid=True),
}


def _layer(cfg: dict) -> MoE:
    torch.manual_seed(0)
    layer = MoE(DIM, 12, 4, **{"top_k": 2, **cfg["layer"]})
    with torch.no_grad():
        if cfg.get("skew"):
            layer.router.gate.weight[0] += 0.8
        for e in cfg.get("starve", ()):
            layer.router.gate.weight[e, 0] = -10.0  # feature 0 is 5 on every token (see _data): never picked
    return layer


def _data(cfg: dict) -> dict:
    """Every rank's batch, (WORLD, BATCH, SEQ, ...): x, target, and valid / condition (one per sample) when used."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(WORLD, BATCH, SEQ, DIM, generator=g)
    if cfg.get("starve"):
        x[..., 0] = 5.0
    out = {"x": x, "target": torch.randn(WORLD, BATCH, SEQ, DIM, generator=g)}
    if cfg.get("valid"):
        out["valid"] = torch.rand(WORLD, BATCH, SEQ, generator=g) > 0.25
    if cfg.get("condition"):
        out["condition"] = torch.eye(2)[torch.randint(0, 2, (WORLD, BATCH), generator=g)]
    return out


def _close(actual: torch.Tensor, expected: torch.Tensor, what: str, tol: float = 1e-6) -> None:
    scale = expected.abs().max().clamp_min(1e-12)
    err = (actual - expected).abs().max() / scale
    assert actual.shape == expected.shape and err <= tol, f"{what}: relative error {float(err):.3g} > {tol}"


# ---------------------------------------------------------------- the two ranks


def _forward_backward(rank: int, cfg: dict) -> dict:
    groups = build_parallel_groups(cfg["ep"])
    layer = ExpertParallelMoE.from_layer(_layer(cfg), groups.ep_group)
    data = {k: v[rank] for k, v in _data(cfg).items()}
    x = data["x"].clone().requires_grad_()
    y, routing = layer(x, condition=data.get("condition"), valid=data.get("valid"))
    aux = layer.aux_loss(routing)
    ((y * data["target"]).mean() + aux).backward()
    reduce_gradients(layer, groups)
    return {
        "y": y.detach(),
        "aux_loss": aux.detach(),
        "x_grad": x.grad,
        "grads": {n: p.grad for n, p in layer.named_parameters()},
        "first_expert": layer.first_expert,
        "num_local": layer.num_local_experts,
        "routing": routing.detach(),
        "summary": routing_summary(routing),
        "buffers": {n: b.clone() for n, b in layer.router.named_buffers()},
    }


def _net() -> nn.ModuleDict:
    torch.manual_seed(0)
    net = nn.ModuleDict(
        {
            "inp": nn.Linear(6, DIM),
            "moe": MoE(DIM, 12, 4, router="sigmoid_bias", router_kwargs={"bias_update_rate": 0.05}),
            "out": nn.Linear(DIM, 1),
        }
    )
    with torch.no_grad():  # unbalanced load: the bias has work to do
        net["moe"].router.gate.weight[0] += 0.8
    return net


def _train(net: nn.ModuleDict, ranks: list[int], after_backward) -> None:
    """Three SGD steps on the batches of ``ranks`` put together (one forward, as one process runs them)."""
    g = torch.Generator().manual_seed(2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(3):
        x, t = torch.randn(WORLD, 16, 6, generator=g), torch.randn(WORLD, 16, 1, generator=g)
        x, t = torch.cat([x[r] for r in ranks]), torch.cat([t[r] for r in ranks])
        opt.zero_grad()
        h = torch.relu(net["inp"](x))
        y, _ = net["moe"](h)
        nn.functional.mse_loss(net["out"](h + y), t).backward()
        after_backward()
        opt.step()


def _sigmoid_bias_training(rank: int) -> dict:
    groups = build_parallel_groups(2)
    net = to_expert_parallel(_net(), groups.ep_group)
    _train(net, [rank], lambda: reduce_gradients(net, groups))
    return {"bias": net["moe"].router.expert_bias.clone(), "state": gather_state_dict(net)}


def _heterogeneous_net(seed: int) -> nn.ModuleDict:
    """A stacked-expert layer with shared experts and a layer of ModuleList experts of two shapes."""
    torch.manual_seed(seed)
    experts = nn.ModuleList(
        [nn.Linear(DIM, DIM) if e % 2 else nn.Sequential(nn.Linear(DIM, 4), nn.Linear(4, DIM)) for e in range(4)]
    )
    return nn.ModuleDict({"a": MoE(DIM, 12, 4, experts="ffn", num_shared=1), "b": MoE(DIM, 12, 4, experts=experts)})


def _state_dicts(rank: int) -> dict:
    net = to_expert_parallel(_heterogeneous_net(3), None)

    def copied(state: dict) -> dict:  # state dicts hold the parameters themselves: keep them from the load below
        return {k: v.clone() for k, v in state.items()}

    local, full = copied(net.state_dict()), copied(gather_state_dict(net))
    round_trip = shard_state_dict(full, net)
    net.load_state_dict(shard_state_dict(_heterogeneous_net(4).state_dict(), net))  # a one-process checkpoint
    x = torch.randn(2, 6, DIM, generator=torch.Generator().manual_seed(5))
    outputs = {k: net[k](x).output.detach() for k in ("a", "b")}
    return {"full": full, "local": local, "round_trip": round_trip, "resharded_outputs": outputs}


def _buckets(rank: int) -> dict:
    out = {}
    for ep in (2, 1):
        groups = build_parallel_groups(ep)
        net = to_expert_parallel(_net(), groups.ep_group)
        out[ep] = [(b.kind, b.ranks, b.divisor, b.names) for b in gradient_buckets(net, groups)]
    try:
        ExpertParallelMoE.from_layer(MoE(DIM, 12, 3), None)
    except ConfigError as err:
        out["indivisible"] = str(err)
    return out


def _worker(rank: int, init_file: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        results = {name: _forward_backward(rank, cfg) for name, cfg in CONFIGS.items()}
        results["sigmoid_bias"] = _sigmoid_bias_training(rank)
        results["state_dicts"] = _state_dicts(rank)
        results["buckets"] = _buckets(rank)
        torch.save(results, f"{out_dir}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("expert_parallel")
    mp.spawn(_worker, args=(str(out / "init"), str(out)), nprocs=WORLD, join=True)
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(WORLD)]


# ---------------------------------------------------------------- one process, the reference


class _Reference:
    """One `MoE` per expert-parallel group on the group's batches in rank order; backward of the ranks' mean loss."""

    def __init__(self, name: str):
        cfg = CONFIGS[name]
        self.layer, data, ep = _layer(cfg), _data(cfg), cfg["ep"]
        self.x = data["x"].clone().requires_grad_()
        self.y, self.routing, self.rows, self.aux_loss = {}, {}, {}, {}
        objective = torch.zeros(())
        for first in range(0, WORLD, ep):
            ranks = list(range(first, first + ep))
            joined = {k: torch.cat([data[k][r] for r in ranks]) for k in ("condition", "valid") if k in data}
            y, routing = self.layer(torch.cat([self.x[r] for r in ranks]), **joined)
            for i, r in enumerate(ranks):
                self.y[r] = y[i * BATCH : (i + 1) * BATCH]
                self.routing[r], self.rows[r] = routing, slice(i * BATCH * SEQ, (i + 1) * BATCH * SEQ)
                objective = objective + (self.y[r] * data["target"][r]).mean() / WORLD
            aux = self.layer.aux_loss(routing)  # once per group: "erc" draws its proxies' noise, as each rank does
            self.aux_loss.update({r: aux.detach() for r in ranks})
            objective = objective + aux * len(ranks) / WORLD
        objective.backward()
        self.group_of = {r: list(range(r - r % ep, r - r % ep + ep)) for r in range(WORLD)}


_REFERENCES: dict[str, _Reference] = {}


def _reference(name: str) -> _Reference:
    if name not in _REFERENCES:
        _REFERENCES[name] = _Reference(name)
    return _REFERENCES[name]


def _padded(t: torch.Tensor, columns: int, fill) -> torch.Tensor:
    return torch.cat([t, t.new_full((t.shape[0], columns - t.shape[1]), fill)], dim=1)


def _aux_value(routing, name: str) -> torch.Tensor:
    return routing.aux[name] if name in routing.aux else LOSSES[name](routing)


# ---------------------------------------------------------------- the claims


@pytest.mark.parametrize("name", CONFIGS)
def test_outputs_and_gradients_match_one_process(two_ranks, name):
    ref = _reference(name)
    for rank, result in enumerate(two_ranks):
        got = result[name]
        _close(got["y"], ref.y[rank].detach(), f"rank {rank} output")
        _close(got["x_grad"], WORLD * ref.x.grad[rank], f"rank {rank} input gradient")
        first, n = got["first_expert"], got["num_local"]
        for pname, p in ref.layer.named_parameters():
            expected = p.grad[first : first + n] if pname.startswith("experts.") else p.grad
            _close(got["grads"][pname], expected, f"rank {rank} gradient of {pname}")


@pytest.mark.parametrize("name", CONFIGS)
def test_routing_capacity_and_aux_match_one_process(two_ranks, name):
    ref = _reference(name)
    for rank, result in enumerate(two_ranks):
        got, expected, rows = result[name]["routing"], ref.routing[rank], ref.rows[rank]
        columns = expected.indices.shape[1]
        assert torch.equal(_padded(got.indices, columns, -1), expected.indices[rows]), f"rank {rank} kept slots"
        _close(_padded(got.weights, columns, 0.0), expected.weights[rows].detach(), f"rank {rank} weights")
        for aux in ALL_AUX:
            _close(got.aux[aux], _aux_value(expected, aux).detach(), f"rank {rank} aux {aux}")
        _close(result[name]["aux_loss"], ref.aux_loss[rank], f"rank {rank} weighted aux loss (erc included)")
        if "capacity" in expected.stats:
            assert int(got.stats["capacity"]) == int(expected.stats["capacity"])
    for ranks in {tuple(g) for g in ref.group_of.values()}:
        merged = two_ranks[ranks[0]][name]["summary"]
        for r in ranks[1:]:
            merged = merged.merge(two_ranks[r][name]["summary"])
        one = routing_summary(ref.routing[ranks[0]]).layers["moe"]
        got = merged.layers["moe"]
        assert (got.counts, got.tokens, got.dropped, got.dropped_tokens) == (
            one.counts,
            one.tokens,
            one.dropped,
            one.dropped_tokens,
        )
        assert got.entropy_sum == pytest.approx(one.entropy_sum, rel=1e-6)


def test_capacity_overflow_really_drops(two_ranks):
    """The capacity configurations drop slots on each rank, as many as one process drops on their batch."""
    for name in ("capacity_overflow_padding", "dtop_p_capacity"):
        dropped = [int(two_ranks[r][name]["routing"].stats["dropped"]) for r in range(WORLD)]
        assert min(dropped) > 0 and sum(dropped) == int(_reference(name).routing[0].stats["dropped"]), (name, dropped)


def test_dtop_p_threshold_state_is_the_one_process_state_on_both_ranks(two_ranks):
    expected = dict(_reference("dtop_p_capacity").layer.router.named_buffers())
    for result in two_ranks:
        for key in ("threshold", "integral"):
            assert torch.equal(result["dtop_p_capacity"]["buffers"][key], expected[key]), key
    assert expected["integral"] != 0  # the controller moved


def test_a_rank_without_tokens_gets_zero_expert_gradients(two_ranks):
    got = two_ranks[1]["rank_without_tokens"]
    assert got["routing"].indices.ge(2).sum() == 0 and two_ranks[0]["rank_without_tokens"]["routing"].indices.max() < 2
    assert all(got["grads"][n].abs().sum() == 0 for n in got["grads"] if n.startswith("experts."))


def test_sigmoid_bias_state_stays_identical_over_steps(two_ranks):
    single = _net()
    _train(single, list(range(WORLD)), lambda: None)
    expected = single.state_dict()
    assert expected["moe.router.expert_bias"].abs().sum() > 0  # the bias moved
    for result in two_ranks:
        got = result["sigmoid_bias"]
        assert torch.equal(got["bias"], expected["moe.router.expert_bias"])
        assert list(got["state"]) == list(expected)
        for key, value in expected.items():
            _close(got["state"][key].float(), value.float(), key, tol=1e-5)


def test_state_dicts_gather_and_shard_between_world_1_and_2(two_ranks):
    one = _heterogeneous_net(3).state_dict()
    other = _heterogeneous_net(4)
    x = torch.randn(2, 6, DIM, generator=torch.Generator().manual_seed(5))
    for result in two_ranks:
        got = result["state_dicts"]
        assert list(got["full"]) == list(one) and all(torch.equal(got["full"][k], v) for k, v in one.items())
        assert list(got["round_trip"]) == list(got["local"])
        assert all(torch.equal(got["round_trip"][k], v) for k, v in got["local"].items())
        for k in ("a", "b"):
            _close(got["resharded_outputs"][k], other[k](x).output.detach(), f"layer {k} after resharding")
    assert two_ranks[1]["state_dicts"]["local"]["a.experts.w1"].shape == (2, DIM, 12)
    assert set(two_ranks[1]["state_dicts"]["local"]) >= {"b.experts.experts.0.0.weight", "b.experts.experts.1.weight"}


@pytest.mark.parametrize("ep_size", [2, 1])
def test_gradient_buckets_reduce_every_parameter_once_in_its_group(two_ranks, ep_size):
    names = [n for n, _ in _net().named_parameters()]
    for rank, result in enumerate(two_ranks):
        buckets = {kind: (ranks, divisor, listed) for kind, ranks, divisor, listed in result["buckets"][ep_size]}
        listed = [n for _, _, names_ in buckets.values() for n in names_]
        assert sorted(listed) == sorted(names) and len(set(listed)) == len(listed)
        assert set(buckets["expert"][2]) == {n for n in names if n.startswith("moe.experts.")}
        assert buckets["expert"][0] == ((rank,) if ep_size == 2 else (0, 1))
        assert buckets["replicated"][0] == (0, 1)
        assert {divisor for _, divisor, _ in buckets.values()} == {WORLD}


def test_experts_must_split_evenly(two_ranks):
    assert "3 experts do not split over 2" in two_ranks[0]["buckets"]["indivisible"]


def test_batch_choosing_routers_and_other_layers_are_refused():
    with pytest.raises(ConfigError, match="per-token router"):
        ExpertParallelMoE.from_layer(MoE(DIM, 12, 4, router="expert_choice"))

    class Custom(MoE):
        pass

    with pytest.raises(ConfigError, match="converts a zoo.moe.MoE"):
        ExpertParallelMoE.from_layer(Custom(DIM, 12, 4))


def test_capacity_over_simulated_ranks_equals_one_process_capacity():
    """Three ranks (one of them empty) with different slot counts per token (dtop_p), without communication."""
    torch.manual_seed(0)
    router = make_router("dtop_p", DIM, 6, top_k=2).eval()
    x, valid = torch.randn(14, DIM), torch.rand(14) > 0.2
    parts = [slice(0, 5), slice(5, 5), slice(5, 14)]
    expected = apply_capacity(router(x, valid=valid), 0.7)
    columns = expected.indices.shape[1]
    routings = [router(x[s], valid=valid[s]) for s in parts]
    assert len({r.indices.shape[1] for r in routings}) > 1  # the ranks' k differ
    gathered = torch.stack([local_counts(r, columns) for r in routings])
    dropped = 0
    for rank, (s, routing) in enumerate(zip(parts, routings, strict=True)):
        got, kept = apply_global_capacity(routing, group_counts(gathered, 6, rank), 0.7)
        assert torch.equal(_padded(got.indices, columns, -1), expected.indices[s])
        assert torch.equal(kept[rank], got.expert_counts())
        assert int(got.stats["capacity"]) == int(expected.stats["capacity"])
        dropped += int(got.stats["dropped"])
    assert dropped == int(expected.stats["dropped"]) > 0
