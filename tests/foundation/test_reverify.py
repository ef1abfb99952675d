"""Re-verification by behaviour (``zoo.reverify``): a stale record is re-stamped when, and only when, the probes of
its code and of HEAD's are bit-identical.

Each test works on a throwaway git repository made in ``tmp_path`` from a copy of the current ``zoo/`` plus one tiny
task (``tasks/probe_toy``: an MoE classifier on 240 synthetic points, an LR that drops after epoch 3, a metric in
its own file, a split that depends on the fold). Commit A holds two records (folds 0 and 1) made by real
``fit_and_test`` runs; a second commit changes one thing, and the test checks what the re-verification decides.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from zoo_testing import REPO

from zoo.code_closure import source_hash
from zoo.leaderboard.record import read_record
from zoo.reverify import probe_worker
from zoo.reverify.checkouts import make_shim, package_roots
from zoo.reverify.runner import DIRTY, RESTAMP, STALE, UNVERIFIABLE, execute, plan, read_pairs

# the tests that build the throwaway repository (two real fits) and probe its commits (short real fits)
PROBED = pytest.mark.slow(reason="real fits of a throwaway repository's commits, probed")

MODEL = '''
"""A tiny MoE classifier for the re-verification tests."""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from zoo.moe import MoE
from zoo_tasks.probe_toy.metrics import accuracy

DECAY_EPOCH = 3


def _points(n: int):
    x = torch.randn(n, 8, generator=torch.Generator().manual_seed(0))
    return x, (x[:, 0] + 0.5 * x[:, 1] > 0).long()


def _split(n: int, fold: int):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(fold))
    return order


def _lr_factor(epoch: int) -> float:
    return 0.1 if epoch >= DECAY_EPOCH else 1.0


class ToyData(pl.LightningDataModule):
    def __init__(self, batch_size: int = 16, fold: int = 0):
        super().__init__()
        self.batch_size, self.fold = batch_size, fold

    def setup(self, stage=None):
        x, y = _points(240)
        order = _split(240, self.fold)
        parts = (order[:160], order[160:200], order[200:])
        self.train, self.val, self.test = (TensorDataset(x[i], y[i]) for i in parts)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=self.batch_size)

    def test_dataloader(self):
        return DataLoader(self.test, batch_size=self.batch_size)


class ToyModel(pl.LightningModule):
    checkpoint_monitor, checkpoint_mode = "val/acc", "max"

    def __init__(self, num_experts: int = 4, top_k: int = 2, router: str = "topk", lr: float = 0.05):
        super().__init__()
        self.save_hyperparameters()
        self.moe = MoE(dim=8, hidden=16, num_experts=num_experts, top_k=top_k, router=router)
        self.out = nn.Linear(8, 2)

    def forward(self, x):
        mixed, routing = self.moe(x)
        return self.out(x + mixed), routing

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits, routing = self(x)
        loss = nn.functional.cross_entropy(logits, y) + self.moe.aux_loss(routing)
        self.log("train/loss", loss)
        return {"loss": loss, "routing": {"moe": routing}}

    def _evaluate(self, batch, stage):
        x, y = batch
        logits, routing = self(x)
        self.log(f"{stage}/acc", accuracy(logits, y), on_epoch=True)
        return {"routing": {"moe": routing}}

    def validation_step(self, batch, batch_idx):
        return self._evaluate(batch, "val")

    def test_step(self, batch, batch_idx):
        return self._evaluate(batch, "test")

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "epoch"}}
'''

METRICS = """
def accuracy(logits, y):
    return (logits.argmax(-1) == y).float().mean()
"""

CONFIG = """
seed_everything: 0
model:
  class_path: zoo_tasks.probe_toy.model.ToyModel
data:
  class_path: zoo_tasks.probe_toy.model.ToyData
trainer:
  max_epochs: 6
  accelerator: cpu
  devices: 1
  enable_progress_bar: false
  enable_model_summary: false
  log_every_n_steps: 5
"""

# Two real runs (folds 0 and 1, seed 0, one torch thread), each written as a leaderboard record of the task.
MAKE_RECORDS = """
import sys
from pathlib import Path

import torch

from zoo.cli.fit_test import fit_and_test
from zoo.runner.records import record_of
from zoo.leaderboard.record import write_record_file

