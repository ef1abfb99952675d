"""``zoo predict`` on MoE-GS runs (D-NeRF standup at 1/16 resolution, tiny models): every test view rendered as a PNG
with its PSNR / SSIM as the test step scores it, a novel-time sequence of one camera (video + strip), the Python
API's load -> predict round trip equal to the files, the same scene given as the user's own folder, and the
stage-1 expert and distilled student predicting the same way."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from PIL import Image
from zoo_testing import csv_rows, need_dataset, tiny_trained_run

from zoo.api import load_run, predict
from zoo.cli.lightning_cli import ZooCLI
from zoo.cli.main import main
from zoo.conformance_run import TRAINER
from zoo.registry import get_task
from zoo_tasks.splatting.objective import image_metrics, unbatch
from zoo_tasks.splatting.predict import to_uint8, video_format

TEST_VIEWS = 20  # standup's test split; view 0 is at time 0, view 19 at time 1
VIDEO = f"sequence.{video_format()}"

pytestmark = pytest.mark.slow(
    reason="trains tiny MoE-GS runs (expert, router, student) on the real scene, then predicts"
)


def read_metrics(folder) -> list[dict]:
    return csv_rows(folder / "metrics.csv")


def fit_tiny(config: str, root, *overrides: str):
    """A 2-step ``zoo fit`` of a MoE-GS config on the 1/16-resolution scene, in ``root/run`` (skips without D-NeRF)."""
    need_dataset("D-NeRF")
    args = [a for a in TRAINER if a not in ("--trainer.logger=false", "--trainer.enable_checkpointing=false")]
    config_path = get_task("moe_gs").config_path(config)
    ZooCLI(
        args=["fit", "--config", str(config_path), "--data.init_args.downscale=16", *overrides, *args,
              "--trainer.max_epochs=1", "--trainer.limit_train_batches=2", f"--trainer.default_root_dir={root / 'run'}"]
    )  # fmt: skip
    return root / "run"


@pytest.fixture(scope="module")
def moe_run(tmp_path_factory):
    return tiny_trained_run("moe_gs", "moe-gs", tmp_path_factory.mktemp("moe"))


@pytest.fixture(scope="module")
def expert_run(tmp_path_factory):
    """The MLP expert, deforming from its first step (no warm-up), 20 Gaussians; export_name null: no shared export."""
    tiny = ("--model.init_args.num_gaussians=20", "--model.init_args.deform_warmup_steps=0")
    return fit_tiny("standup_mlp.yaml", tmp_path_factory.mktemp("expert"), *tiny, "--model.init_args.export_name=null")


@pytest.fixture(scope="module")
def written(moe_run):
    """``zoo predict`` of the MoE-GS run with a 4-frame sequence of test camera 19: its folder."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as every test's own predictions run (conftest's _one_thread): the same float sums
    try:
        out = moe_run / "predictions" / "cli"
        assert main(["predict", str(moe_run), "--camera", "19", "--frames", "4", "--out", str(out)]) == 0
    finally:
        torch.set_num_threads(threads)
    return out


def test_zoo_predict_writes_every_test_view_with_psnr_ssim_and_a_sequence(written, capsys):
    rows = read_metrics(written)
    assert [int(r["index"]) for r in rows] == list(range(TEST_VIEWS))
    psnr, ssim = (np.array([float(r[m]) for r in rows]) for m in ("psnr", "ssim"))
    assert np.all(np.isfinite(psnr) & (psnr > 0)) and np.all((ssim > -1) & (ssim <= 1))
    for expert in ("mlp", "hexplane", "trajectory"):  # each frozen expert alone, scored beside the blend
        assert all(np.isfinite(float(r[f"psnr_{expert}"])) for r in rows)
    for row in rows:
        with Image.open(written / row["file"]) as png:
            assert png.size == (50, 50) and png.mode == "RGB"  # 800 px / 16
    if VIDEO.endswith(".gif"):  # 4 frames at 12 fps (GIF delays are in 1/100 s; equal frames are merged)
        with Image.open(written / VIDEO) as gif:
            delays = [gif.seek(i) or gif.info["duration"] for i in range(gif.n_frames)]
        assert sum(delays) == pytest.approx(4 * 1000 / 12, abs=4 * 10)
    else:
        assert (written / VIDEO).stat().st_size > 1000
    assert (written / "sequence_strip.png").stat().st_size > 5000


