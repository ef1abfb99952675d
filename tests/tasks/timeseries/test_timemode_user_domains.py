"""Few-shot generation for a user's new domain through the ``zoo`` CLI: TimeMoDE pre-trains on a user's folder
with a long-format CSV as its unseen domain, then is tested on other unseen domains given as a folder path and
as a ``user_domains`` name, each getting its few-shot metrics."""

from __future__ import annotations

import json

import numpy as np

from zoo_tasks.timeseries.generation.spec import TIMEMODE

TINY = {
    "data.init_args.domains": "[]",
    "data.init_args.seq_len": "8",
    "data.init_args.ks": "[3]",
    "data.init_args.batch_size": "16",
    "model.init_args.d_model": "16",
    "model.init_args.depth": "1",
    "model.init_args.n_heads": "2",
    "model.init_args.ffn_hidden": "32",
    "model.init_args.num_experts": "4",
    "model.init_args.num_latents": "4",
    "model.init_args.latent_dim": "8",
    "model.init_args.prompt_dim": "4",
    "model.init_args.timesteps": "10",
    "model.init_args.sample_steps": "2",
    "model.init_args.indomain_prompts": "4",
    "model.init_args.indomain_samples": "16",
    "model.init_args.fewshot_samples": "16",
    "model.init_args.eval_batch": "16",
    "model.init_args.finetune_steps": "0",
    "model.init_args.plots": "false",
    "model.init_args.warmup_steps": "1",
    "trainer.max_steps": "2",
    "trainer.val_check_interval": "2",
    "trainer.limit_val_batches": "1",
}


def _wide(folder, name, n=300, period=5.0):
    folder.mkdir(exist_ok=True)
    rows = "\n".join(f"{i},{np.sin(i / period):.4f},{np.cos(i / (period + 2)):.4f}" for i in range(n))
    (folder / name).write_text("date,a,b\n" + rows + "\n")
    return folder


def _long(path, n=200):
    """``Sensor,date,Count``: one row per hour and sensor (two text ids)."""
    stamp = np.datetime64("2024-03-01T00:00")
    lines = ["Sensor,date,Count"]
    for t in range(n):
        when = (stamp + np.timedelta64(t, "h")).astype(str).replace("T", " ")
        lines += [f"north,{when},{(7 * t) % 13}", f"south,{when},{(5 * t) % 11 + 20}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _zoo(command, config, overrides, root):
    from zoo.cli.main import main

    args = [command, "--config", str(config)]
    for key, value in overrides.items():
        args += [f"--{key}", value]
    return main([*args, "--trainer.default_root_dir", str(root)])


def test_timemode_pretrains_with_a_long_csv_unseen_and_tests_a_folder_and_a_user_domain_as_unseen(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    pre, shop, held = _wide(tmp_path / "pre", "s.csv"), _wide(tmp_path / "shop", "a.csv", 250, 3.0), tmp_path / "held"
    _wide(held, "h.csv", 200, 9.0)
    counts = _long(tmp_path / "counts.csv")
    run = tmp_path / "run"
    fit = {**TINY, "data.init_args.user_domains": f"{{pre: {pre}}}", "data.init_args.unseen": f"[{counts}]"}
    assert _zoo("fit", TIMEMODE.config_path("timemode.yaml"), fit, run) in (0, None)
    config = next(run.rglob("config.yaml"))
    assert (run / "checkpoints" / "last.ckpt").is_file()
    users = f"{{pre: {pre}, held: {held}}}"
    test = {"data.init_args.user_domains": users, "data.init_args.unseen": f"[{shop}, held]"}
    assert _zoo("test", config, {**test, "ckpt_path": str(run / "checkpoints" / "last.ckpt")}, run) in (0, None)
    metrics = json.loads(next(run.rglob("run_test.json")).read_text())["metrics"]
    for case in ("shop_k3", "held_k3", "pre"):
        assert all(np.isfinite(metrics[f"test/{case}_{m}"]) for m in ("mdd", "kl", "mmd")), sorted(metrics)
    assert "test/held_mdd" not in metrics  # an unseen user domain is not a pre-training domain
