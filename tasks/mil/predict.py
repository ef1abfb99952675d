"""What a trained MIL classifier (ABMIL / gated-ABMIL / DSMIL / mean / max, with or without MAMMOTH) predicts
(``zoo predict``, ``zoo.api.predict``): a label and its probability for every bag of a split, on the task's bags or
the user's own (``--data.init_args.path``, any format of :mod:`zoo_tasks.mil.bag_files`), and the weight the
aggregator gives each instance where it has one (attention of ABMIL / gated-ABMIL / DSMIL, plus DSMIL's
instance-classifier logits), with a picture of the instance weights of a few bags.

The bags are the datamodule's after its setup: the run's cross-validation fold (``data.fold`` of ``data.num_folds``,
shuffled by the CV seed) and its feature standardisation, whose statistics come from the training folds of the
bags being read (of the user's file when ``path`` is given). The instance weights are what the model's own forward
pass returns (``MILOutput.scores``); DSMIL's instance logits are read with a forward hook on its instance classifier.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from zoo.errors import ConfigError
from zoo.predict import Prediction
from zoo.trained import TrainedRun
from zoo_tasks.mil.mil_data import collate_bags
from zoo_tasks.mil.predict_pictures import attention_picture, probability_picture

SPLITS = ("train", "val", "test", "all")


def split_indices(datamodule, split: str) -> np.ndarray:
    """Dataset indices of the bags of ``split``: ``train`` / ``test`` (the run's CV fold), ``val`` (the validation
    bags drawn apart from the CV ones, when the datamodule has them) or ``all`` (every bag, in file order)."""
    if split not in SPLITS:
        raise ConfigError(f"--split {split!r}: choose from {', '.join(SPLITS)}")
    if split == "all":
        return np.arange(len(datamodule.bags.labels))
    if split == "val" and not len(datamodule.val_idx):
        raise ConfigError("--split val: this run has no validation bags (data.num_val_bags is 0): choose train or test")
    return np.asarray({"train": datamodule.train_idx, "val": datamodule.val_idx, "test": datamodule.test_idx}[split])


class InstanceLogits:
    """Forward hook on DSMIL's ``instance_classifier``: its per-instance logits (B, N) of the last forward pass."""

    def __init__(self, aggregator: torch.nn.Module):
        self.logits: Tensor | None = None
        layer = getattr(aggregator, "instance_classifier", None)
        self.handle = layer.register_forward_hook(self._keep) if layer is not None else None

    def _keep(self, module, inputs, output: Tensor) -> None:
        self.logits = output.squeeze(-1)

    def remove(self) -> None:
        if self.handle is not None:
            self.handle.remove()


def bag_outputs(model, datamodule, indices: np.ndarray, batch_size: int) -> dict:
    """The model on the bags ``indices``, in batches of ``batch_size`` padded bags.

    Returns ``probabilities`` (n,) p(positive), and per bag (lists of n arrays over its real instances, in file
    order) ``weights`` (the aggregator's instance weights; None for mean / max pooling) and ``instance_logits``
    (DSMIL's instance-classifier logits; None for the other aggregators).
    """
    bags = datamodule.bags
    hook = InstanceLogits(model.aggregator)
    probs, weights, instance_logits = [], [], []
    try:
        for start in range(0, len(indices), batch_size):
            chunk = indices[start : start + batch_size]
            items = [(bags.features[i], int(bags.labels[i]), None) for i in chunk]
            batch = collate_bags(items)
            out = model(batch["x"], batch["mask"])
            probs.append(torch.sigmoid(out.logits))
            for row, mask in enumerate(batch["mask"]):
                if out.scores is not None:
                    weights.append(out.scores[row, mask].numpy())
                if hook.logits is not None:
                    instance_logits.append(hook.logits[row, mask].numpy())
    finally:
        hook.remove()
    return {
        "probabilities": torch.cat(probs).numpy() if probs else np.zeros(0, np.float32),
        "weights": weights if weights else None,
        "instance_logits": instance_logits if instance_logits else None,
    }


def bag_rows(ids: np.ndarray, names: list[str], p_positive: np.ndarray, labels: np.ndarray) -> list[dict]:
    """One row per bag: dataset index, bag id, predicted label, p_0 / p_1 and the true label."""
    return [
        {"bag": int(i), "bag_id": name, "predicted": int(p > 0.5), "p_0": float(1 - p), "p_1": float(p),
         "label": int(y)}
        for i, name, p, y in zip(ids, names, p_positive, labels)
    ]  # fmt: skip


