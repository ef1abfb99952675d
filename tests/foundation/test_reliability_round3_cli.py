"""Issue 56, the ``zoo fit`` side: ``last.ckpt`` holds the last finished epoch after every epoch (also when the
monitored metric does not improve, and beside the periodic mid-epoch saves), so a killed run resumes from the next
epoch; bad settings end in one line that says what to do (a file that is no checkpoint, a learning rate that is not
a positive number, 0 epochs, an abbreviated option, a resume of a run that has its epochs already, a read-only
working or output folder, also as root); a failed start leaves no empty folders; and a run on a user's own dataset
names that dataset in its saved config."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
import yaml
from pytorch_lightning.demos.boring_classes import BoringModel
from zoo_testing import REPO, hang_guard, need_dataset

from zoo.callbacks.atomic_checkpoint import AtomicModelCheckpoint
from zoo.callbacks.periodic_checkpoint import PeriodicCheckpoint
from zoo.cli.checkpoint_check import load_checkpoint
from zoo.cli.dataset_name import path_dataset_name
from zoo.cli.main import main
from zoo.cli.settings_check import check_learning_rates, finished_epochs, is_learning_rate
from zoo.errors import ConfigError

STEPS = 5  # training batches per epoch of the BoringModel fits


# -- last.ckpt after every epoch --------------------------------------------------------------------------------
class ConstantMonitor(BoringModel):
    """A BoringModel whose monitored validation metric never changes: only its first epoch is a "best" one."""

    def validation_step(self, batch, batch_idx):
        self.log("val/score", 1.0)
        return super().validation_step(batch, batch_idx)


class LastEpochAtEpochStart(pl.Callback):
    """Records, when each epoch after the first starts, the epoch that ``last.ckpt`` holds."""

    def __init__(self, folder):
        self.folder, self.seen = folder, []

    def on_train_epoch_start(self, trainer, pl_module):
        if trainer.current_epoch > 0:
            self.seen.append(torch.load(self.folder / "last.ckpt", weights_only=True)["epoch"])


class LastStepAfterBatch(pl.Callback):
    """Records, after each training batch, the step of ``last.ckpt`` beside the trainer's."""

    def __init__(self, folder):
        self.folder, self.seen = folder, []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        saved = torch.load(self.folder / "last.ckpt", weights_only=True)["global_step"]
        self.seen.append((trainer.global_step, saved))


def _fit(folder, max_epochs, *callbacks, ckpt_path=None) -> pl.Trainer:
    checkpoint = AtomicModelCheckpoint(dirpath=folder, save_last=True, monitor="val/score", mode="max")
    trainer = pl.Trainer(
        default_root_dir=folder,
        max_epochs=max_epochs,
        limit_train_batches=STEPS,
        limit_val_batches=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[checkpoint, *callbacks],
    )
    trainer.fit(ConstantMonitor(), ckpt_path=ckpt_path, weights_only=True)
    return trainer


def test_last_ckpt_holds_every_finished_epoch_when_the_monitor_does_not_improve(tmp_path):
    recorder = LastEpochAtEpochStart(tmp_path)
    _fit(tmp_path, 3, recorder)
    assert recorder.seen == [0, 1]  # Lightning alone leaves last.ckpt at epoch 0, the only "best" one
    last = torch.load(tmp_path / "last.ckpt", weights_only=True)
    assert (last["epoch"], last["global_step"]) == (2, 3 * STEPS)
    assert len(list(tmp_path.glob("*.ckpt"))) == 2  # last.ckpt and the one best checkpoint


def test_periodic_saves_and_the_end_of_epoch_last_ckpt_share_one_file_and_resume_the_next_epoch(tmp_path):
    steps = LastStepAfterBatch(tmp_path)
    _fit(tmp_path, 2, PeriodicCheckpoint(every_s=1e-9), steps)
    assert all(saved == step for step, saved in steps.seen), steps.seen  # a mid-epoch save after every batch
    assert sorted(p.name for p in tmp_path.glob("last*")) == ["last.ckpt"]  # no last-v1.ckpt beside it
    last = torch.load(tmp_path / "last.ckpt", weights_only=True)
    assert last["epoch"] == 1 and finished_epochs(last) == 2  # the end-of-epoch save came after the periodic one

    resumed = _fit(tmp_path, 3, ckpt_path=str(tmp_path / "last.ckpt"))
    assert resumed.global_step == 3 * STEPS  # one epoch more, not two