def test_each_view_is_scored_as_the_test_step_scores_it(moe_run, written):
    run = load_run(moe_run)  # its test loader reads the test split alone
    view = unbatch(next(iter(run.datamodule.test_dataloader())))
    expected = image_metrics(run.model.blend(view)[0], view["image"])
    row = read_metrics(written)[0]
    assert float(row["psnr"]) == pytest.approx(float(expected["psnr"]), abs=1e-5)
    assert float(row["ssim"]) == pytest.approx(float(expected["ssim"]), abs=1e-5)


def test_the_api_round_trip_equals_the_files_zoo_predict_wrote(moe_run, written):
    prediction = predict(load_run(moe_run), camera=19, frames=4)
    rows = read_metrics(written)
    for key in ("psnr", "ssim", "psnr_mlp"):
        np.testing.assert_allclose([float(r[key]) for r in rows], [r[key] for r in prediction.outputs["metrics"]])
    images = prediction.outputs["images"]
    assert images.shape == (TEST_VIEWS, 50, 50, 3)
    for row, image in zip(rows, images):
        np.testing.assert_array_equal(np.asarray(Image.open(written / row["file"])), to_uint8(image))
    np.testing.assert_allclose(prediction.outputs["sequence_times"], [0, 1 / 3, 2 / 3, 1], atol=1e-6)


def test_predict_on_the_users_own_scene_folder_equals_the_catalogue_scene(moe_run, tmp_path):
    mine = tmp_path / "my_scene"
    shutil.copytree(need_dataset("D-NeRF", files=["standup"]) / "standup", mine)
    out = tmp_path / "mine"
    assert main(["predict", str(moe_run), "--data.init_args.path", str(mine), "--frames", "2", "--out", str(out)]) == 0
    catalogue = predict(load_run(moe_run), frames=2)
    np.testing.assert_allclose(
        [float(r["psnr"]) for r in read_metrics(out)], [r["psnr"] for r in catalogue.outputs["metrics"]]
    )


def test_a_stage_1_expert_predicts_its_camera_at_the_given_times(expert_run):
    """Val camera 19 was shot at time 1: the sequence's frame at t = 1 is that view's render, and the frame at
    t = 0 differs from it (the expert's deformation trained for 2 steps: the scene moves)."""
    out = expert_run / "predictions" / "cli"
    options = ["--split", "val", "--camera", "19", "--frames", "2"]
    assert main(["predict", str(expert_run), *options, "--out", str(out)]) == 0
    assert len(read_metrics(out)) == 20 and (out / "val_019.png").is_file() and (out / VIDEO).is_file()
    prediction = predict(load_run(expert_run), split="val", camera=19, frames=2)
    sequence, images = prediction.outputs["sequence"], prediction.outputs["images"]
    np.testing.assert_array_equal(sequence[1], images[19])
    assert np.abs(sequence[0] - sequence[1]).max() > 0


def test_a_distilled_student_predicts_beside_the_expert_it_started_from(moe_run, tmp_path):
    from zoo_tasks.splatting.exports import save_export

    moe = load_run(moe_run).model  # its router, exported as MoEGS.on_fit_end does, is the student's teacher
    teacher = save_export(tmp_path / "moe_gs.pt", dict(moe.hparams), moe.router.state_dict(), 2)
    student = fit_tiny("standup_distill.yaml", tmp_path / "distill", f"--model.init_args.teacher={teacher}")
    prediction = predict(load_run(student), frames=2)
    assert len(prediction.outputs["metrics"]) == TEST_VIEWS
    assert {"psnr", "ssim", "psnr_before", "ssim_before"} <= set(prediction.outputs["metrics"][0])


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--camera", "20"], "--camera 20: the test split has 20 cameras (0-19)"),
        (["--split", "train_views"], "--split 'train_views': choose from train, val, test"),
        (["--frames", "1"], "--frames 1: the novel-time sequence needs at least 2 frames"),
    ],
)
def test_bad_options_are_one_line(moe_run, tmp_path, capsys, option, message):
    assert main(["predict", str(moe_run), *option, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.strip().count("\n") == 0
    assert not (tmp_path / "out").exists()
