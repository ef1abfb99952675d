"""Task spec of DroneDINO (mmdet DINO with heterogeneous routed MoE FFNs, RGB / IR / RGB-IR) -- imports nothing heavy.

The model needs the ``detection`` extra and mmcv with compiled ops: ``scripts/install_detection.sh``.

Budget (issue 23: the whole grid under 8 h on this 2-core machine, resumable). Measured on one core: a step takes
~4.9 s with validation for per-task DINO and 6-10 s for the MoE rows (leaderboard/notes/dronedino.md). Each of the
8 rows trains ``EPOCHS`` epochs (an epoch is every training image of the row's tasks once: 102 batches of 4 for
HIT-UAV, 61 for the RGB set, 163 for IR+RGB and for the 4:1 mix) with mmdet's DINO recipe shrunk to that length:
left-right flips, and the learning rate x 0.1 for the last epoch (mmdet: after epoch 11 of 12). About 14 h of one
core in all, so ~7 h with two processes (``zoo reproduce dronedino --interleave`` twice); one seed per row. Every row
is reduced: from-scratch backbones at 6 epochs, where the paper fine-tunes pretrained ones for 12+.
"""

from __future__ import annotations

from zoo.leaderboard.tables import Examples, Section
from zoo.leaderboard.targets import AtLeast, BeatsOnAverage, WithinOfCell
from zoo.registry import BenchmarkRow, ConformanceCase, TaskSpec

EPOCHS = 6
UNIFIED = "IR+RGB"
IMBALANCED = "IR+RGB 4:1"
QUICK = (
    "--trainer.max_steps",
    "2",
    "--trainer.limit_val_batches",
    "1",
    "--trainer.limit_test_batches",
    "2",
    "--data.init_args.image_size",
    "128",
    "--data.init_args.max_images",
    "8",
)
ANCHORS = {"DINO-4scale R50 COCO 12ep:test/mAP": 0.490, "DINO R50 VisDrone:test/mAP": 0.236}
ANCHOR_SOURCE = (
    "another scale and dataset: DINO-4scale R50 on COCO, 12 epochs (mmdet 3.3 model zoo, 49.0 AP); "
    "DINO R50 on VisDrone2019-DET (23.6 AP, as cited by issue 23)"
)
NOTE = (
    f"{EPOCHS} epochs (lr x 0.1 for the last), 320 px, ResNet-18 from scratch, 2+2 layers; "
    "paper: pretrained backbones, 12+ epochs"
)


def _row(method: str, dataset: str, config: str, extra: tuple[str, ...] = (), note: str = "", **kw) -> BenchmarkRow:
    return BenchmarkRow(
        method=method,
        dataset=dataset,
        config=config,
        overrides=(
            "--trainer.max_epochs",
            str(EPOCHS),
            "--trainer.max_steps",
            "-1",
            "--model.init_args.lr_drop_epochs",
            f"[{EPOCHS - 1}]",
            *extra,
        ),
        seeds=(0,),
        quick_overrides=QUICK,
        reduced=True,
        note=NOTE + note,
        **kw,
    )


MIX = ("--data.init_args.mix", "{ir: 4, rgb: 1}")
BENCHMARK = (
    _row("dino", "HIT-UAV", "dino_ir.yaml"),
    _row("dino", "DroneViewVehicle-RGB", "dino_rgb.yaml"),
    _row("unified_dense", UNIFIED, "unified_dense.yaml", published=ANCHORS, published_source=ANCHOR_SOURCE),
    _row("unified_topk", UNIFIED, "unified_topk.yaml"),
    _row("dronedino", UNIFIED, "dronedino.yaml"),
    _row("dronedino_no_tr", UNIFIED, "dronedino_no_tr.yaml"),
    _row("unified_topk", IMBALANCED, "unified_topk.yaml", MIX, "; IR:RGB batches 4:1 (over-activation study)"),
    _row("dronedino", IMBALANCED, "dronedino.yaml", MIX, "; IR:RGB batches 4:1 (over-activation study)"),
)
TARGETS = (
    AtLeast("dino", "HIT-UAV", "test/ir/AP50", 0.30),
    AtLeast("dino", "DroneViewVehicle-RGB", "test/rgb/AP50", 0.30),
    BeatsOnAverage("dronedino", ("unified_dense", "unified_topk"), "test/mAP", datasets=(UNIFIED,)),
    # the paper's "consistently outperforms": no task more than 1 AP below its own per-task DINO
    WithinOfCell("dronedino", UNIFIED, "dino", "HIT-UAV", "test/ir/AP", margin=0.01),
    WithinOfCell("dronedino", UNIFIED, "dino", "DroneViewVehicle-RGB", "test/rgb/AP", margin=0.01),
)
METRICS = (
    "test/mAP",
    "test/ir/AP",
    "test/ir/AP50",
    "test/ir/AP_small",
    "test/rgb/AP",
    "test/rgb/AP50",
    "test/rgb/AP_small",
)

DRONEDINO = TaskSpec(
    name="dronedino",
    description="DroneDINO: mmdet DINO with shared / task-specific / top-k MoE FFNs, RGB + IR + RGB-IR drone detection",
    model="zoo_tasks.detection.module:DroneDINOModule",
    datamodules={"drone": "zoo_tasks.detection.data:DroneDetectionDataModule"},
    config_dir="zoo_tasks.configs:dronedino",
    default_config="dronedino.yaml",
    benchmark=BENCHMARK,
    metrics=METRICS,
    higher_is_better=METRICS,
    datasets=("HIT-UAV", "DroneViewVehicle-RGB", "LLVIP-pairs"),
    catalog="zoo_tasks.detection.datasets:DATASETS",
    targets=TARGETS,
    dense_twins=(("dronedino", "unified_dense"),),
    extra_tables="zoo_tasks.detection.spec:TABLES",
    benchmarks={"dronedino-step": "zoo_tasks.detection.timing:main"},
    # DroneDINO's detector at width 256 (mmdet 3.3's DINO decoder assumes 256 for its query position embedding; width
    # 32 fails there), one encoder and one decoder layer, 10 queries, FFN 32, top-2 of 4 dynamic experts
    # on 8 images per task of HIT-UAV (IR) and DroneViewVehicle-RGB at 64 px; needs mmdet (the detection extra).
    # Its FFN experts route tokens of one image set by task: every router applies
    conformance=(
        ConformanceCase(
            name="dronedino",
            config="dronedino.yaml",
            overrides=(
                *("--model.init_args.embed_dims=256", "--model.init_args.ffn_dim=32", "--model.init_args.num_heads=2"),
                *("--model.init_args.encoder_layers=1", "--model.init_args.decoder_layers=1"),
                *("--model.init_args.num_queries=10", "--model.init_args.num_dn_queries=4"),
                "--model.init_args.checkpoint_every_s=null",
                *("--data.init_args.image_size=64", "--data.init_args.max_images=8", "--data.init_args.batch_size=2"),
            ),
            datasets=("HIT-UAV", "DroneViewVehicle-RGB"),
            packages=("mmdet.models", "mmcv.ops"),
        ),
    ),
)

# The page's own sections (``zoo.leaderboard.tables``): the dynamic-expert load per task, the step time (from
# ``zoo bench dronedino-step`` records), then the detection figures.
TABLES = (
    Section("zoo_tasks.detection.tables:expert_load"),
    Section("zoo_tasks.detection.tables:step_time"),
    Examples("Detections on the first test image of each task (ground truth green, predictions red with scores)"),
)