torch.set_num_threads(1)
repo = Path(sys.argv[1])
for fold in (0, 1):
    args = ["--config", str(repo / "configs/probe_toy/toy.yaml"), "--seed_everything", "0",
            "--data.init_args.fold", str(fold)]
    result = fit_and_test(args, repo / "runs" / f"fold{fold}")
    record = record_of(result, "probe_toy", "toy", "points", 0, fold, False, "")
    write_record_file(record, repo / "leaderboard/results/probe_toy" / f"{record.key()}.json")
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


@pytest.fixture(scope="module")
def origin(tmp_path_factory) -> Path:
    """A repository whose first commit holds the current ``zoo/`` and the toy task, and whose second adds the two
    records that its code made."""
    repo = tmp_path_factory.mktemp("origin")
    shutil.copytree(REPO / "zoo", repo / "zoo", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", repo / "pyproject.toml")
    _write(repo / "tasks/__init__.py", "")
    _write(repo / "configs/__init__.py", "")
    _write(repo / "tasks/probe_toy/__init__.py", "")
    _write(repo / "tasks/probe_toy/model.py", MODEL)
    _write(repo / "tasks/probe_toy/metrics.py", METRICS)
    _write(repo / "configs/probe_toy/toy.yaml", CONFIG)
    _write(repo / ".gitignore", "runs/\n__pycache__/\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "code")
    shim = make_shim(repo, tmp_path_factory.mktemp("shim") / "shim")
    env = {**os.environ, "PYTHONPATH": str(shim), "PYTHONHASHSEED": "0"}
    env["ZOO_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    done = subprocess.run(
        [sys.executable, "-c", MAKE_RECORDS, str(repo)], env=env, cwd=repo, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    git(repo, "add", "leaderboard")
    git(repo, "commit", "-qm", "records")
    return repo


@pytest.fixture(scope="module")
def probes() -> dict:
    """Probe results shared by the tests (commit -> group -> result): commit A is probed once for all of them."""
    return {}


@pytest.fixture()
def clone(origin, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(origin), str(repo)], check=True)
    return repo


def records(repo: Path) -> list:
    return read_pairs(sorted((repo / "leaderboard/results/probe_toy").glob("*.json")))


def edit(repo: Path, relative: str, old: str, new: str) -> None:
    path = repo / relative
    text = path.read_text()
    assert old in text, f"{relative} does not hold {old!r}"
    path.write_text(text.replace(old, new))


def reverify_after(repo: Path, tmp_path: Path, probes: dict, message: str):
    """Commit the working tree's change, then plan and run the re-verification of the toy task's records."""
    git(repo, "commit", "-qam", message)
    run_plan = plan("probe_toy", records(repo), repo, work=tmp_path / "work")
    assert len(run_plan.decisions) == 1, "both records (folds 0 and 1) form one group"
    execute(run_plan, say=lambda line: None, known=probes)
    return run_plan.decisions[0]


@PROBED
def test_a_pure_refactor_is_re_stamped(clone, tmp_path, probes):
    before = {path.name: record for path, record in records(clone)}
    model = clone / "tasks/probe_toy/model.py"
    text = model.read_text().replace("_lr_factor", "_factor_at_epoch")  # rename a private helper
    data_class = text[text.index("class ToyData") : text.index("class ToyModel")]
    model.write_text(text.replace(data_class, "") + "\n\n" + data_class.rstrip() + "\n")  # and move a class down

    decision = reverify_after(clone, tmp_path, probes, "refactor")

    assert decision.status == RESTAMP, decision.reason
    head = git(clone, "rev-parse", "HEAD")
    for path, record in records(clone):
        old = before[path.name]
        assert record.metrics == old.metrics and record.commit == old.commit and record.wall_time_s == old.wall_time_s
        assert record.source_hash == source_hash(record.config, package_roots(clone)) != old.source_hash
        entry = record.verified[-1]
        assert entry["from_source_hash"] == old.source_hash and entry["to_source_hash"] == record.source_hash
        assert entry["to_commit"] == head and entry["from_commit"] == old.commit
        assert entry["threads"] == 1 and entry["probe_hash"] == decision.probe_hash and entry["machine"]["cpu"]


@PROBED
def test_a_learning_rate_change_after_the_probe_steps_is_caught_by_the_schedule_trace(clone, tmp_path, probes):
    edit(clone, "tasks/probe_toy/model.py", "DECAY_EPOCH = 3", "DECAY_EPOCH = 4")  # epoch 3 of 6: not probed

    decision = reverify_after(clone, tmp_path, probes, "later decay")

    assert decision.status == STALE
    assert decision.reason.startswith("probes differ at schedule.schedulers"), decision.reason
    assert all(not record.verified for _, record in records(clone))


@PROBED
def test_a_metric_change_is_caught_by_the_evaluation_on_a_slice(clone, tmp_path, probes):
    edit(clone, "tasks/probe_toy/metrics.py", ".float().mean()", ".float().sum() / (y.numel() + 1)")

    decision = reverify_after(clone, tmp_path, probes, "metric")

    assert decision.status == STALE
    # the first difference is the metric's value on the probe's validation / test batches
    assert decision.reason.startswith("probes differ at short.") and decision.reason.endswith("/acc"), decision.reason


@PROBED
def test_a_change_in_the_rows_router_is_caught(clone, tmp_path, probes):
    edit(clone, "zoo/moe/routers/topk.py", ".clamp_min(1e-9)", ".clamp_min(1e-9) + 1e-6")

    decision = reverify_after(clone, tmp_path, probes, "router")

    assert decision.status == STALE
    assert decision.reason.startswith("probes differ at short."), decision.reason


@PROBED
def test_a_change_to_another_folds_split_is_caught_by_the_split_hashes(clone, tmp_path, probes):
    # the probe trains fold 0; fold 1's record shares its group, so its split must be checked without training
    edit(clone, "tasks/probe_toy/model.py", "    return order\n", "    return order.flip(0) if fold == 1 else order\n")

    decision = reverify_after(clone, tmp_path, probes, "fold 1 split")

    assert decision.status == STALE
    assert decision.reason == "probes differ at splits[1][2]", decision.reason


def rename_helper(repo: Path, old: str, new: str) -> None:
    edit(repo, "tasks/probe_toy/model.py", old, new)


@PROBED
def test_a_second_refactor_probes_only_head_and_uses_the_base_probe_the_records_remember(clone, tmp_path, probes):
    rename_helper(clone, "_lr_factor", "_factor_at_epoch")
    first = reverify_after(clone, tmp_path / "a", probes, "refactor 1")
    assert first.status == RESTAMP and first.remembered is None, "records never verified remember no probe"
    rename_helper(clone, "_factor_at_epoch", "_lr_factor_at")
    git(clone, "commit", "-qam", "refactor 2")

    (decision,) = (run_plan := plan("probe_toy", records(clone), clone, work=tmp_path / "b")).decisions
    assert decision.remembered == first.probe_hash
    execute(run_plan, say=lambda line: None, known=probes)

    assert decision.status == RESTAMP, decision.reason
    assert [w.commit for w in run_plan.workers] == [git(clone, "rev-parse", "HEAD")], "only HEAD was probed"
    for _, record in records(clone):
        assert record.verified[-1]["base_probe"] == "remembered" and record.verified[-1]["worker"]
        assert record.verified[-1]["probe_hash"] == first.probe_hash


@PROBED
def test_a_change_after_a_remembered_probe_is_still_caught_and_explained_by_probing_the_base(clone, tmp_path, probes):
    rename_helper(clone, "_lr_factor", "_factor_at_epoch")
    assert reverify_after(clone, tmp_path / "a", probes, "refactor").status == RESTAMP
    edit(clone, "tasks/probe_toy/metrics.py", ".float().mean()", ".float().sum() / (y.numel() + 1)")

    decision = reverify_after(clone, tmp_path / "b", probes, "metric")

    assert decision.remembered and decision.base_probed, "HEAD differed from the remembered probe: base re-probed"
    assert decision.status == STALE
    assert decision.reason.startswith("probes differ at short.") and decision.reason.endswith("/acc"), decision.reason


@PROBED
def test_a_probe_remembered_from_another_cpu_kind_or_probe_worker_is_not_used(clone, tmp_path, probes):
    rename_helper(clone, "_lr_factor", "_factor_at_epoch")
    assert reverify_after(clone, tmp_path / "a", probes, "refactor").status == RESTAMP
    rename_helper(clone, "_factor_at_epoch", "_lr_factor_at")
    git(clone, "commit", "-qam", "refactor 2")
    pairs = records(clone)
    assert plan("probe_toy", pairs, clone, work=tmp_path / "b").decisions[0].remembered

    for change in ({"machine": {"cpu_id": "family 6 model 85 stepping 7"}}, {"worker": "0" * 16}, {"threads": 2}):
        for _, record in pairs:
            record.verified[-1] = {**record.verified[-1], **change}
        assert plan("probe_toy", pairs, clone, work=tmp_path / "c").decisions[0].remembered is None, change
        pairs = records(clone)


@PROBED
def test_uncommitted_code_and_records_of_unknown_code_are_not_probed(clone, tmp_path):
    edit(clone, "tasks/probe_toy/metrics.py", "def accuracy", "def accuracy  ")
    git(clone, "commit", "-qam", "metric spacing")  # the records are stale now
    edit(clone, "tasks/probe_toy/metrics.py", "def accuracy", "# uncommitted\ndef accuracy")
    (decision,) = plan("probe_toy", records(clone), clone, work=tmp_path / "w1").decisions
    assert decision.status == DIRTY and "tasks/probe_toy/metrics.py" in decision.reason

    git(clone, "checkout", "-q", "--", "tasks/probe_toy/metrics.py")
    path = sorted((clone / "leaderboard/results/probe_toy").glob("*.json"))[0]
    record = json.loads(path.read_text())
    record["source_hash"] = "0" * 64  # no commit of the repository holds code with this fingerprint
    path.write_text(json.dumps(record))
    decisions = plan("probe_toy", records(clone), clone, work=tmp_path / "w2").decisions
    assert sorted(d.status for d in decisions) == sorted([UNVERIFIABLE, ""])
    assert read_record(path).source_hash == "0" * 64


def test_the_worker_refuses_a_zoo_imported_from_outside_the_tree(tmp_path):
    with pytest.raises(SystemExit, match="not from the tree"):
        probe_worker.check_imports(tmp_path)


def test_the_dry_run_plans_through_the_cli_and_writes_nothing(capsys):
    from zoo.cli.main import main

    folder = REPO / "leaderboard/results/dygmoce"
    before = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")}
    assert main(["reproduce", "dygmoce", "--reverify-only", "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("re-verify dygmoce: ")
    assert {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")} == before


def test_a_tasks_probe_overrides_reach_the_short_fit_after_the_probes_own_and_key_the_group(monkeypatch, tmp_path):
    from zoo.reverify.groups import Group
    from zoo.reverify.runner import Decision, _spec

    config = {"model": {"class_path": "m.M"}, "data": {"class_path": "d.D"}, "seed_everything": 0}
    group = Group("toy", "hash", 1, config)
    plain_key = group.key
    group.overrides = ("--trainer.max_steps=-1",)
    assert group.key != plain_key, "probes made with other overrides must not answer for this group"
    assert _spec(Decision(group, "hash"))["overrides"] == ["--trainer.max_steps=-1"]
    keyed = group.key
    group.inputs = ("--model.init_args.experts=[a.pt]",)
    assert group.key != keyed and _spec(Decision(group, "hash"))["inputs"] == ["--model.init_args.experts=[a.pt]"]

    seen = {}

    def build_cli(config, run_dir, overrides):
        seen["overrides"] = overrides
        raise RuntimeError("stop")

    monkeypatch.setattr(probe_worker, "build_cli", build_cli)
    plain = probe_worker.Plain(tmp_path, tmp_path)
    with pytest.raises(RuntimeError):
        probe_worker.short_run(
            config, tmp_path / "run", plain, probe_worker.ObjectHash(plain), ["--trainer.max_steps=-1"]
        )
    args = seen["overrides"]
    assert args.index("--trainer.max_steps=-1") > args.index("--trainer.max_steps"), "the task's override comes last"


def test_the_split_fingerprint_is_the_data_not_the_datamodules_settings(tmp_path):
    """A datamodule that gained a setting (a string, a flag, an empty dict of user paths) but holds the same split
    indices and data fingerprints the same; one changed index does not."""
    import numpy as np
    import torch

    class Splits:
        def __init__(self, order, **settings):
            self.train, self.test, self.values = order[:6], order[6:], np.arange(10.0)
            self.__dict__.update(settings)

    content = probe_worker.ObjectHash(probe_worker.Plain(tmp_path, tmp_path), content_only=True)
    order = torch.arange(10)
    before = content(Splits(order))
    assert content(Splits(order, id_column="auto", _user_paths={}, plots=True)) == before
    assert content(Splits(order[[1, 0, *range(2, 10)]])) != before
    assert content(Splits(order, count=7)) != before, "a number is content"
