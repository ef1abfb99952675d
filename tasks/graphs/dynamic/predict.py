"""What a trained dynamic-graph link predictor (DyGMoCE, its dense twin, DyGFormer, GraphMixer) or EdgeBank
predicts (``zoo predict``, ``zoo.api.predict``): the probability of a link for (source, destination, time) queries,
by default the test split's positive events and the protocol's own negatives for them, or the queries of a CSV
(``--queries``), on the task's graph or the user's own (``--data.init_args.path``).

A query at time t sees the graph as the test protocol shows it: DyGFormer / GraphMixer read each node's neighbours
in the full graph (train + val + test events) strictly before t, through the datamodule's ``full_finder`` and its
batch layout; EdgeBank remembers the observed edges (the inductive-reduced training edges, val and test) before the
query's batch. Batching follows the protocol (:mod:`zoo_tasks.graphs.dynamic.queries`), so the default queries get
the scores the test loop gives them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from zoo.predict import Prediction
from zoo.trained import TrainedRun
from zoo.utils.figures import pyplot, save_figure
from zoo_tasks.graphs.dynamic.edgebank import UCI_MEMORY, edge_memory
from zoo_tasks.graphs.dynamic.metrics import averaged_metrics, batch_metrics
from zoo_tasks.graphs.dynamic.queries import LinkQueries, check_options, protocol_queries, read_queries
from zoo_tasks.graphs.dynamic.split import Interactions


def _batches(queries: LinkQueries, datamodule) -> list[np.ndarray]:
    """The row indices of each batch: every stream's rows in consecutive batches of ``data.eval_batch_size`` (the
    protocol loaders' batching)."""
    size = datamodule.eval_batch_size
    return [stream[i : i + size] for stream in queries.streams for i in range(0, len(stream), size)]


def model_scores(model, datamodule, queries: LinkQueries) -> np.ndarray:
    """(M,) sigmoid link scores of a trained ``DynamicLinkPredictor``: each batch's pairs are laid out by the
    datamodule from the full graph's neighbours before each query time (as its test loader does), then encoded."""
    scores = np.zeros(len(queries), dtype=np.float64)
    for rows in _batches(queries, datamodule):
        # the datamodule's own pair builder (padded first-hop sequences or recent neighbours, by its layout)
        pair = datamodule._pair(datamodule.full_finder, queries.src[rows], queries.dst[rows], queries.ts[rows])
        src, dst, _ = model.encoder(pair)
        scores[rows] = torch.sigmoid(model.predictor(src, dst)).double().numpy()
    return scores


def observed_edges(split) -> Interactions:
    """EdgeBank's history: the inductive-reduced training edges, then val, then test (chronological)."""
    parts = (split.train, split.val, split.test)
    return Interactions(*(np.concatenate([getattr(p, k) for p in parts]) for k in ("src", "dst", "ts", "edge_ids")))


def edgebank_scores(model, datamodule, queries: LinkQueries, strategy: str) -> np.ndarray:
    """(M,) EdgeBank scores (1.0: the pair is in memory, else 0.0), memory mode ``model.hparams.memory`` (DyGLib's
    choice for ``strategy`` when it is ``dyglib``). The protocol's queries: before each batch, the observed edges
    before the batch's first positive event (as ``EdgeBankPredictor.test_step``); a user's queries: the observed
    edges strictly before each query's own time (as the trained models see the graph)."""
    memory_mode = model.hparams.memory
    mode = UCI_MEMORY[strategy] if memory_mode == "dyglib" else memory_mode
    seen = observed_edges(datamodule.split)
    if queries.history_edges is not None:
        ends = [
            (rows, int(np.searchsorted(seen.edge_ids, queries.history_edges[rows[0]])))
            for rows in _batches(queries, datamodule)
        ]
    else:
        upto = np.searchsorted(seen.ts, queries.ts, side="left")
        ends = [(np.flatnonzero(upto == end), int(end)) for end in np.unique(upto)]  # one memory per distinct history
    window, scores, last, memory = model.hparams.window, np.zeros(len(queries), dtype=np.float64), 0, set()
    for rows, end in sorted(ends, key=lambda pair: pair[1]):  # a positive batch and its negatives' share one
        if end != last:
            last, memory = end, edge_memory(seen.src[:end], seen.dst[:end], seen.ts[:end], mode, window)
        scores[rows] = [p in memory for p in zip(queries.src[rows].tolist(), queries.dst[rows].tolist())]
    return scores


