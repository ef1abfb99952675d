"""Which expert / slot each instance of a bag is dispatched to: one heatmap per bag, saved as a PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zoo.utils.figures import pyplot, save_figure


def plot_dispatch(batch: dict, path: Path) -> Path:
    """Plot MAMMOTH dispatch weights for a few bags.

    ``batch`` holds ``dispatch``: a list of per-bag (n_i, E, H, S) dispatch weights (softmax over instances),
    ``y`` (B,) bag labels, ``probs`` (B,) predicted positive probabilities and ``instance_labels`` (B, N)
    (-1 where unknown). Each panel shows the head-averaged weight of every instance (row) in every
    expert x slot (column); a black dot marks the slot that takes the largest share of each instance.
    """
    plt = pyplot()
    dispatch = batch["dispatch"]
    fig, axes = plt.subplots(1, len(dispatch), figsize=(4.2 * len(dispatch), 3.6), squeeze=False)
    for i, (ax, weights) in enumerate(zip(axes[0], dispatch)):
        n, e, _, s = weights.shape
        grid = weights.mean(axis=2).reshape(n, e * s)
        image = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0.0)
        ax.scatter(grid.argmax(axis=1), np.arange(n), s=8, c="black")
        for boundary in range(s, e * s, s):
            ax.axvline(boundary - 0.5, color="white", linewidth=0.5)
        labels = batch["instance_labels"][i, :n].tolist()
        if any(label >= 0 for label in labels):
            ax.set_yticks(range(n), [str(label) for label in labels], fontsize=6)
            ax.set_ylabel("instance (class)")
        else:
            ax.set_yticks(range(n), [str(k) for k in range(n)], fontsize=6)
            ax.set_ylabel("instance")
        ax.set_xticks([s * k + (s - 1) / 2 for k in range(e)], [f"e{k}" for k in range(e)], fontsize=6)
        ax.set_xlabel(f"expert ({s} slots each)")
        ax.set_title(f"bag label {int(batch['y'][i])}, p(pos)={float(batch['probs'][i]):.2f}", fontsize=8)
        fig.colorbar(image, ax=ax, fraction=0.046)
    fig.suptitle("MAMMOTH dispatch weights (mean over heads)", fontsize=9)
    return Path(save_figure(fig, path, dpi=110))
