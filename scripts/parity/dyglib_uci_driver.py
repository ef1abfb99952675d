"""Run DyGLib (yule-BUAA/DyGLib) on UCI built from the mirror's CollegeMsg, for the short-training comparisons of
``scripts/parity/short_dyglib.py``. Run with their Python, in a scratch copy of their checkout (the runner's
working directory):

    python /abs/scripts/parity/dyglib_uci_driver.py --mirror DIR --seed S -- train_link_prediction.py ARGS...

1. Writes their input files ``processed_data/uci/ml_uci.csv`` / ``ml_uci.npy`` / ``ml_uci_node.npy`` from
   ``DIR/CollegeMsg/CollegeMsg.txt`` (sha256 checked) as our task reads it (``tasks/graphs/dynamic/events.py``):
   interactions in file order, edge ids 1..N, node ids the raw ids renumbered 1..n in sorted order (the identity
   for CollegeMsg's 1..1899), zero node and edge features of width 172; the CSV has the columns (and the saved
   row index) of DyGLib's ``preprocess_data.py``.
2. Runs their script (``runpy``, ``sys.argv`` set) with two shims, neither of which changes their computation:
   ``random.sample`` given a set samples ``tuple(set)``, which Python <= 3.10 did itself (3.11 refuses sets;
   their ``get_link_prediction_data`` passes one), and ``utils.utils.set_random_seed`` adds ``S`` to the seed,
   so their single run (``--num_runs 1``, run 0) is seeded with ``S``, as a run ``S`` of theirs would be.
   With ``--train_stride K`` (> 1) a third one keeps every K-th training batch, our datamodule's ``train_stride``:
   their first ``utils.DataLoader.get_idx_data_loader`` call (``train_link_prediction.py`` builds the training
   loader first) is given the indices of batches 0, K, 2K, ... (of ``batch_size`` consecutive training edges),
   so their epoch iterates exactly our kept batches, in order; validation and test loaders are untouched.
3. Prints what their evaluations returned, at full precision, as one line ``DYGLIB_METRICS <json>``
   (``{"test": {"average_precision": ..., "roc_auc": ...}, "new_node_test": {...}, ...}``: the mean over batches
   of each metric, as their script computes it before rounding it to 4 decimals for its log and result file),
   which ``short_dyglib.py`` parses, and every result file their script saved (``saved_results/**.json``) as a
   line ``DYGLIB_RESULT <path> <json>``. The evaluations are observed by wrapping their
   ``evaluate_models_utils.evaluate_model_link_prediction`` (its returned per-batch metrics, named by the
   evaluation sampler's fixed seed: 0 val, 1 new-node val, 2 test, 3 new-node test; the last call of each
   counts, i.e. the final evaluation of the loaded checkpoint) and, for EdgeBank, the per-batch
   ``get_link_prediction_metrics`` calls inside ``evaluate_edge_bank_link_prediction``; the wrappers pass
   every argument and result through unchanged.

No DyGLib code lives here: their checkout is the working directory and is imported from there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import runpy
import sys
from pathlib import Path

import numpy as np
import pandas as pd

COLLEGEMSG_SHA256 = "e00ba2415373dee52c00616065bcceaa4750e78de60d1855c76470600f10740f"
FEATURE_WIDTH = 172  # DyGLib's NODE_FEAT_DIM = EDGE_FEAT_DIM (utils/DataLoader.py)


def write_uci(mirror: Path, out: Path) -> dict[str, int]:
    """DyGLib's processed UCI files in ``out`` from CollegeMsg.txt (``SRC DST UNIXTS`` lines)."""
    path = mirror / "CollegeMsg" / "CollegeMsg.txt"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != COLLEGEMSG_SHA256:
        sys.exit(f"{path}: sha256 {digest}, expected {COLLEGEMSG_SHA256}")
    raw = np.loadtxt(path, dtype=np.int64, ndmin=2)
    src, dst, ts = raw[:, 0], raw[:, 1], raw[:, 2].astype(np.float64)
    if np.any(np.diff(ts) < 0):
        sys.exit(f"{path}: timestamps are not non-decreasing")
    ids = np.union1d(src, dst)
    u, i = np.searchsorted(ids, src) + 1, np.searchsorted(ids, dst) + 1
    n, count = len(ids), len(src)
    out.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame({"u": u, "i": i, "ts": ts, "label": np.zeros(count), "idx": np.arange(1, count + 1)})
    frame.to_csv(out / "ml_uci.csv")  # with the row index, as preprocess_data.py writes it
    np.save(out / "ml_uci.npy", np.zeros((count + 1, FEATURE_WIDTH)))
    np.save(out / "ml_uci_node.npy", np.zeros((n + 1, FEATURE_WIDTH)))
    return {"nodes": n, "interactions": count}