def histogram_picture(scores: np.ndarray, labels: np.ndarray, title: str):
    """``draw(path)``: histograms of the scores (M,) of positive (label 1) and negative (label 0) queries, over the
    scores' own range (a barely trained model's scores crowd around 0.5)."""

    def draw(path: Path) -> None:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5, 3.2))
        low, high = float(scores.min()), float(scores.max())
        bins = np.linspace(low, high, 26) if high - low > 1e-6 else np.linspace(low - 0.01, high + 0.01, 3)
        for label, name, colour in ((1, "positive", "tab:orange"), (0, "negative", "tab:blue")):
            chosen = scores[labels == label]
            ax.hist(chosen, bins=bins, alpha=0.6, color=colour, label=f"{name} ({len(chosen)})")
        ax.set(xlabel="link probability", ylabel="queries")
        ax.set_title(title, fontsize=8)
        ax.legend(fontsize=7)
        save_figure(fig, path, dpi=110)

    return draw


def time_picture(scores: np.ndarray, times: np.ndarray, title: str):
    """``draw(path)``: each query's score (M,) against its time (M,)."""

    def draw(path: Path) -> None:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.scatter(times, scores, s=6, alpha=0.6, color="tab:purple")
        ax.set(xlabel="query time", ylabel="link probability")
        ax.set_title(title, fontsize=8)
        save_figure(fig, path, dpi=110)

    return draw


def _queries(run: TrainedRun, queries: str | None, split: str, negatives: str, limit: int) -> LinkQueries:
    check_options(split, negatives, limit)
    datamodule = run.datamodule
    datamodule.setup("test")
    if queries is not None:
        return read_queries(queries, datamodule.graph.raw_ids)
    return protocol_queries(datamodule, split, negatives, limit)


def _prediction(datamodule, queries: LinkQueries, scores: np.ndarray, name: str) -> Prediction:
    raw = datamodule.graph.raw_ids
    rows = [
        {"source": int(raw[s]), "destination": int(raw[d]), "time": float(t), "probability": float(p)}
        for s, d, t, p in zip(queries.src, queries.dst, queries.ts, scores)
    ]
    summary = [f"{name}: {queries.description}"]
    outputs = {"source": raw[queries.src], "destination": raw[queries.dst], "time": queries.ts, "probability": scores,
               "labels": queries.labels}  # fmt: skip
    labels = queries.labels
    if labels is not None:
        for row, y in zip(rows, labels):
            row["label"] = int(y)
    if labels is not None and len(np.unique(labels)) == 2:
        pooled = batch_metrics(scores[labels == 1], scores[labels == 0])
        summary.append(f"AP {pooled['ap']:.4f}, AUC {pooled['auc']:.4f} over all these queries")
        if queries.history_edges is not None:  # the protocol's positives and negatives, in its batches
            mean = averaged_metrics(scores[0::2], scores[1::2], datamodule.eval_batch_size)
            summary.append(f"AP {mean['ap']:.4f}, AUC {mean['auc']:.4f} averaged over batches (DyGLib's reporting)")
        picture = histogram_picture(scores, labels, f"{name}\n{queries.description}")
    else:
        picture = time_picture(scores, queries.ts, f"{name}\n{queries.description}")
    return Prediction(outputs=outputs, tables={"links": rows}, pictures={"scores.png": picture}, summary=summary)


def predict_links(
    run: TrainedRun, queries: str | None = None, split: str = "test", negatives: str = "random", limit: int = 0
) -> Prediction:
    """Link probabilities of (source, destination, time) queries.

    Args:
        queries: a CSV with columns source,destination,time (node ids as in the graph's file) and optionally label
            (0 / 1); each query sees the graph's events strictly before its time. Default: the protocol's queries.
        split: without queries, the protocol's events to score (test, new_node_test, val or new_node_val), each
            followed by its negative (label 0).
        negatives: the protocol's negative sampling for them: random, historical or inductive (seeded as in the
            test).
        limit: score only the first limit events of the split (0: all); a multiple of data.eval_batch_size keeps
            the protocol's batches, so the scores are the test loop's.
    """
    datamodule = run.datamodule
    chosen = _queries(run, queries, split, negatives, limit)
    model = run.model
    name = model.hparams.method
    return _prediction(datamodule, chosen, model_scores(model, datamodule, chosen), name)


def predict_edgebank(
    run: TrainedRun, queries: str | None = None, split: str = "test", negatives: str = "random", limit: int = 0
) -> Prediction:
    """EdgeBank's scores (1: the pair is remembered, 0: not) of (source, destination, time) queries.

    Args:
        queries: a CSV with columns source,destination,time and optionally label; each query sees the observed
            edges strictly before its time. Default: the protocol's queries.
        split: without queries, the protocol's events to score: test, new_node_test, val or new_node_val.
        negatives: the protocol's negative sampling (random, historical, inductive); with model.memory dyglib it
            also picks DyGLib's memory (random: unlimited, historical: time window, inductive: repeat interval).
        limit: score only the first limit events of the split (0: all).
    """
    datamodule = run.datamodule
    chosen = _queries(run, queries, split, negatives, limit)
    scores = edgebank_scores(run.model, datamodule, chosen, negatives)
    return _prediction(datamodule, chosen, scores, "edgebank")


PREDICTORS = {"DynamicLinkPredictor": predict_links, "EdgeBankPredictor": predict_edgebank}
