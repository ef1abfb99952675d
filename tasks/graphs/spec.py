"""Task spec of C2GMoE (graph MoE with contrastive routing and confidence-aware fusion) -- imports nothing heavy."""

from __future__ import annotations

from zoo.leaderboard.tables import Column, Examples, Section, Table
from zoo.leaderboard.targets import AtLeast, BeatsOnAverage
from zoo.registry import BenchmarkRow, ConformanceCase, MatrixRow, TaskSpec
from zoo.tuning.space import Choice, Float

METHODS = ("gcn", "gat", "gmoe", "c2gmoe", "c2gmoe_no_contrast", "c2gmoe_no_confidence")
GRAPH_ONLY_METHODS = ("gin",)  # GIN-0 is a graph-classification baseline (the published TU numbers are its own)
TU_DATASETS = ("MUTAG", "PTC_MR", "PROTEINS", "ENZYMES")

GIN_SOURCE = (
    "Xu et al., How Powerful are Graph Neural Networks? (ICLR 2019), Table 1, GCN row (10-fold CV, "
    "epoch chosen on the averaged test-fold curve)"
)
GIN0_SOURCE = "Xu et al., How Powerful are Graph Neural Networks? (ICLR 2019), Table 1, GIN-0 row (same protocol)"
PUBLISHED = {
    ("gcn", "Cora"): ({"test/acc": 0.815}, "Kipf & Welling, ICLR 2017, Table 2"),
    ("gat", "Cora"): ({"test/acc": 0.830}, "Velickovic et al., ICLR 2018, Table 2"),
    ("gcn", "MUTAG"): ({"test/acc": 0.856}, GIN_SOURCE),
    ("gcn", "PTC_MR"): ({"test/acc": 0.642}, GIN_SOURCE),
    ("gcn", "PROTEINS"): ({"test/acc": 0.760}, GIN_SOURCE),
    ("gin", "MUTAG"): ({"test/acc": 0.894}, GIN0_SOURCE),
    ("gin", "PTC_MR"): ({"test/acc": 0.646}, GIN0_SOURCE),
    ("gin", "PROTEINS"): ({"test/acc": 0.762}, GIN0_SOURCE),
}
# Issue 5's targets. Its Cora bar, 83.0 % mean test accuracy, is GAT's published Cora accuracy (Velickovic et al.,
# ICLR 2018, Table 2): C2GMoE is to match the best published baseline in its own table.
CORA_TARGET_ACC = 0.830
MOE_METHODS = ("gmoe", "c2gmoe", "c2gmoe_no_contrast", "c2gmoe_no_confidence")
TARGETS = (
    AtLeast("c2gmoe", "Cora", "test/acc", CORA_TARGET_ACC),
    BeatsOnAverage("c2gmoe", ("gmoe", "c2gmoe_no_contrast", "c2gmoe_no_confidence"), "test/acc"),
    # issue 26: with equal validation-only tuning budgets, the method's claim against the strongest baseline
    BeatsOnAverage("c2gmoe_tuned", ("gcn_tuned",), "test/acc"),
)

# Budget: issue 5 allows ~3 h for the whole grid on a 2-core CPU, so epoch counts are below the papers' and every
# row is flagged reduced.
NODE_SEEDS = tuple(range(10))
NODE_EPOCHS = {"gcn": 200, "gat": 200}  # MoE methods: NODE_MOE_EPOCHS
NODE_MOE_EPOCHS = 100
GRAPH_FOLDS = {"MUTAG": 10, "PTC_MR": 10, "PROTEINS": 10, "ENZYMES": 10}
GRAPH_EPOCHS = {"MUTAG": 60, "PTC_MR": 60, "PROTEINS": 20, "ENZYMES": 40}
QUICK = ("--trainer.max_epochs", "2")

# Issue 26: GCN, GAT, GMoE and C2GMoE re-tuned on Cora with the same budget, on validation accuracy only (the
# hand-set rows above were partly chosen on test accuracy). Shared knobs for all four, the MoE losses for the MoE
# methods; every tuned row gets TUNE_TRIALS finished trials (`zoo tune`, seed 1000), then the 10 seeds.
TUNE_TRIALS = 12
TUNED = ("gcn", "gat", "gmoe", "c2gmoe")
_COMMON_SPACE = {
    "model.init_args.lr": Float(1e-3, 5e-2, log=True),
    "model.init_args.weight_decay": Float(1e-5, 1e-2, log=True),
    "model.init_args.dropout": Float(0.2, 0.8),
}
SEARCH_SPACES = {
    "gcn_tuned": {**_COMMON_SPACE, "model.init_args.hidden": Choice((16, 32, 64))},
    "gat_tuned": {**_COMMON_SPACE, "model.init_args.hidden": Choice((8, 16))},  # per head, 8 heads
    "gmoe_tuned": {**_COMMON_SPACE, "model.init_args.balance_weight": Float(1e-3, 1.0, log=True)},
    "c2gmoe_tuned": {
        **_COMMON_SPACE,
        "model.init_args.balance_weight": Float(1e-3, 1.0, log=True),
        "model.init_args.contrastive_weight": Float(0.05, 1.0, log=True),
        "model.init_args.temperature": Float(0.05, 1.0, log=True),
    },
}
# The router x task table's row (issue 26): C2GMoE on Cora at half its epochs, GCN as the dense twin.
MATRIX = MatrixRow(
    row="c2gmoe/Cora",
    dense="gcn/Cora",
    trials=6,
    seeds=(0, 1, 2),
    overrides=("--trainer.max_epochs=50",),
)
SEARCH_SPACES["c2gmoe"] = SEARCH_SPACES["c2gmoe_tuned"]
SEARCH_SPACES["gcn"] = SEARCH_SPACES["gcn_tuned"]


