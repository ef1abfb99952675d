"""Task spec of TimeMoDE (multi-domain diffusion time-series generation with domain/timestep-aware MoE) --
imports nothing heavy."""

from __future__ import annotations

from zoo.registry import TaskSpec

TIMEMODE = TaskSpec(
    name="timemode",
    description="TimeMoDE (ICML 2026): DiT with domain-prompt + timestep-aware MoE FFNs, pre-trained on 13 domains, "
    "few-shot generation for unseen stock / web (TimeDP protocol: MDD, KL, MMD)",
    model="zoo_tasks.timeseries.generation.module:TimeMoDE",
    datamodules={"corpus": "zoo_tasks.timeseries.generation.data:MultiDomainDataModule"},
    config_dir="zoo_tasks.configs:timemode",
    default_config="timemode.yaml",
    datasets=("ts-corpus", "ETT-small", "weather"),
    catalog="zoo_tasks.timeseries.generation.datasets:DATASETS",
)