def sample_sets_as_tuples() -> None:
    """``random.sample(a_set, k)`` as Python <= 3.10 ran it: on ``tuple(a_set)``."""
    original = random.sample

    def sample(population, k, **kwargs):
        if isinstance(population, (set, frozenset)):
            population = tuple(population)
        return original(population, k, **kwargs)

    random.sample = sample


def offset_seeds(offset: int) -> None:
    """Their runs call ``set_random_seed(seed=run)``; seed ``run + offset`` instead."""
    import utils.utils as their_utils  # their checkout, the working directory

    original = their_utils.set_random_seed

    def set_random_seed(seed: int = 0):
        return original(seed=seed + offset)

    their_utils.set_random_seed = set_random_seed


SAMPLER_SEEDS = {0: "val", 1: "new_node_val", 2: "test", 3: "new_node_test"}


def stride_training_batches(stride: int) -> None:
    """Their first index loader (the training one) keeps the indices of every ``stride``-th batch."""
    import utils.DataLoader as their_data  # their checkout, the working directory

    original, calls = their_data.get_idx_data_loader, []

    def get_idx_data_loader(indices_list: list, batch_size: int, shuffle: bool):
        calls.append(len(indices_list))
        if len(calls) == 1:
            indices_list = [i for n, i in enumerate(indices_list) if (n // batch_size) % stride == 0]
        return original(indices_list=indices_list, batch_size=batch_size, shuffle=shuffle)

    their_data.get_idx_data_loader = get_idx_data_loader


def observe_evaluations() -> dict[str, list[dict]]:
    """Per evaluation (by its sampler's seed), the per-batch metric dicts of its last call; filled while their
    script runs."""
    import evaluate_models_utils as their_eval  # their checkout, the working directory

    seen: dict[str, list[dict]] = {}
    evaluate, edge_bank, batch_metrics = (
        their_eval.evaluate_model_link_prediction,
        their_eval.evaluate_edge_bank_link_prediction,
        their_eval.get_link_prediction_metrics,
    )
    collecting: list[list[dict]] = []

    def evaluate_model_link_prediction(*args, **kwargs):
        losses, metrics = evaluate(*args, **kwargs)
        seen[SAMPLER_SEEDS[kwargs["evaluate_neg_edge_sampler"].seed]] = list(metrics)
        return losses, metrics

    def evaluate_edge_bank_link_prediction(*args, **kwargs):
        collecting.append([])
        try:
            return edge_bank(*args, **kwargs)
        finally:
            seen[SAMPLER_SEEDS[kwargs["test_neg_edge_sampler"].seed]] = collecting.pop()

    def get_link_prediction_metrics(*args, **kwargs):
        metrics = batch_metrics(*args, **kwargs)
        if collecting:
            collecting[-1].append(metrics)
        return metrics

    their_eval.evaluate_model_link_prediction = evaluate_model_link_prediction
    their_eval.evaluate_edge_bank_link_prediction = evaluate_edge_bank_link_prediction
    their_eval.get_link_prediction_metrics = get_link_prediction_metrics
    return seen


def averaged(seen: dict[str, list[dict]]) -> dict[str, dict[str, float]]:
    """Their reported numbers: each metric's mean over the batches (``np.mean``, as their script takes it)."""
    return {
        part: {name: float(np.mean([m[name] for m in rows])) for name in rows[0]} for part, rows in seen.items() if rows
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, required=True, help="the dataset mirror (holds CollegeMsg/)")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--train_stride", type=int, default=1, help="train on every k-th batch (ours' train_stride)")
    parser.add_argument("script", help="their script, e.g. train_link_prediction.py")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="their script's arguments")
    args = parser.parse_args()
    work = Path.cwd()
    sizes = write_uci(args.mirror, work / "processed_data" / "uci")
    print(f"DYGLIB_DATA {json.dumps(sizes)}", flush=True)
    sys.path.insert(0, str(work))
    sample_sets_as_tuples()
    offset_seeds(args.seed)
    if args.train_stride > 1:
        stride_training_batches(args.train_stride)
    seen = observe_evaluations()
    sys.argv = [args.script, *args.args]
    try:
        runpy.run_path(str(work / args.script), run_name="__main__")
    except SystemExit as exc:  # their scripts end with sys.exit()
        if exc.code not in (None, 0):
            raise
    print(f"DYGLIB_METRICS {json.dumps(averaged(seen))}", flush=True)
    for result in sorted((work / "saved_results").rglob("*.json")):
        text = json.dumps(json.loads(result.read_text()))
        print(f"DYGLIB_RESULT {result.relative_to(work)} {text}", flush=True)


if __name__ == "__main__":
    main()
