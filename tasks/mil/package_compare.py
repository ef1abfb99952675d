"""Speed of our MAMMOTH vs the published ``mammoth-moe`` 0.1.2 module, like for like, in one run.

Both sit in the same MILModule (same aggregator, same initial seed, same fold-0 training bags of the same
dataset) and train with Adam one bag per step (the package's native mode: it has no padding mask). Steps of
the two alternate so that machine load hits both alike; the median summed seconds per epoch is reported. Accuracy and
AUC side by side come from the leaderboard grid (``zoo reproduce mammoth``), which runs both on the same folds.

    python -m zoo_tasks.mil.package_compare [--datasets MUSK1 Elephant] [--aggregators mean abmil] [--epochs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from zoo.registry import repository_root
from zoo.runinfo import machine
from zoo_tasks.mil.mil_data import DigitsBagsDataModule, ElephantDataModule, MUSK1DataModule, collate_bags
from zoo_tasks.mil.module import MILModule
from zoo_tasks.mil.spec import AGGREGATORS
from zoo_tasks.mil.tables import BENCH_FILE

DATAMODULES = {"MUSK1": MUSK1DataModule, "Elephant": ElephantDataModule, "Digits-bags": DigitsBagsDataModule}
IN_DIMS = {"MUSK1": (166, "none"), "Elephant": (230, "none"), "Digits-bags": (64, "digits_cnn")}


def _step(model: MILModule, optimizer: torch.optim.Optimizer, batch: dict) -> float:
    start = time.perf_counter()
    logits = model(batch["x"], batch["mask"]).logits
    loss = F.binary_cross_entropy_with_logits(logits, batch["y"])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return time.perf_counter() - start


def compare(dataset: str, aggregator: str, epochs: int) -> dict:
    """Median seconds per epoch (one bag per step) and parameter counts, ours vs the package."""
    data = DATAMODULES[dataset](fold=0, repeat=0)
    data.setup()
    bags = [collate_bags([item]) for item in data._items(data.train_idx)]
    in_dim, encoder = IN_DIMS[dataset]
    models, optimizers = {}, {}
    for projection in ("mammoth", "mammoth_pkg"):
        torch.manual_seed(0)
        models[projection] = MILModule(in_dim, aggregator=aggregator, projection=projection, encoder=encoder)
        models[projection].train()
        optimizers[projection] = torch.optim.Adam(models[projection].parameters(), lr=5e-4)
    epoch_s: dict[str, list[float]] = {"mammoth": [], "mammoth_pkg": []}
    for epoch in range(epochs + 1):  # epoch 0 is warm-up, not reported
        totals = dict.fromkeys(models, 0.0)
        for i, batch in enumerate(bags):  # alternate per step (and who goes first) so load spikes hit both alike
            order = ("mammoth", "mammoth_pkg") if i % 2 else ("mammoth_pkg", "mammoth")
            for projection in order:
                totals[projection] += _step(models[projection], optimizers[projection], batch)
        if epoch:
            for projection, total in totals.items():
                epoch_s[projection].append(total)
    ours, pkg = models["mammoth"].projection, models["mammoth_pkg"].projection
    return {
        "dataset": dataset,
        "aggregator": AGGREGATORS[aggregator],
        "bags_per_epoch": len(bags),
        "ours_epoch_s": statistics.median(epoch_s["mammoth"]),
        "package_epoch_s": statistics.median(epoch_s["mammoth_pkg"]),
        "ours_params": sum(p.numel() for p in ours.parameters()),
        "package_params": sum(p.numel() for p in pkg.parameters()),
        "ours_rank": ours.rank,
        "package_rank": pkg.rank,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["MUSK1", "Elephant"], choices=list(DATAMODULES))
    parser.add_argument("--aggregators", nargs="+", default=list(AGGREGATORS), choices=list(AGGREGATORS))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=repository_root() / BENCH_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    for dataset in args.datasets:
        for aggregator in args.aggregators:
            row = compare(dataset, aggregator, args.epochs)
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {
        "command": "python -m zoo_tasks.mil.package_compare " + " ".join(argv if argv is not None else sys.argv[1:]),
        "rows": rows,
        "machine": machine(),
        "torch": torch.__version__,
        "note": "one bag per optimizer step, steps of ours and the package interleaved, median of "
        f"{args.epochs} timed epochs after one warm-up epoch",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
