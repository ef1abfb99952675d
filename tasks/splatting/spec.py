"""Task spec of MoE-GS (dynamic Gaussian splatting, heterogeneous deformation experts) -- imports nothing heavy."""

from __future__ import annotations

from zoo.registry import TaskSpec

MOE_GS = TaskSpec(
    name="moe_gs",
    description="MoE-GS: dynamic Gaussian deformation experts (MLP, HexPlane, trajectories) + volume-aware router",
    model="zoo_tasks.splatting.module:SplatModule",
    datamodules={"dnerf": "zoo_tasks.splatting.data:DNeRFDataModule"},
    config_dir="zoo_tasks.configs:moe_gs",
    default_config="standup_moe_gs.yaml",
    metrics=("test/psnr", "test/ssim"),
    higher_is_better=("test/psnr", "test/ssim"),
    datasets=("D-NeRF",),
    catalog="zoo_tasks.splatting.datasets:DATASETS",
)