@pytest.fixture()
def toy_cli(plugin_site, tmp_path, monkeypatch):
    """``zoo`` in this process, in ``tmp_path``, with the toy task installed."""
    monkeypatch.syspath_prepend(str(plugin_site))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _trained_epochs(metrics_csv) -> set[int]:
    with open(metrics_csv) as f:
        return {int(row["epoch"]) for row in csv.DictReader(f) if row.get("train/loss")}


@pytest.mark.slow(reason="fits the toy task in a zoo process, kills it, resumes it")
def test_a_run_killed_after_an_epoch_that_did_not_improve_resumes_from_the_next_epoch(toy_cli, zoo_env):
    # lr 1e-12 leaves the weights as they are: val/acc repeats, so no epoch after the first is a new best
    args = ["fit", "--task", "toy", "--trainer.max_epochs", "3", "--trainer.limit_train_batches", "5"]
    args += ["--model.init_args.lr", "1e-12", "--model.init_args.epoch_delay_s", "1.0"]
    args += ["--trainer.default_root_dir", "killed"]
    cmd = [sys.executable, "-m", "zoo.cli.main", *args]
    proc = subprocess.Popen(cmd, env=zoo_env, cwd=toy_cli, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last = toy_cli / "killed" / "checkpoints" / "last.ckpt"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if last.exists() and torch.load(last, weights_only=True)["epoch"] >= 1:
            break
        time.sleep(0.1)
    running = proc.poll() is None
    if running:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert running, "last.ckpt never held an epoch after the first (the one best epoch) while the run went on"
    killed_at = torch.load(last, weights_only=True)["epoch"]
    assert [p.name for p in last.parent.glob("best-*.ckpt")] == ["best-0-5.ckpt"]  # epochs >= 1 did not improve

    logger = '{"class_path": "pytorch_lightning.loggers.CSVLogger", "init_args": {"save_dir": "csv"}}'
    assert main([*args, "--ckpt_path", "last", "--trainer.logger", logger, "--trainer.log_every_n_steps", "1"]) == 0
    (metrics,) = (toy_cli / "csv").rglob("metrics.csv")
    assert _trained_epochs(metrics) == set(range(killed_at + 1, 3))


# -- one line that says what to do ------------------------------------------------------------------------------
def _one_line_error(capsys, args) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err[err.index("zoo: error:") :].strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _not_a_checkpoint(folder):
    rng = np.random.default_rng(0)
    (folder / "noise.ckpt").write_bytes(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
    (folder / "notes.ckpt").write_text("c: my notes\nweights are elsewhere\n")  # `c` is pickle's GLOBAL
    return ["noise.ckpt", "notes.ckpt"]


def test_random_bytes_or_text_as_ckpt_path_are_not_a_checkpoint_not_python_objects(toy_cli, capsys):
    for name in _not_a_checkpoint(toy_cli):
        line = _one_line_error(capsys, ["test", "--task", "toy", "--ckpt_path", name])
        assert f"--ckpt_path {name}: not a checkpoint" in line and "zoo fit" in line, line
        assert "Python objects" not in line


def test_a_truncated_checkpoint_keeps_its_message(tmp_path):
    torch.save({"state_dict": {"w": torch.zeros(1000)}, "epoch": 0}, tmp_path / "full.ckpt")
    data = (tmp_path / "full.ckpt").read_bytes()
    (tmp_path / "cut.ckpt").write_bytes(data[: len(data) // 2])
    with pytest.raises(ConfigError, match="it is not a PyTorch checkpoint \\(damaged, truncated or another format\\)"):
        load_checkpoint(tmp_path / "cut.ckpt")


@pytest.mark.parametrize("lr", ["-1", "0", ".nan", ".inf", "1e999"])
def test_a_learning_rate_that_is_not_a_positive_number_is_one_line_naming_the_option(toy_cli, capsys, lr):
    args = ["fit", "--task", "toy", "--model.init_args.lr", lr, "--trainer.default_root_dir", "run"]
    line = _one_line_error(capsys, args)
    assert "--model.init_args.lr" in line and "a learning rate must be a finite number above 0" in line, line
    assert not (toy_cli / "run").exists()  # refused before anything was made


def test_learning_rates_are_found_by_name_and_schedule_settings_are_not():
    assert all(map(is_learning_rate, ["lr", "learning_rate", "backbone_lr", "finetune_lr", "lr_means"]))
    assert not any(map(is_learning_rate, ["lr_end", "lr_end_fraction", "lr_decay", "lr_drop_epochs", "clr"]))
    check_learning_rates({"lr": {"scales": 5e-3}, "lr_end": 0.0, "head": {"lr": None}}, "model.init_args")
    with pytest.raises(ConfigError, match=r"^--model.init_args.lr.opacity -0.5: "):
        check_learning_rates({"lr": {"scales": 5e-3, "opacity": -0.5}}, "model.init_args")
    with pytest.raises(ConfigError, match=r"^--model.init_args.head.backbone_lr 0: "):
        check_learning_rates({"head": {"backbone_lr": 0}}, "model.init_args")


@pytest.mark.parametrize("key", ["max_epochs", "max_steps"])
def test_a_fit_of_zero_epochs_or_steps_is_refused(toy_cli, capsys, key):
    line = _one_line_error(capsys, ["fit", "--task", "toy", f"--trainer.{key}", "0", "--trainer.default_root_dir", "r"])
    assert f"--trainer.{key} 0: a fit needs at least 1" in line, line
    assert not (toy_cli / "r").exists() and not (toy_cli / "runs").exists()


def test_a_model_that_trains_nothing_may_fit_zero_epochs_and_any_other_may_not():
    """EdgeBank is fitted with max_epochs 0 and only tested (configs/dygmoce/uci_edgebank.yaml): it declares
    ``trains_nothing``, so the zero-epoch refusal leaves it alone; a model with weights is refused."""
    from jsonargparse import Namespace

    from zoo.cli.lightning_cli import ZooCLI

    def settings(class_path):
        model = Namespace(class_path=class_path, init_args=Namespace())
        return Namespace(model=model, optimizer=None, trainer=Namespace(max_epochs=0, max_steps=-1))

    ZooCLI._check_fit_settings(settings("zoo_tasks.graphs.dynamic.module.EdgeBankPredictor"))
    with pytest.raises(ConfigError, match=r"^--trainer.max_epochs 0: a fit needs at least 1"):
        ZooCLI._check_fit_settings(settings("zoo_tasks.graphs.dynamic.module.DynamicLinkPredictor"))


def test_fitting_edgebank_ends_with_the_command_that_tests_it_not_advice_about_checkpointing(tmp_path, capsys):
    need_dataset("CollegeMsg")
    main(["fit", "--config", str(REPO / "configs/dygmoce/uci_edgebank.yaml"), "--trainer.default_root_dir",
          str(tmp_path / "r")])  # fmt: skip
    out = capsys.readouterr().out
    assert "(nothing to train: no checkpoint)" in out and "checkpointing" not in out
    assert "--ckpt_path none" in out.splitlines()[-2]


def test_an_abbreviated_option_is_unknown_and_the_full_name_suggested(toy_cli, capsys):
    assert main(["fit", "--task", "toy", "--trainer.max_epoch", "1", "--trainer.default_root_dir", "r"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "unknown option --trainer.max_epoch" in err, err
    assert "did you mean '--trainer.max_epochs'?" in err
    assert not (toy_cli / "r").exists()


def test_resuming_a_run_that_has_its_epochs_says_how_to_train_more_and_leaves_no_log_folder(toy_cli, capsys):
    run = ["fit", "--task", "toy", "--trainer.default_root_dir", "run", "--trainer.max_epochs"]
    assert main([*run, "1"]) == 0
    capsys.readouterr()
    versions = sorted(p.name for p in (toy_cli / "run" / "lightning_logs").iterdir())
    line = _one_line_error(capsys, [*run, "1", "--ckpt_path", "last"])
    assert "the run already has 1 epochs" in line and "give a --trainer.max_epochs above 1" in line, line
    assert "zoo test --config" in line and "--ckpt_path run/checkpoints/last.ckpt" in line, line
    assert sorted(p.name for p in (toy_cli / "run" / "lightning_logs").iterdir()) == versions


def test_a_start_that_fails_before_training_leaves_no_empty_folders_under_default_root_dir(toy_cli, monkeypatch):
    monkeypatch.setenv("ZOO_TOY_FAIL_SEED", "0")  # the toy's training_step raises at its first step
    with pytest.raises(RuntimeError, match="toy run broken on purpose"):
        main(["fit", "--task", "toy", "--trainer.max_epochs", "1", "--trainer.default_root_dir", "new/run"])
    assert not (toy_cli / "new").exists(), sorted(str(p) for p in (toy_cli / "new").rglob("*"))


# -- read-only folders, also as root ----------------------------------------------------------------------------
# the working directory is entered again after the mount, so that it is the read-only one
RO_BIND = 'mount -o bind,ro "$0" "$0" && cd "$(pwd -P)" && exec "$@"'


def read_only(folder) -> list[str]:
    """A command prefix under which ``folder`` is read-only for the command, even when it runs as root (whom a
    folder's mode does not stop): a read-only bind mount of ``folder`` onto itself in a mount namespace of the
    command's own (``unshare -rm``: a user namespace too, for a user without CAP_SYS_ADMIN). Other users: the
    folder's mode. Skips, saying why, where neither can make the folder read-only."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return []
    if shutil.which("unshare") is None:
        pytest.skip("as root, a read-only folder needs a read-only bind mount, and `unshare` is not installed")
    prefix = ["unshare", "-rm", "sh", "-c", RO_BIND, str(folder)]
    probe = subprocess.run([*prefix, "touch", str(folder / "probe")], capture_output=True, text=True)
    if probe.returncode == 0 or (folder / "probe").exists():
        pytest.skip(f"as root, a read-only bind mount is needed and this machine refuses it: {probe.stderr.strip()}")
    return prefix


def _zoo_in(prefix, args, env, cwd) -> subprocess.CompletedProcess:
    cmd = [*prefix, sys.executable, "-m", "zoo.cli.main", *args]
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=hang_guard(300))


def _error_line(out) -> str:
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-3000:]
    lines = out.stderr[out.stderr.index("zoo: error:") :].strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.slow(reason="a zoo process in a mount namespace")
def test_a_read_only_working_directory_says_to_pass_default_root_dir(zoo_env, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    prefix = read_only(work)
    line = _error_line(_zoo_in(prefix, ["fit", "--task", "toy", "--trainer.max_epochs", "1"], zoo_env, work))
    assert "cannot create run folder runs/zoo_toy/digits" in line and "--trainer.default_root_dir DIR" in line, line
    assert list(work.iterdir()) == []


@pytest.mark.slow(reason="a zoo process in a mount namespace")
def test_a_read_only_output_folder_is_one_line_even_as_root(zoo_env, tmp_path):
    (tmp_path / "ro").mkdir()
    prefix = read_only(tmp_path / "ro")
    args = ["fit", "--task", "toy", "--trainer.default_root_dir", "ro/run"]
    line = _error_line(_zoo_in(prefix, args, zoo_env, tmp_path))
    assert "output folder ro/run is not writable" in line and "--trainer.default_root_dir" in line, line
    assert list((tmp_path / "ro").iterdir()) == []


# -- the saved config names the user's dataset ------------------------------------------------------------------
def test_a_dataset_is_named_from_its_path_by_the_datamodule_s_rule(tmp_path):
    (tmp_path / "mine" / "raw").mkdir(parents=True)
    (tmp_path / "mine" / "raw" / "MYGRAPHS_A.txt").write_text("1, 2\n")
    (tmp_path / "load.csv").write_text("date,a\n")
    assert path_dataset_name(tmp_path / "mine", "*_A.txt", "MUTAG") == "MYGRAPHS"
    assert path_dataset_name(tmp_path / "load.csv", "stem") == "load"
    assert path_dataset_name(tmp_path / "load.csv", "name") == "load.csv"
    assert path_dataset_name(tmp_path / "mine", "name") == "mine"
    assert path_dataset_name(tmp_path / "nowhere", "stem") is None  # the datamodule says what is wrong
    (tmp_path / "mine" / "raw" / "OTHER_A.txt").write_text("1, 2\n")
    assert path_dataset_name(tmp_path / "mine", "*_A.txt", "other") == "OTHER"  # the name chooses among several
    assert path_dataset_name(tmp_path / "mine", "*_A.txt", "MUTAG") is None


def _write_series(path, rows=400):
    hours = np.datetime64("2024-01-01T00:00") + np.arange(rows).astype("timedelta64[h]")
    lines = [f"{str(h).replace('T', ' ')},{np.sin(i / 7):.4f},{np.cos(i / 5):.4f}" for i, h in enumerate(hours)]
    path.write_text("date,load,temp\n" + "\n".join(lines) + "\n")


def _saved_config(root) -> dict:
    (config,) = root.glob("lightning_logs/version_*/config.yaml")
    return yaml.safe_load(config.read_text())


def test_a_forecasting_run_on_a_user_csv_saves_the_csv_s_name_not_ett(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    _write_series(tmp_path / "my_meter.csv")
    shapes = {"seq_len": 16, "pred_len": 8}
    small = [f"--{part}.init_args.{k}={v}" for part in ("model", "data") for k, v in shapes.items()]
    model = {"d_model": 8, "n_heads": 2, "d_ff": 8, "patch_len": 8, "stride": 4}
    small += [f"--model.init_args.{k}={v}" for k, v in model.items()]
    tiny = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=1", "--trainer.limit_val_batches=1"]
    config = str(REPO / "configs" / "seer" / "dense.yaml")
    args = ["fit", "--config", config, "--data.init_args.path", "my_meter.csv", *small, *tiny]
    assert main([*args, "--trainer.default_root_dir", "run", "--trainer.enable_progress_bar=false"]) == 0
    data = _saved_config(tmp_path / "run")["data"]["init_args"]
    assert (data["dataset"], data["file"], data["path"]) == ("my_meter", "my_meter.csv", "my_meter.csv")
    (best,) = (tmp_path / "run" / "checkpoints").glob("best-*.ckpt")
    saved = torch.load(best, weights_only=True)["datamodule_hyper_parameters"]
    assert (saved["dataset"], saved["file"]) == ("my_meter", "my_meter.csv")


def _write_tu(folder, name):
    """A tiny TU-layout dataset: 30 graphs, even ones triangles (label 1), odd ones 3-node paths (label -1)."""
    folder.mkdir(parents=True)
    edges, indicator, labels = [], [], []
    for g in range(30):
        base = 3 * g + 1
        pairs = [(0, 1), (1, 2), (2, 0)] if g % 2 == 0 else [(0, 1), (1, 2)]
        edges += [f"{base + u}, {base + v}\n{base + v}, {base + u}" for u, v in pairs]
        indicator += [str(g + 1)] * 3
        labels.append("1" if g % 2 == 0 else "-1")
    for part, lines in (("A", edges), ("graph_indicator", indicator), ("graph_labels", labels)):
        (folder / f"{name}_{part}.txt").write_text("\n".join(lines) + "\n")


def test_a_tu_run_on_a_user_folder_saves_the_folder_s_dataset_name_not_mutag(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    _write_tu(tmp_path / "graphs", "TRIANGLES_OR_PATHS")
    config = str(REPO / "configs" / "c2gmoe" / "tu_gin.yaml")
    args = ["fit", "--config", config, "--data.init_args.path", "graphs", "--data.init_args.num_folds", "3"]
    args += ["--trainer.max_epochs", "1", "--trainer.default_root_dir", "run"]
    assert main(args) == 0
    assert _saved_config(tmp_path / "run")["data"]["init_args"]["name"] == "TRIANGLES_OR_PATHS"
