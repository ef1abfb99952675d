"""``zoo fit`` with ``--trainer.strategy zoo.distributed.ExpertParallelStrategy``: two gloo CPU processes, each
holding half the experts of the toy task's MoE block (``tests/fixtures/toy_plugin``), train as one process on the
same global batch, and their checkpoints are world-size free.

- world 2 (ep_size 2, batch 32 a rank) ends where world 1 (two accumulated batches of 32) ends: the validation loss
  and accuracy, and every tensor of the last checkpoint (saved in the one-process layout), within float tolerance;
- resharding: a run saved at world 2 resumes at world 1 (``--ckpt_path`` its last checkpoint) and a run saved at
  world 1 resumes at world 2; both end where three uninterrupted epochs at world 1 end;
- Adam's state gathers into the one-process layout and shards back exactly (``zoo.distributed.optimizer_state``);
- a model without ``zoo.moe.MoE`` layers is refused in one line;
- memory: each process builds only its experts (``zoo.distributed.local_build``), so experts over one process's
  budget (``--trainer.strategy.max_expert_mib``) train at world 2 and are refused in one line at world 1.
SGD, no shuffling, the datamodule shards the data itself (see tests/foundation/test_ddp.py for why).
"""

from __future__ import annotations

import json

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from zoo_testing import run_zoo

from zoo.distributed import gather_optimizer_state, shard_optimizer_state
from zoo.moe import MoE, gather_state_dict, to_expert_parallel

pytestmark = pytest.mark.slow(reason="zoo fit at world 1 and 2 (gloo processes), resumed across world sizes")

COMMON = [
    "fit",
    "--task",
    "toy",
    "--data.init_args.shuffle",
    "false",
    "--model.init_args.num_experts",
    "4",
    "--model.init_args.optimizer",
    "sgd",
    "--model.init_args.lr",
    "0.1",
    "--trainer.enable_progress_bar",
    "false",
]
WORLD_2 = [
    "--trainer.limit_train_batches",
    "18",
    "--data.init_args.batch_size",
    "32",
    "--trainer.devices",
    "2",
    "--trainer.accelerator",
    "cpu",
    "--trainer.strategy",
    "zoo.distributed.ExpertParallelStrategy",
    "--trainer.strategy.ep_size",
    "2",
    "--trainer.use_distributed_sampler",
    "false",
]
# world 1 takes the same global batch of 64 as two micro-batches of 32: the per-process batch size is a data setting
# that a resumed run must keep (zoo.cli.checkpoint_check), and with SGD the accumulated gradient is the same. 18 full
# global batches an epoch (of the 1200 training digits): a last, smaller batch would weigh its two halves unequally.
WORLD_1 = [
    "--data.init_args.batch_size",
    "32",
    "--trainer.accumulate_grad_batches",
    "2",
    "--trainer.limit_train_batches",
    "36",
]


def _fit(env, cwd, folder: str, world: list[str], epochs: int, ckpt: str | None = None) -> None:
    args = [*COMMON, *world, "--trainer.max_epochs", str(epochs), "--trainer.default_root_dir", folder]
    done = run_zoo([*args, *(["--ckpt_path", ckpt] if ckpt else [])], env, cwd)
    assert done.returncode == 0, done.stderr[-3000:]


def _run_fit(run_dir) -> dict:
    files = sorted((run_dir / "lightning_logs").glob("version_*/run_fit.json"))
    return json.loads(files[-1].read_text())


def _metrics(run_dir) -> dict:
    return _run_fit(run_dir)["metrics"]


def _weights(run_dir) -> dict:
    return torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=True)["state_dict"]


def _same_end(a, b) -> None:
    ma, mb = _metrics(a), _metrics(b)
    assert abs(ma["val/loss"] - mb["val/loss"]) < 1e-4, (ma, mb)
    assert abs(ma["val/acc"] - mb["val/acc"]) < 1e-6, (ma, mb)
    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys()
    for key in wa:  # the experts too: checkpoints hold all 4 experts whatever the world size
        torch.testing.assert_close(wa[key], wb[key], atol=1e-5, rtol=1e-5, msg=key)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, plugin_site):
    import os

    from zoo_testing import mirror

    cwd = tmp_path_factory.mktemp("ep")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_site), os.environ.get("PYTHONPATH", "")])}
    env.update(OMP_NUM_THREADS="1", ZOO_CACHE_DIR=str(cwd / "cache"))
    if mirror():
        env["ZOO_DATA_MIRROR"] = str(mirror())
    _fit(env, cwd, "one", WORLD_1, 2)
    _fit(env, cwd, "two", WORLD_2, 2)
    _fit(env, cwd, "straight", WORLD_1, 3)
    # each resumed run starts from the other world size's two-epoch checkpoint (those two epochs are not fitted
    # again) and fits its third epoch at its own world size, in a folder of its own
    for first, then, folder in (("two", WORLD_1, "two_then_one"), ("one", WORLD_2, "one_then_two")):
        _fit(env, cwd, folder, then, 3, ckpt=str(cwd / first / "checkpoints" / "last.ckpt"))
    return cwd


