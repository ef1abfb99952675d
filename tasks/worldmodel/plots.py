"""Figures of the WestWorld task, saved through `zoo.utils.figures`: rollouts and the system-gate heatmap."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zoo.utils.figures import pyplot, save_figure


def rollout_figure(true, pred, valid, prefix: int, title: str, path: Path, dims: int = 4) -> str:
    """Predicted vs true trajectories of the first ``dims`` varying observation dims of one window.

    true (T, Do) normalised states of the window, pred (T - prefix, Do) predictions after the prefix.
    """
    plt = pyplot()
    true, pred = np.asarray(true), np.asarray(pred)
    picked = [d for d in range(true.shape[1]) if bool(valid[d])][:dims]
    fig, axes = plt.subplots(len(picked), 1, figsize=(7, 1.6 * len(picked) + 0.6), sharex=True, squeeze=False)
    t = np.arange(true.shape[0])
    for ax, d in zip(axes[:, 0], picked):
        ax.plot(t, true[:, d], color="k", lw=1.2, label="true")
        ax.plot(t[prefix:], pred[:, d], color="tab:red", lw=1.2, label="predicted")
        ax.axvline(prefix - 0.5, color="0.6", ls="--", lw=0.8)
        ax.set_ylabel(f"dim {d}")
    axes[0, 0].set_title(f"{title}: rollout after a {prefix}-step prefix (normalised)")
    axes[0, 0].legend(loc="upper right", fontsize=7)
    axes[-1, 0].set_xlabel("step")
    return save_figure(fig, path)


def gate_heatmap(gates: dict[str, dict[str, list[float]]], path: Path) -> str:
    """Rows: robots; columns: (block, expert); colour: mean system-gate weight."""
    plt = pyplot()
    robots = sorted(gates)
    blocks = sorted({b for g in gates.values() for b in g})
    rows = [np.concatenate([np.asarray(gates[r].get(b, [np.nan])) for b in blocks]) for r in robots]
    width = max(len(row) for row in rows)
    grid = np.full((len(robots), width), np.nan)
    for i, row in enumerate(rows):
        grid[i, : len(row)] = row
    fig, ax = plt.subplots(figsize=(1.0 + 0.45 * width, 0.9 + 0.35 * len(robots)))
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_yticks(range(len(robots)), robots, fontsize=7)
    per = width // max(1, len(blocks))
    ax.set_xticks(range(width), [f"{b}\ne{e}" for b in blocks for e in range(per)], fontsize=6)
    fig.colorbar(im, ax=ax, label="mean gate weight")
    ax.set_title("WestWorld system gate per robot")
    return save_figure(fig, path)
