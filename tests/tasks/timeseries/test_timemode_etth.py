"""Diffusion-TS's ETTh protocol in the timemode task: the multivariate windows (stride 1, per-channel min-max to
[-1, 1], the round trip back to [0, 1] and to raw values), the repeated metrics under Lightning's inference mode,
and a ``zoo evaluate`` run of the TimeMoDE row (fit, then test with the real driver) at tiny sizes."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch
from zoo_testing import REPO, need_dataset, run_zoo

from zoo.errors import ConfigError
from zoo_tasks.timeseries.generation.diffusion_ts_evaluation import diffusion_ts_scores
from zoo_tasks.timeseries.generation.multivariate_data import MultivariateWindowsDataModule, to_unit
from zoo_tasks.timeseries.generation.spec import ETTH, TIMEMODE


def _csv(path, rows: int = 60) -> np.ndarray:
    t = np.arange(rows)
    values = np.stack([np.sin(t / 3), 5 + 2 * np.cos(t / 5), t % 7 * 0.5], axis=1)
    path.write_text(
        "date,a,b,c\n" + "".join(f"{i}," + ",".join(f"{v:.6f}" for v in row) + "\n" for i, row in enumerate(values))
    )
    return np.round(values, 6)


def test_windows_are_stride_one_scaled_per_channel_and_round_trip(tmp_path):
    raw = _csv(tmp_path / "s.csv")
    dm = MultivariateWindowsDataModule(path=str(tmp_path / "s.csv"), seq_len=24, batch_size=8)
    assert dm.model_shapes() == {"seq_len": 24, "channels": 3} and dm.name == "s"
    dm.setup()
    assert dm.windows.shape == (60 - 24 + 1, 24, 3) and dm.channels == ["a", "b", "c"]
    unit = dm.unit_windows()
    assert unit.min(axis=(0, 1)).tolist() == [0, 0, 0] and unit.max(axis=(0, 1)).tolist() == [1, 1, 1]
    assert np.allclose(unit, (dm.windows + 1) / 2) and np.allclose(to_unit(dm.windows), unit)
    assert np.allclose(dm.scaler.inverse(unit[5]), raw[5:29], atol=1e-5)  # window 5 = rows 5 .. 28
    x, domain = next(iter(dm.train_dataloader()))
    assert x.shape == (8, 24, 3) and x.dtype == torch.float32 and domain.tolist() == [0] * 8
    assert len(dm.train_dataloader()) == 37 // 8  # every window is trained on; the last partial batch dropped
    assert len(dm.val_dataloader().dataset) == 3  # int(0.1 * 37), a seeded subset of the same windows


def test_a_constant_channel_and_bad_settings_get_one_clear_error(tmp_path):
    (tmp_path / "c.csv").write_text("date,a,b\n" + "".join(f"{i},{i},3\n" for i in range(30)))
    dm = MultivariateWindowsDataModule(path=str(tmp_path / "c.csv"), seq_len=10, batch_size=4)
    dm.setup()
    assert np.all(dm.windows[..., 1] == -1)  # scikit-learn's MinMaxScaler: a zero range counts as 1
    with pytest.raises(ConfigError, match="gives 11 windows of 20 rows, fewer than data.init_args.batch_size = 16"):
        MultivariateWindowsDataModule(path=str(tmp_path / "c.csv"), seq_len=20, batch_size=16).setup()
    with pytest.raises(ConfigError, match="has 30 rows, fewer than data.init_args.seq_len = 40"):
        MultivariateWindowsDataModule(path=str(tmp_path / "c.csv"), seq_len=40, batch_size=4).setup()
    with pytest.raises(ConfigError, match="no CSV file at"):
        MultivariateWindowsDataModule(path=str(tmp_path / "none.csv")).model_shapes()
    with pytest.raises(ConfigError, match="val_portion must be in"):
        MultivariateWindowsDataModule(val_portion=1.0)


def test_etth_is_the_catalog_etth1_with_seven_channels():
    need_dataset("ETT-small", files=["ETTh1.csv"])
    dm = MultivariateWindowsDataModule()
    dm.setup()
    assert dm.windows.shape == (17420 - 24 + 1, 24, 7) and dm.channels[-1] == "OT"
    assert dm.windows.min() == -1 and dm.windows.max() == 1
    assert dm.data_sha256() == {"ETTh1.csv": "f18de3ad269cef59bb07b5438d79bb3042d3be49bdeecf01c1cd6d29695ee066"}


@pytest.mark.slow(reason="trains the predictive-score GRU twice")
def test_scores_repeat_with_their_own_seeds_under_inference_mode_and_use_the_first_fakes():
    rng = np.random.default_rng(0)
    real = rng.uniform(size=(40, 6, 3)).astype(np.float32)
    fake = np.concatenate([real[::-1], rng.uniform(size=(10, 6, 3))]).astype(np.float32)
    few = {"disc": 3, "pred": 3, "cfid": 2}
    with torch.inference_mode():  # as in Lightning's test loop: the metrics train networks all the same
        scores = diffusion_ts_scores(real, fake, repeats=2, seed=7, iterations=few)
    assert sorted(scores) == ["cfid", "disc", "pred"] and all(len(v) == 2 for v in scores.values())
    assert scores["pred"][0] != scores["pred"][1]  # each repeat draws its own seed
    assert diffusion_ts_scores(real, fake[:40], repeats=2, seed=7, iterations=few) == scores  # fake[:len(real)]
    with pytest.raises(ConfigError, match="metric_repeats must be >= 1"):
        diffusion_ts_scores(real, fake, repeats=0)


@pytest.mark.slow(reason="zoo evaluate of a real row")
def test_zoo_evaluate_runs_the_etth_timemode_row_through_fit_and_the_diffusion_ts_test(tmp_path):
    _csv(tmp_path / "s.csv")
    (row,) = [r for r in TIMEMODE.benchmark if r.dataset == ETTH and r.method == "timemode"]
    tiny = {"d_model": 16, "depth": 1, "n_heads": 2, "ffn_hidden": 32, "num_experts": 4, "timesteps": 10}
    args = ["evaluate", "--config", str(TIMEMODE.config_path(row.config)), "--seeds", "0", "--runs", "runs"]
    args += ["--data.init_args.path", "s.csv", "--data.init_args.seq_len", "8", "--data.init_args.batch_size", "8"]
    args += [item for key, value in tiny.items() for item in (f"--model.init_args.{key}", str(value))]
    args += ["--model.init_args.patch_len", "4", "--model.init_args.metric_repeats", "2"]
    args += ["--model.init_args.metric_iterations", "{disc: 2, pred: 2, cfid: 2}", "--model.init_args.eval_batch", "16"]
    args += ["--trainer.max_steps", "2", "--trainer.val_check_interval", "2", "--model.init_args.sample_steps", "2"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env["OMP_NUM_THREADS"] = "1"
    out = run_zoo(args, env, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    (result,) = (tmp_path / "runs" / "evaluate").glob("*/seed0/result.json")
    record = json.loads(result.read_text())
    metrics = record["metrics"]
    assert {"test/disc", "test/pred", "test/cfid", "test/disc_std"} <= set(metrics)
    assert 0 <= metrics["test/disc"] <= 0.5 and metrics["test/pred"] >= 0 and np.isfinite(metrics["test/cfid"])
    assert record["config"]["model"]["init_args"]["channels"] == 3 and record["tested"] == "best"
    assert all(len(v) == 2 for v in record["extra"]["diffusion_ts"].values())
    assert record["extra"]["expert_load"]["groups"] == ["s"]
    assert list(result.parent.rglob("samples.png"))