def test_world_2_expert_parallel_ends_where_world_1_ends(runs):
    _same_end(runs / "one", runs / "two")
    assert _weights(runs / "two")["block.experts.w1"].shape[0] == 4  # saved whole, not rank 0's half


@pytest.mark.parametrize("folder", ["two_then_one", "one_then_two"])
def test_a_run_resumes_at_the_other_world_size(runs, folder):
    assert _run_fit(runs / folder)["wall_time_before_resume_s"] > 0  # it went on from the checkpoint
    _same_end(runs / "straight", runs / folder)


def _optimizer_worker(rank: int, init_file: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    torch.manual_seed(0)
    layer = MoE(dim=6, hidden=5, num_experts=4, top_k=2)
    model = torch.nn.Sequential(torch.nn.Linear(6, 6), layer)
    full_opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(7, 6))[0].square().mean().backward()
    full_opt.step()
    whole = full_opt.state_dict()
    to_expert_parallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    opt.load_state_dict(shard_optimizer_state(whole, model, opt))
    gathered = gather_optimizer_state(model, opt)
    torch.save(
        {"whole": whole, "gathered": gathered, "local": opt.state_dict(), "state": gather_state_dict(model)},
        f"{out}/rank{rank}.pt",
    )
    dist.destroy_process_group()


def test_adam_state_gathers_and_shards_exactly(tmp_path):
    mp.spawn(_optimizer_worker, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    for rank in range(2):
        saved = torch.load(tmp_path / f"rank{rank}.pt", weights_only=False)
        whole, gathered, local = saved["whole"], saved["gathered"], saved["local"]
        assert whole["state"].keys() == gathered["state"].keys()
        for index, entry in whole["state"].items():
            for key, value in entry.items():
                assert torch.equal(gathered["state"][index][key], value), (index, key)
        bank = [i for i, e in local["state"].items() if e["exp_avg"].dim() == 3]
        assert bank and all(local["state"][i]["exp_avg"].shape[0] == 2 for i in bank)  # this rank's 2 of 4 experts
        first = 2 * rank
        for i in bank:
            assert torch.equal(local["state"][i]["exp_avg"], whole["state"][i]["exp_avg"][first : first + 2])


def test_a_model_without_moe_layers_is_refused_in_one_line(tmp_path, zoo_env):
    args = [*COMMON, *WORLD_2, "--model.init_args.num_experts", "0", "--trainer.max_epochs", "1"]
    done = run_zoo([*args, "--trainer.default_root_dir", "dense"], zoo_env, tmp_path)
    assert done.returncode != 0
    assert "has no zoo.moe.MoE layer: use --trainer.strategy ddp" in done.stderr


def test_experts_over_one_process_budget_train_at_world_2_and_are_refused_at_world_1(tmp_path, zoo_env):
    # 8 experts of 512 -> 512 -> 512: 16.0 MiB of weights whole, 8.0 MiB a process at ep_size 2; the budget is 12
    big = [
        *COMMON,
        *WORLD_2,
        "--model.init_args.hidden",
        "512",
        "--model.init_args.num_experts",
        "8",
        "--trainer.strategy.max_expert_mib",
        "12",
        "--trainer.limit_train_batches",
        "3",
        "--trainer.limit_val_batches",
        "1",
        "--trainer.max_epochs",
        "1",
    ]
    two = run_zoo([*big, "--trainer.default_root_dir", "two"], zoo_env, tmp_path)
    assert two.returncode == 0, two.stderr[-3000:]
    assert _weights(tmp_path / "two")["block.experts.w1"].shape == (8, 512, 512)  # the checkpoint holds all 8
    world_1 = ["--trainer.devices", "1", "--trainer.strategy.ep_size", "1"]
    one = run_zoo([*big, *world_1, "--trainer.default_root_dir", "one"], zoo_env, tmp_path)
    assert one.returncode != 0
    assert "need 16.0 MiB of weights at ep_size 1, over its budget of 12.0 MiB" in one.stderr
    assert "Traceback" not in one.stderr
