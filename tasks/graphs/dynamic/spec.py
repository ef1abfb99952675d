"""Task spec of DyGMoCE (dynamic-graph link prediction with curvature-aware expert mixtures) -- imports nothing heavy."""

from __future__ import annotations

from zoo.registry import BenchmarkRow, TaskSpec

DYGMOCE = TaskSpec(
    name="dygmoce",
    description="DyGMoCE (curvature-expert mixtures in a dynamic graph transformer) vs DyGFormer/twin/EdgeBank on "
    "UCI, DyGLib link-prediction protocol",
    model="zoo_tasks.graphs.dynamic.module:DynamicLinkPredictor",
    models={
        "link": "zoo_tasks.graphs.dynamic.module:DynamicLinkPredictor",
        "edgebank": "zoo_tasks.graphs.dynamic.module:EdgeBankPredictor",
    },
    datamodules={"dyglib": "zoo_tasks.graphs.dynamic.data:DynamicLinkDataModule"},
    config_dir="zoo_tasks.configs:dygmoce",
    default_config="uci_dygmoce.yaml",
    benchmark=(BenchmarkRow(method="edgebank", dataset="UCI", config="uci_edgebank.yaml"),),
    metrics=("test/ap", "test/ind_ap"),
    higher_is_better=("test/ap", "test/ind_ap"),
    datasets=("CollegeMsg",),
    catalog="zoo_tasks.graphs.dynamic.datasets:DATASETS",
)
