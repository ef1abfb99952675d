"""Generic bad input gets one short message, a non-zero exit, no traceback and nothing half-written: a file that
is not a checkpoint, a truncated one, one holding Python objects, an output folder that cannot be written, a full
disk, NaN in the input features (issue 17 item 5)."""

import errno
import pathlib
import types
from collections import namedtuple

import pytest
import torch
from zoo_testing import run_zoo

from zoo.callbacks import atomic_checkpoint
from zoo.callbacks.atomic_checkpoint import atomic_save
from zoo.cli.main import main
from zoo.errors import ZooError

NAN_DATA = '''
from zoo_toy.model import DigitsDataModule


class NaNDigits(DigitsDataModule):
    """The toy digits with one NaN pixel in the first training image."""

    def setup(self, stage=None):
        super().setup(stage)
        self.train.tensors[0][0, 5] = float("nan")
'''


def _not_a_checkpoint(tmp_path):
    (tmp_path / "notes.ckpt").write_text("these are my notes, not weights\n")
    return ["test", "--task", "toy", "--ckpt_path", "notes.ckpt"], "notes.ckpt", "not a PyTorch checkpoint"


def _truncated_checkpoint(tmp_path):
    torch.save({"state_dict": {"w": torch.zeros(1000)}, "epoch": 0}, tmp_path / "full.ckpt")
    data = (tmp_path / "full.ckpt").read_bytes()
    (tmp_path / "cut.ckpt").write_bytes(data[: len(data) // 2])
    return ["test", "--task", "toy", "--ckpt_path", "cut.ckpt"], "cut.ckpt", "damaged, truncated"


def _pickled_objects(tmp_path):
    torch.save({"state_dict": {}, "where": pathlib.PurePosixPath("/x")}, tmp_path / "objects.ckpt")
    return ["test", "--task", "toy", "--ckpt_path", "objects.ckpt"], "objects.ckpt", "never unpickles"


def _output_folder_under_a_file(tmp_path):
    (tmp_path / "afile").write_text("")
    args = ["fit", "--task", "toy", "--trainer.default_root_dir", "afile/run"]
    return args, "afile/run", "not writable"


def _nan_features(tmp_path):
    (tmp_path / "nandata.py").write_text(NAN_DATA)
    args = ["fit", "--task", "toy", "--data.class_path", "nandata.NaNDigits", "--trainer.default_root_dir", "run"]
    return args, "batch[0]: 1 of 4096 values", "non-finite input features"


# A read-only output folder (also as root, through a read-only bind mount): test_reliability_round3_cli.py
CASES = {
    "not a checkpoint": _not_a_checkpoint,
    "truncated checkpoint": _truncated_checkpoint,
    "checkpoint holding Python objects": _pickled_objects,
    "output folder under a file": _output_folder_under_a_file,
    "NaN in input features": _nan_features,
}


@pytest.mark.slow(reason="each case starts a zoo process")
@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_gives_one_short_error(case, zoo_env, tmp_path):
    args, names, says = CASES[case](tmp_path)
    env = dict(zoo_env, PYTHONPATH=f"{tmp_path}:{zoo_env['PYTHONPATH']}")
    out = run_zoo(args, env, tmp_path)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    error = out.stderr[out.stderr.index("zoo: error:") :].strip().splitlines()
    assert len(error) <= 5, error
    assert names in error[0] and says in error[0], error
    assert "weights_only=False" not in out.stderr + out.stdout  # never suggest turning the safety off
    assert not list(tmp_path.rglob("*.partial")), "a half-written file was left behind"
    if case != "NaN in input features":  # that run trained some steps before the bad batch: its logs stay
        assert not list(tmp_path.rglob("version_*")), "a failed start left a log folder behind"


def test_full_disk_is_noticed_before_training(plugin_site, tmp_path, monkeypatch, capfd):
    monkeypatch.syspath_prepend(str(plugin_site))
    monkeypatch.chdir(tmp_path)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(atomic_checkpoint.shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 4096, 4096))
    code = main(["fit", "--task", "toy", "--trainer.default_root_dir", "run"])
    err = capfd.readouterr().err
    assert code == 2 and "Traceback" not in err
    error = err[err.index("zoo: error:") :].strip().splitlines()
    assert len(error) == 1 and "not enough free disk space" in error[0] and str(tmp_path / "run") in error[0]
    assert not list((tmp_path / "run").rglob("*.ckpt"))


def test_a_save_that_runs_out_of_disk_keeps_the_previous_checkpoint(tmp_path):
    path = tmp_path / "last.ckpt"
    path.write_bytes(b"the previous, complete checkpoint")

    def save_checkpoint(filepath, weights_only=False):
        with open(filepath, "wb") as fh:
            fh.write(b"half a checkp")
        raise OSError(errno.ENOSPC, "No space left on device")

    trainer = types.SimpleNamespace(save_checkpoint=save_checkpoint, is_global_zero=True)
    with pytest.raises(ZooError, match=r"could not write checkpoint .*last\.ckpt: No space left on device"):
        atomic_save(trainer, path)
    assert path.read_bytes() == b"the previous, complete checkpoint"
    assert [p.name for p in tmp_path.iterdir()] == ["last.ckpt"]
