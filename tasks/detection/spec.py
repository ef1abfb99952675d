"""Task spec of DroneDINO (mmdet DINO with heterogeneous routed MoE FFNs, RGB / IR / RGB-IR) -- imports nothing heavy.

The model needs the ``detection`` extra and mmcv with compiled ops: ``scripts/install_detection.sh``.
"""

from __future__ import annotations

from zoo.registry import TaskSpec

DRONEDINO = TaskSpec(
    name="dronedino",
    description="DroneDINO: mmdet DINO with shared / task-specific / top-k MoE FFNs, RGB + IR + RGB-IR drone detection",
    model="zoo_tasks.detection.module:DroneDINOModule",
    datamodules={"drone": "zoo_tasks.detection.data:DroneDetectionDataModule"},
    config_dir="zoo_tasks.configs:dronedino",
    default_config="dronedino.yaml",
    metrics=("test/mAP", "test/ir/AP", "test/ir/AP50", "test/rgb/AP", "test/rgb/AP50"),
    higher_is_better=("test/mAP", "test/ir/AP", "test/ir/AP50", "test/rgb/AP", "test/rgb/AP50"),
    datasets=("HIT-UAV", "DroneViewVehicle-RGB", "LLVIP-pairs"),
    catalog="zoo_tasks.detection.datasets:DATASETS",
)
