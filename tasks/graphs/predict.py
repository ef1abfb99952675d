"""What a trained C2GMoE / GMoE / GCN / GAT / GIN predicts (``zoo predict``, ``zoo.api.predict``): a class and its
probabilities for every node (node level) or graph (graph level) of a split, on the task's dataset or the user's
own (``--data.init_args.path``), with the confusion matrix where the split has labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from zoo.errors import ConfigError
from zoo.predict import Prediction
from zoo.trained import TrainedRun

SPLITS = ("train", "val", "test")


def _check_split(split: str, allowed: tuple[str, ...]) -> None:
    if split not in allowed:
        raise ConfigError(f"--split {split!r}: choose from {', '.join(allowed)}")


def _confusion_picture(labels: np.ndarray, predicted: np.ndarray, classes: int, title: str):
    """``draw(path)`` of the confusion matrix (rows: true class, columns: predicted), counts in the cells."""

    def draw(path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        counts = np.zeros((classes, classes), dtype=int)
        np.add.at(counts, (labels, predicted), 1)
        fig, ax = plt.subplots(figsize=(1.2 + 0.5 * classes, 1.0 + 0.5 * classes))
        ax.imshow(counts, cmap="Blues")
        for (i, j), n in np.ndenumerate(counts):
            ax.text(j, i, str(n), ha="center", va="center", fontsize=7)
        ax.set(xlabel="predicted class", ylabel="true class", title=title, xticks=range(classes), yticks=range(classes))
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)

    return draw


def _prediction(kind: str, ids: np.ndarray, probs: np.ndarray, labels: np.ndarray | None, split: str) -> Prediction:
    predicted = probs.argmax(1)
    rows = [
        {kind: int(i), "predicted": int(p), **{f"p_{c}": float(q) for c, q in enumerate(row)}}
        for i, p, row in zip(ids, predicted, probs)
    ]
    pictures, summary = {}, [f"{len(ids)} {kind}s of the {split} split, {probs.shape[1]} classes"]
    if labels is not None:
        for row, y in zip(rows, labels):
            row["label"] = int(y)
        accuracy = float((predicted == labels).mean()) if len(labels) else float("nan")
        summary.append(f"accuracy on these labelled {kind}s: {accuracy:.4f}")
        pictures["confusion.png"] = _confusion_picture(
            labels, predicted, probs.shape[1], f"{split} {kind}s: accuracy {accuracy:.3f}"
        )
    outputs = {kind: ids, "probabilities": probs, "predicted": predicted, "labels": labels}
    return Prediction(outputs=outputs, tables={"predictions": rows}, pictures=pictures, summary=summary)


def predict_nodes(run: TrainedRun, split: str = "test") -> Prediction:
    """Class probabilities of the nodes of ``split`` (train / val / test: the dataset's masks; all: every node)."""
    _check_split(split, (*SPLITS, "all"))
    datamodule = run.datamodule
    datamodule.setup("test")
    graph = next(iter(datamodule.test_dataloader()))
    probs = run.model(graph).log_probs.exp().numpy()
    mask = np.ones(len(probs), bool) if split == "all" else getattr(graph, f"{split}_mask").numpy()
    ids = np.flatnonzero(mask)
    labels = graph.y.numpy()[ids] if getattr(graph, "y", None) is not None else None
    return _prediction("node", ids, probs[ids], labels, split)


def predict_graphs(run: TrainedRun, split: str = "test", batch_size: int = 64) -> Prediction:
    """Class probabilities of the graphs of ``split`` (the run's fold: train / val / test; all: every graph, e.g.
    of your own dataset), by dataset index."""
    from torch_geometric.loader import DataLoader

    _check_split(split, (*SPLITS, "all"))
    datamodule = run.datamodule
    datamodule.setup("test")
    folds = dict(zip(SPLITS, datamodule.fold_indices()))
    ids = np.arange(len(datamodule.dataset)) if split == "all" else folds[split]
    probs, labels = [], []
    for batch in DataLoader([datamodule.dataset[i] for i in ids], batch_size=batch_size, shuffle=False):
        probs.append(run.model(batch).log_probs.exp())
        labels.append(batch.y)
    return _prediction("graph", ids, torch.cat(probs).numpy(), torch.cat(labels).numpy(), split)


PREDICTORS = {"NodeClassifier": predict_nodes, "GraphClassifier": predict_graphs}
