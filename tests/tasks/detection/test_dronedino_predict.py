"""``zoo predict`` on a DroneDINO run (skipped without mmdet + mmcv ops: run scripts/install_detection.sh): COCO
detection files of the test images of HIT-UAV (IR) and DroneViewVehicle-RGB that pycocotools opens and scores, the
score threshold filtering them, a few images drawn with their boxes, the Python API's load -> predict round trip
equal to the files, and the same images given as the user's own folders."""

from __future__ import annotations

import json
import os
import shutil

import pytest
import torch

try:  # mmdet.models imports mmcv.ops, which mmcv-lite lacks
    import mmcv.ops  # noqa: F401
    import mmdet.models  # noqa: F401
except ImportError as exc:
    pytest.skip(f"mmdet / mmcv ops not installed ({exc}): scripts/install_detection.sh", allow_module_level=True)

from zoo_testing import need_dataset, tiny_trained_run  # noqa: E402

from zoo.api import load_run, predict  # noqa: E402
from zoo.cli.main import main  # noqa: E402
from zoo_tasks.detection.data import CLASSES  # noqa: E402

pytestmark = pytest.mark.slow(reason="trains a width-256 DINO, then predicts its 16 test images")

IMAGES = 16  # the conformance case: 8 test images per task, tasks ir and rgb
LOW = 0.0  # a 2-step detector scores low: keep every detection where a check needs some
# mmdet 3.3's DINO decoder needs width 256 (its query position embedding: 128 sine features per box coordinate)
WIDTH = ("--model.init_args.embed_dims=256",)


def read(folder, name: str) -> dict:
    return json.loads((folder / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_trained_run("dronedino", "dronedino", tmp_path_factory.mktemp("dronedino"), extra=WIDTH)


@pytest.fixture(scope="module")
def written(run):
    """``zoo predict`` of the run keeping every detection: its folder."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as every test's own predictions run (conftest's _one_thread): the same float sums
    try:
        out = run / "predictions" / "cli"
        assert main(["predict", str(run), "--score_threshold", str(LOW), "--out", str(out)]) == 0
    finally:
        torch.set_num_threads(threads)
    return out


def test_zoo_predict_writes_coco_detections_with_images_and_categories(written):
    coco = read(written, "detections")
    assert len(coco["images"]) == IMAGES and {im["task"] for im in coco["images"]} == {"ir", "rgb"}
    assert all(os.path.isfile(im["file_name"]) and im["width"] > 0 and im["height"] > 0 for im in coco["images"])
    assert [c["name"] for c in coco["categories"]] == list(CLASSES)
    sizes = {im["id"]: (im["width"], im["height"]) for im in coco["images"]}
    assert coco["annotations"], "a detector keeps its top queries: every image has some at threshold 0"
    for ann in coco["annotations"]:
        x, y, w, h = ann["bbox"]
        width, height = sizes[ann["image_id"]]
        assert w >= 0 and h >= 0 and -1 <= x <= x + w <= width + 1 and -1 <= y <= y + h <= height + 1
        assert 1 <= ann["category_id"] <= len(CLASSES) and LOW <= ann["score"] <= 1
    assert len({ann["id"] for ann in coco["annotations"]}) == len(coco["annotations"])
    assert (written / "detections_00.png").stat().st_size > 5000 and (written / "detections_03.png").is_file()


def test_pycocotools_opens_the_files_and_scores_the_detections_against_the_ground_truth(written):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    gt = COCO(str(written / "ground_truth.json"))
    assert len(gt.getImgIds()) == IMAGES and len(gt.getAnnIds()) > 0
    detections = gt.loadRes(read(written, "detections")["annotations"])
    evaluation = COCOeval(gt, detections, "bbox")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    assert -1 <= evaluation.stats[0] <= 1


def test_the_score_threshold_keeps_exactly_the_detections_at_or_above_it(run, written, tmp_path):
    every = read(written, "detections")["annotations"]
    threshold = sorted(ann["score"] for ann in every)[len(every) // 2]  # the median: some kept, some left out
    out = tmp_path / "kept"
    assert main(["predict", str(run), "--score_threshold", str(threshold), "--out", str(out)]) == 0
    kept = read(out, "detections")["annotations"]

    def key(ann):
        return ann["image_id"], ann["category_id"], round(ann["score"], 6)

    assert sorted(map(key, kept)) == sorted(key(ann) for ann in every if ann["score"] >= threshold)
    assert 0 < len(kept) < len(every)


def test_the_api_round_trip_equals_the_files_zoo_predict_wrote(run, written):
    prediction = predict(load_run(run), score_threshold=LOW)
    assert json.loads(json.dumps(prediction.outputs["detections"])) == read(written, "detections")
    assert set(prediction.outputs["metrics"]) == {"ir", "rgb"}


def test_predict_on_the_users_own_folders_equals_the_catalogue_images(run, written, tmp_path):
    folders = {}
    for option, name in (("hit_uav_dir", "HIT-UAV"), ("rgb_dir", "DroneViewVehicle-RGB")):
        folders[option] = tmp_path / name
        shutil.copytree(need_dataset(name), folders[option], copy_function=os.symlink)  # the same files, elsewhere
    out = tmp_path / "mine"
    overrides = [f"--data.init_args.{option}={folder}" for option, folder in folders.items()]
    assert main(["predict", str(run), *overrides, "--score_threshold", str(LOW), "--out", str(out)]) == 0
    mine, catalogue = read(out, "detections"), read(written, "detections")
    assert mine["annotations"] == catalogue["annotations"]
    assert [im["dataset_image_id"] for im in mine["images"]] == [im["dataset_image_id"] for im in catalogue["images"]]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--score_threshold", "1.5"], "--score_threshold 1.5: give a score in [0, 1]"),
        (["--split", "testing"], "--split 'testing': choose from train, val, test"),
    ],
)
def test_bad_options_are_one_line(run, tmp_path, capsys, option, message):
    assert main(["predict", str(run), *option, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.strip().count("\n") == 0
