"""MoE-GS exports record their scene (issue 56, item 8): stage 1 writes the scene's name and content hash into its
export, and stage 2 / the distillation refuse, in one line, experts or a teacher trained on another scene (the export
names do not say it: the shipped configs write ``standup_*`` whatever scene they are given). Exports written before
exports recorded their scene are checked by their name only (``standup_*`` on standup) or, named otherwise, accepted."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from PIL import Image
from test_moe_gs_data import _write_scene

from zoo.errors import ConfigError
from zoo_tasks.splatting.data import DNeRFDataModule
from zoo_tasks.splatting.experts import DynamicGaussians
from zoo_tasks.splatting.exports import save_export
from zoo_tasks.splatting.moe import MoEGS

CONFIGS = "configs/moe_gs"
TINY = ["--trainer.max_steps", "1", "--model.init_args.backend", "tiles", "--data.init_args.downscale", "1"]


def _export(path, kind="mlp", **extra):
    """A stage-1 export of a small random expert (``extra``: e.g. ``scene``), as ExpertGS writes one."""
    model = DynamicGaussians(kind, 10, extent=0.6)
    hp = {"expert": kind, "num_gaussians": 10, "sh_degree": 1, "expert_kwargs": None}
    return str(save_export(path, hp, model.state_dict(), 0, **extra))


def _run(args, capsys) -> tuple[int, str]:
    from zoo.cli.main import main

    code = main(args)
    return code, capsys.readouterr().err.strip()


def test_scene_identity_is_the_scene_content_wherever_its_folder_is(tmp_path):
    scene = _write_scene(tmp_path / "jumping")
    copy = tmp_path / "elsewhere" / "jumping_copy"
    shutil.copytree(scene, copy)
    (copy / "notes.txt").write_text("not part of the scene")
    original = DNeRFDataModule(path=str(scene)).scene_identity()
    copied = DNeRFDataModule(path=str(copy)).scene_identity()
    assert original["name"] == "jumping" and copied["name"] == "jumping_copy"
    assert original["sha256"] == copied["sha256"]
    rgba = np.zeros((8, 8, 4), np.uint8)
    rgba[..., 1:] = 255  # one image of the copy changed: another scene
    Image.fromarray(rgba, "RGBA").save(copy / "val" / "r_001.png")
    assert DNeRFDataModule(path=str(copy)).scene_identity()["sha256"] != original["sha256"]


def test_an_export_of_scene_a_is_refused_by_stage_2_and_kept_by_stage_1_on_scene_b(tmp_path, monkeypatch, capsys):
    """Through ``zoo fit`` with the shipped configs: stage 1 on A records A; on B, stage 2 refuses the standup_mlp
    export (A's) in one line, and stage 1 refuses to replace it."""
    from zoo.registry import get_task

    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PL_GLOBAL_SEED", "0")
    monkeypatch.chdir(tmp_path)
    scene_a, scene_b = _write_scene(tmp_path / "A"), _write_scene(tmp_path / "B", frames=3)
    config = get_task("moe_gs").config_path
    stage1 = ["fit", "--config", str(config("standup_mlp.yaml")), "--model.init_args.num_gaussians", "10", *TINY]
    code, err = _run([*stage1, "--data.init_args.path", str(scene_a)], capsys)
    assert code == 0, err[-2000:]
    export = tmp_path / "cache" / "moe_gs" / "experts" / "standup_mlp__seed0.pt"  # the name the shipped config gives
    identity_a = DNeRFDataModule(path=str(scene_a)).scene_identity()
    assert torch.load(export, weights_only=False)["scene"] == identity_a

    experts = "[standup_mlp, standup_mlp]"
    stage2 = ["fit", "--config", str(config("standup_moe_gs.yaml")), "--model.init_args.experts", experts, *TINY]
    code, err = _run([*stage2, "--data.init_args.path", str(scene_b)], capsys)
    sha_b = DNeRFDataModule(path=str(scene_b)).scene_identity()["sha256"]
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"expert export {export} was trained on scene 'A' (content sha256 {identity_a['sha256'][:12]})" in err
    assert f"not on this run's scene 'B' (content sha256 {sha_b[:12]})" in err
    assert "train the experts on this scene first" in err and "give the path of the matching .pt export" in err

    code, err = _run([*stage1, "--data.init_args.path", str(scene_b)], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{export} holds the export of scene 'A'" in err and "--model.init_args.export_name B_mlp" in err
    assert torch.load(export, weights_only=False)["scene"] == identity_a  # still A's


def test_a_distillation_teacher_of_another_scene_is_refused(tmp_path, monkeypatch, capsys):
    from zoo.registry import get_task

    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    scene_a, scene_b = _write_scene(tmp_path / "A"), _write_scene(tmp_path / "B", frames=3)
    identity_a = DNeRFDataModule(path=str(scene_a)).scene_identity()
    experts = [_export(tmp_path / f"{kind}.pt", kind, scene=identity_a) for kind in ("mlp", "trajectory")]
    moe = MoEGS(experts=experts, backend="tiles")
    teacher = save_export(tmp_path / "moe.pt", dict(moe.hparams), moe.router.state_dict(), 0, scene=identity_a)
    config = get_task("moe_gs").config_path("standup_distill.yaml")
    args = ["fit", "--config", str(config), "--model.init_args.teacher", str(teacher), *TINY]
    code, err = _run([*args, "--data.init_args.path", str(scene_b)], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"zoo: error: MoE-GS teacher export {teacher} was trained on scene 'A'"), err
    assert "not on this run's scene 'B'" in err


def test_an_old_export_without_a_scene_is_checked_by_its_name_only(tmp_path):
    """Exports written before this change hold no scene: a ``standup_*`` one (the shipped names, which the
    leaderboard's MoE-GS rows load) is taken for a standup export, any other name is accepted as it is."""
    old = [_export(tmp_path / f"standup_{kind}__seed0.pt", kind) for kind in ("mlp", "hexplane")]
    moe = MoEGS(experts=old, backend="tiles")
    moe.check_scene({"name": "standup", "sha256": "0" * 64})  # the catalogued scene, or a copy in a folder 'standup'
    with pytest.raises(ConfigError, match=r"trained on scene 'standup' \(by its name: it was written before"):
        moe.check_scene({"name": "jumpingjacks", "sha256": "1" * 64})
    unnamed = [_export(tmp_path / f"{kind}.pt", kind) for kind in ("mlp", "hexplane")]
    MoEGS(experts=unnamed, backend="tiles").check_scene({"name": "jumpingjacks", "sha256": "1" * 64})
