"""Shapes from the data: ``ZooCLI`` fills the model init args a datamodule's ``model_shapes()`` names when the config
leaves them None, refuses in one line an explicit value that contradicts the data, and changes nothing for a
datamodule without the method. The filled value is what ``config.yaml`` saves and what a resume checks."""

from __future__ import annotations

import json

import pytest
import pytorch_lightning as pl
import torch
import yaml
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from zoo.cli.lightning_cli import ZooCLI
from zoo.errors import ConfigError


class PlainData(pl.LightningDataModule):
    """Rows of ``width`` features and one regression target."""

    def __init__(self, width: int = 5, rows: int = 16):
        super().__init__()
        self.width, self.rows = width, rows

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(self.rows, self.width, generator=g), torch.randn(self.rows, 1)), 8)


class ShapeData(PlainData):
    def model_shapes(self) -> dict[str, int]:
        return {"in_dim": self.width, "channels_the_model_lacks": 3}

    def data_sha256(self) -> dict[str, str]:
        return {"rows.npy": "0" * 64}


class ShapeModel(pl.LightningModule):
    def __init__(self, in_dim: int | None = None, hidden: int = 4):
        super().__init__()
        self.save_hyperparameters()
        if in_dim is None:
            raise ConfigError("model.init_args.in_dim: not set and not read from the data")
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _cli(tmp_path, data: str, *extra: str, run: str = "fit") -> ZooCLI:
    args = [
        run,
        "--model",
        f"{__name__}.ShapeModel",
        "--data",
        f"{__name__}.{data}",
        "--trainer.max_steps",
        "2",
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.default_root_dir",
        str(tmp_path / "run"),
        *extra,
    ]
    return ZooCLI(args=args)


def _saved_config(tmp_path) -> dict:
    (path,) = (tmp_path / "run").rglob("config.yaml")
    return yaml.safe_load(path.read_text())


def test_shape_filled_from_the_data_and_saved(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = _cli(tmp_path, "ShapeData", "--data.init_args.width", "6")
    assert cli.model.net[0].in_features == 6
    assert cli.model.hparams.in_dim == 6  # the checkpoint's hyper-parameters hold it too
    assert _saved_config(tmp_path)["model"]["init_args"]["in_dim"] == 6
    assert cli.trainer.global_step == 2
    (meta,) = (tmp_path / "run").rglob("run_fit.json")  # the data's provenance is recorded with the run
    assert json.loads(meta.read_text())["data_sha256"] == {"rows.npy": "0" * 64}
    # a resume with the same config (in_dim still unset) is the same run: the filled shape matches the saved one
    last = tmp_path / "run" / "checkpoints" / "last.ckpt"
    resumed = _cli(
        tmp_path, "ShapeData", "--data.init_args.width", "6", "--trainer.max_steps", "3", "--ckpt_path", str(last)
    )
    assert resumed.trainer.global_step == 3


def test_explicit_value_equal_to_the_data_is_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = _cli(tmp_path, "ShapeData", "--data.init_args.width", "6", "--model.init_args.in_dim", "6")
    assert cli.model.net[0].in_features == 6


def test_contradicting_value_is_one_line_naming_key_and_both_values(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as err:
        _cli(tmp_path, "ShapeData", "--data.init_args.width", "6", "--model.init_args.in_dim", "5")
    message = str(err.value)
    assert "\n" not in message
    assert "model.init_args.in_dim" in message and "5" in message and "6" in message and "ShapeData" in message
    assert not list((tmp_path / "run").rglob("*.ckpt"))  # refused before any training


def test_datamodule_without_the_method_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = _cli(tmp_path, "PlainData", "--data.init_args.width", "6", "--model.init_args.in_dim", "6")
    assert cli.model.net[0].in_features == 6
    assert _saved_config(tmp_path)["model"]["init_args"]["in_dim"] == 6
    (meta,) = (tmp_path / "run").rglob("run_fit.json")
    assert "data_sha256" not in json.loads(meta.read_text())
    with pytest.raises(ConfigError, match="in_dim: not set"):  # nothing filled it in
        _cli(tmp_path, "PlainData", "--trainer.default_root_dir", str(tmp_path / "other"))
