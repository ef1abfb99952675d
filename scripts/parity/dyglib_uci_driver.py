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
3. Prints every result file their script saved (``saved_results/**.json``) as one line
   ``DYGLIB_RESULT <path> <json>``, which ``short_dyglib.py`` parses.

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, required=True, help="the dataset mirror (holds CollegeMsg/)")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("script", help="their script, e.g. train_link_prediction.py")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="their script's arguments")
    args = parser.parse_args()
    work = Path.cwd()
    sizes = write_uci(args.mirror, work / "processed_data" / "uci")
    print(f"DYGLIB_DATA {json.dumps(sizes)}", flush=True)
    sys.path.insert(0, str(work))
    sample_sets_as_tuples()
    offset_seeds(args.seed)
    sys.argv = [args.script, *args.args]
    try:
        runpy.run_path(str(work / args.script), run_name="__main__")
    except SystemExit as exc:  # their scripts end with sys.exit()
        if exc.code not in (None, 0):
            raise
    for result in sorted((work / "saved_results").rglob("*.json")):
        text = json.dumps(json.loads(result.read_text()))
        print(f"DYGLIB_RESULT {result.relative_to(work)} {text}", flush=True)


if __name__ == "__main__":
    main()