def instance_rows(ids, names, weights, instance_logits, instance_labels) -> list[dict]:
    """One row per instance of every bag: bag index and id, instance index within the bag (file order), its
    weight, DSMIL's instance logit and the instance's label (e.g. its digit) where the data has them."""
    rows = []
    for k, (i, name) in enumerate(zip(ids, names)):
        for j, weight in enumerate(weights[k]):
            row = {"bag": int(i), "bag_id": name, "instance": j, "weight": float(weight)}
            if instance_logits is not None:
                row["instance_logit"] = float(instance_logits[k][j])
            if instance_labels is not None:
                row["instance_label"] = int(instance_labels[k][j])
            rows.append(row)
    return rows


def pictured(labels: np.ndarray, count: int) -> list[int]:
    """Positions of ``count`` bags to picture: positives and negatives alternately (both classes when present)."""
    pos, neg = np.flatnonzero(labels == 1).tolist(), np.flatnonzero(labels == 0).tolist()
    order = [k for pair in zip(pos, neg) for k in pair] + pos[len(neg) :] + neg[len(pos) :]
    return order[:count]


def _metrics(labels: np.ndarray, p_positive: np.ndarray) -> list[str]:
    if not len(labels):
        return []
    accuracy = float(((p_positive > 0.5) == labels).mean())
    line = f"accuracy on these bags: {accuracy:.4f}"
    if len(np.unique(labels)) == 2:
        from sklearn.metrics import roc_auc_score

        line += f", AUC {roc_auc_score(labels, p_positive):.4f}"
    return [line]


def predict_bags(run: TrainedRun, split: str = "test", pictured_bags: int = 4) -> Prediction:
    """p(positive) and the label of every bag of ``split`` (train / test: the run's CV fold; val: its validation
    bags; all: every bag, e.g. of your own file), with the instance weights of attention aggregators.

    Args:
        split: train or test (the run's cross-validation fold), val (its validation bags, where it has them) or
            all (every bag, in file order).
        pictured_bags: how many bags (positives and negatives alternately) the instance-weight picture shows (0:
            none).
    """
    if pictured_bags < 0:
        raise ConfigError(f"--pictured_bags {pictured_bags}: must be >= 0")
    datamodule = run.datamodule
    datamodule.setup("test")
    ids = split_indices(datamodule, split)
    bags = datamodule.bags
    names = [bags.names[i] for i in ids]
    labels = bags.labels[ids].astype(np.int64)
    out = bag_outputs(run.model, datamodule, ids, datamodule.batch_size)
    p = out["probabilities"].astype(np.float64)
    inst_labels = None if bags.instance_labels is None else [bags.instance_labels[i] for i in ids]
    tables = {"predictions": bag_rows(ids, names, p, labels)}
    aggregator = run.model.hparams.aggregator
    summary = [f"{len(ids)} bags of the {split} split (fold {datamodule.fold} of {datamodule.num_folds}), {aggregator}"]
    summary += _metrics(labels, p)
    pictures = {"bags.png": probability_picture(names, p, labels, f"{split} bags ({aggregator})")}
    if out["weights"] is not None:
        tables["instances"] = instance_rows(ids, names, out["weights"], out["instance_logits"], inst_labels)
        chosen = pictured(labels, pictured_bags)
        if chosen:
            images = run.model.hparams.encoder == "digits_cnn"  # instances are flattened 8x8 images
            pictures["instance_weights.png"] = attention_picture(
                [bags.features[ids[k]] for k in chosen],
                [out["weights"][k] for k in chosen],
                [f"{names[k]}: label {labels[k]}, p(pos) {p[k]:.2f}" for k in chosen],
                None if inst_labels is None else [inst_labels[k] for k in chosen],
                images=images,
            )
        summary.append(f"{sum(len(w) for w in out['weights'])} instance weights ({aggregator}) in instances.csv")
    else:
        summary.append(f"{aggregator} pooling gives no instance weights: predictions.csv only")
    outputs = {
        "bag": ids,
        "bag_id": names,
        "probabilities": np.stack([1 - p, p], axis=1),
        "predicted": (p > 0.5).astype(np.int64),  # the test metric's threshold
        "labels": labels,
        "weights": out["weights"],
        "instance_logits": out["instance_logits"],
    }
    return Prediction(outputs=outputs, tables=tables, pictures=pictures, summary=summary)


PREDICTORS = {"MILModule": predict_bags}
