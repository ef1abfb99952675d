"""Tasks train under Lightning's DDP strategy unchanged: 2 CPU processes (gloo), each with half the batch,
end at the 1-process metrics within float tolerance (1e-4 on the loss): the global batches are the same, since
shuffling is off and the datamodule shards the data itself."""

import json

from conftest import run_zoo


def _metrics(run_dir):
    return json.loads(next((run_dir / "lightning_logs").glob("version_*/run_fit.json")).read_text())["metrics"]


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
        "0",
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
