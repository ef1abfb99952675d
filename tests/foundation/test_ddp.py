"""Data parallel training with MoE layers gives the 1-process result: 2 CPU processes (gloo), each with half the
batch, end where one process on the whole batch ends.

- ``test_moe_ddp_matches_single_process``: plain ``torch.nn.parallel.DistributedDataParallel`` around a model with
  a ``zoo.moe.MoE`` layer whose router is ``sigmoid_bias``; its expert-bias update must see the global load
  (``SigmoidBiasRouter.update_bias`` all-reduces it), so the biases stay identical on both processes (buffer
  broadcast is off, to prove it) and equal to the 1-process biases, and the weights match.
- ``test_two_process_ddp_matches_single_process``: the toy task (digits classifier whose hidden block is an MoE
  layer with the ``sigmoid_bias`` router) through the ``zoo`` CLI under Lightning's DDP strategy ends at the
  1-process metrics within float tolerance (1e-4 on the loss): the global batches are the same, since shuffling
  is off and the datamodule shards the data itself; its routing summary covers both processes' batches.
- ``test_a_finished_ddp_run_leaves_no_process_group``: ``zoo fit`` destroys the gloo group when the run returns.
"""

import json

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from zoo_testing import hang_guard, run_zoo

from zoo.moe import MoE

STEPS, BATCH = 6, 32


def _model() -> nn.Module:
    torch.manual_seed(0)
    model = nn.ModuleDict(
        {
            "inp": nn.Linear(6, 8),
            "moe": MoE(8, 16, 4, top_k=2, router="sigmoid_bias", router_kwargs={"bias_update_rate": 0.05}),
            "out": nn.Linear(8, 1),
        }
    )
    with torch.no_grad():  # skew the router so that the load is unbalanced and the bias has work to do
        model["moe"].router.gate.weight[0] += 0.8
    return model


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(STEPS, BATCH, 6, generator=g), torch.randn(STEPS, BATCH, 1, generator=g)


def _train(model: nn.Module, core: nn.Module, rank: int, world: int) -> None:
    """SGD on this process's share of each global batch; ``model`` may be the DDP wrapper of ``core``."""
    opt = torch.optim.SGD(core.parameters(), lr=0.1)
    xs, ys = _data()
    share = BATCH // world
    for x, y in zip(xs, ys, strict=True):
        x, y = x[rank * share : (rank + 1) * share], y[rank * share : (rank + 1) * share]
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()


class _Net(nn.Module):
    def __init__(self, core: nn.ModuleDict):
        super().__init__()
        self.core = core

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.core["inp"](x))
        y, _routing = self.core["moe"](h)
        return self.core["out"](h + y)


def _worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        net = _Net(_model())
        ddp = nn.parallel.DistributedDataParallel(net, broadcast_buffers=False)
        _train(ddp, net, rank, world)
        torch.save(net.state_dict(), f"{out_dir}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.mark.slow(reason="two gloo processes train")
def test_moe_ddp_matches_single_process(tmp_path):
    mp.spawn(_worker, args=(2, str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    single = _Net(_model())
    _train(single, single, 0, 1)
    ref = single.state_dict()
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    bias = "core.moe.router.expert_bias"
    assert ref[bias].abs().sum() > 0  # the bias moved
    for sd in ranks:
        assert torch.equal(sd[bias], ref[bias]), (sd[bias], ref[bias])  # global load on every process
        for key, value in ref.items():
            torch.testing.assert_close(sd[key], value, atol=1e-5, rtol=1e-5)


def _metrics(run_dir):
    return json.loads(next((run_dir / "lightning_logs").glob("version_*/run_fit.json")).read_text())["metrics"]


def _summary(run_dir):
    return json.loads(next((run_dir / "lightning_logs").glob("version_*/routing_summary.json")).read_text())


@pytest.mark.slow(reason="zoo fit at world 1 and at world 2 (gloo)")
def test_two_process_ddp_matches_single_process(zoo_env, tmp_path):
    common = [
        "fit",
        "--task",
        "toy",
        "--trainer.max_epochs",
        "2",
        "--data.init_args.shuffle",
        "false",
        "--model.init_args.num_experts",
        "4",
        "--model.init_args.router",
        "sigmoid_bias",
        "--model.init_args.optimizer",
        "sgd",
        "--model.init_args.lr",
        "0.1",
    ]
    one = run_zoo(
        [*common, "--data.init_args.batch_size", "64", "--trainer.default_root_dir", "one"], zoo_env, tmp_path
    )
    assert one.returncode == 0, one.stderr[-3000:]
    two = run_zoo(
        [
            *common,
            "--data.init_args.batch_size",
            "32",
            "--trainer.devices",
            "2",
            "--trainer.strategy",
            "ddp",
            "--trainer.use_distributed_sampler",
            "false",
            "--trainer.default_root_dir",
            "two",
        ],
        zoo_env,
        tmp_path,
    )
    assert two.returncode == 0, two.stderr[-3000:]
    a, b = _metrics(tmp_path / "one"), _metrics(tmp_path / "two")
    # tolerance: float32 all-reduce sums in a different order than one big batch. SGD, not Adam: Adam divides
    # by sqrt(v) and so turns that rounding noise in near-zero gradients into full-size steps.
    assert abs(a["val/loss"] - b["val/loss"]) < 1e-4, (a, b)
    assert abs(a["val/acc"] - b["val/acc"]) < 1e-6, (a, b)
    # the routing summary covers every process's batches: the same tokens and (same biases) the same load
    sa, sb = (_summary(tmp_path / d)["train"]["block"] for d in ("one", "two"))
    assert sa["tokens"] == sb["tokens"] == 2 * 1200 and sb["steps"] == 2 * sa["steps"]
    assert max(abs(x - y) for x, y in zip(sa["load"], sb["load"], strict=True)) < 1e-3, (sa, sb)


@pytest.mark.slow(reason="a ddp zoo fit in a subprocess")
def test_a_finished_ddp_run_leaves_no_process_group(zoo_env, tmp_path):
    """Lightning destroys only NCCL groups at exit; a gloo group left to interpreter teardown can abort the
    finished process (SIGABRT from gloo's worker threads), so ``zoo fit`` destroys it when the run returns."""
    import subprocess
    import sys

    script = (
        "import sys, torch.distributed as dist\n"
        "from zoo.cli.main import _run\n"
        "args = ['fit', '--task', 'toy', '--trainer.max_epochs', '1', '--trainer.strategy', 'ddp', "
        "'--trainer.devices', '1', '--trainer.default_root_dir', 'run']\n"
        "code = _run(args)\n"
        "print('initialized after the run:', dist.is_initialized())\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=zoo_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=hang_guard(300),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "initialized after the run: False" in done.stdout, done.stdout[-2000:]