def _tuned_row(method: str) -> BenchmarkRow:
    base = _row(method, "Cora")
    return BenchmarkRow(
        method=f"{method}_tuned",
        dataset="Cora",
        config=base.config,
        overrides=base.overrides,
        seeds=NODE_SEEDS,
        quick_overrides=QUICK,
        reduced=True,
        tune_trials=TUNE_TRIALS,
        note=f"{base.note}; tuned: {TUNE_TRIALS} trials on validation accuracy (zoo tune), then 10 seeds",
    )


def _row(method: str, dataset: str) -> BenchmarkRow:
    published, source = PUBLISHED.get((method, dataset), ({}, ""))
    if dataset == "Cora":
        epochs = NODE_EPOCHS.get(method, NODE_MOE_EPOCHS)
        return BenchmarkRow(
            method=method,
            dataset=dataset,
            config=f"cora_{method}.yaml",
            overrides=("--trainer.max_epochs", str(epochs)),
            seeds=NODE_SEEDS,
            published=published,
            published_source=source,
            quick_overrides=QUICK,
            reduced=True,
            note=f"{epochs} epochs (GCN/GAT papers: 200+)",
        )
    epochs = GRAPH_EPOCHS[dataset]
    return BenchmarkRow(
        method=method,
        dataset=dataset,
        config=f"tu_{method}.yaml",
        overrides=("--data.init_args.name", dataset, "--trainer.max_epochs", str(epochs)),
        seeds=(0,),
        folds=GRAPH_FOLDS[dataset],
        published=published,
        published_source=source,
        quick_overrides=QUICK,
        reduced=True,
        note=f"{epochs} epochs, model selected on a 10% stratified val split of the training folds"
        + ("" if GRAPH_FOLDS[dataset] == 10 else f"; only folds 0-{GRAPH_FOLDS[dataset] - 1} of the 10"),
    )


C2GMOE = TaskSpec(
    name="c2gmoe",
    description="C2GMoE graph MoE (contrastive routing + confidence fusion) vs GCN/GAT/GIN/GMoE on Cora and TU",
    model="zoo_tasks.graphs.module:NodeClassifier",
    models={"node": "zoo_tasks.graphs.module:NodeClassifier", "graph": "zoo_tasks.graphs.module:GraphClassifier"},
    datamodules={"planetoid": "zoo_tasks.graphs.data:PlanetoidDataModule", "tu": "zoo_tasks.graphs.data:TUDataModule"},
    config_dir="zoo_tasks.configs:c2gmoe",
    default_config="cora_c2gmoe.yaml",
    benchmark=tuple(_row(m, d) for d in ("Cora", *TU_DATASETS) for m in METHODS)
    + tuple(_row(m, d) for d in TU_DATASETS for m in GRAPH_ONLY_METHODS)
    + tuple(_tuned_row(m) for m in TUNED),
    metrics=("test/acc",),
    higher_is_better=("test/acc",),
    datasets=("Planetoid", "TUDataset"),
    catalog="zoo_tasks.graphs.datasets:DATASETS",
    extra_tables="zoo_tasks.graphs.spec:TABLES",
    targets=TARGETS,
    dense_twins=(("c2gmoe", "gcn"), ("c2gmoe_tuned", "gcn_tuned")),
    search_spaces=SEARCH_SPACES,
    matrix=MATRIX,
    # node level (Cora, the whole graph at once: any router) and graph level (MUTAG mini-batches, whose gates must
    # not depend on the other graphs of the batch), for GMoE and C²GMoE, at width 8
    conformance=tuple(
        ConformanceCase(
            name=f"{level}-{model}",
            config=config,
            overrides=(
                *("--model.init_args.hidden=8", "--model.init_args.num_layers=2", "--model.init_args.top_k=2"),
                *(("--model.init_args.heads=2", "--model.init_args.router_hidden=8") if model == "c2gmoe" else ()),
                *(("--data.init_args.batch_size=4",) if level == "graph" else ()),
            ),
            datasets=(dataset,),
            refuses=("expert_choice",) if level == "graph" else (),
        )
        for level, dataset, prefix in (("node", "Planetoid", "cora"), ("graph", "TUDataset", "tu"))
        for model in ("gmoe", "c2gmoe")
        for config in (f"{prefix}_{model}.yaml",)
    ),
)

# The page's own sections (``zoo.leaderboard.tables``): the paper's diagnostics averaged per (dataset, method), C2GMoE
# against GMoE on them (``tables.versus_gmoe``) and the diagnostic plots of Cora seed 0.
DIAGNOSTICS = (
    ("homogeneity", "expert homogeneity ↓"),
    ("load_entropy", "load entropy ↑ (1 = flat)"),
    ("max_over_mean_load", "max/mean load ↓"),
    ("routing_entropy", "routing entropy"),
    ("routing_entropy_correct", "entropy (correct)"),
    ("routing_entropy_incorrect", "entropy (wrong)"),
    ("entropy_correctness_corr", "corr(entropy, correct)"),
)
TABLES = (
    Table(
        "Graph-MoE diagnostics (test set, mean over seeds / folds)",
        note="Homogeneity: mean pairwise cosine similarity of the experts' outputs at the routed layer (C2GMoE: each "
        "expert's class logits; GMoE: the last MoE layer's expert outputs, class logits on Cora, node embeddings on "
        "TU graphs). Load: share of top-k slots per expert. Routing entropy: router entropy / log E per routed item.",
        columns=(Column("runs"), *(Column(label, f"extra.diagnostics.{key}") for key, label in DIAGNOSTICS)),
    ),
    Section("zoo_tasks.graphs.tables:versus_gmoe"),
    Examples("Diagnostic plots (Cora, seed 0)", pattern="*_Cora_seed0_*.png"),
)
