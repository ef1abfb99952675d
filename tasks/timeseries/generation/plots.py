"""Figures of a generation run: real vs generated windows per domain, expert load per domain / timestep band."""

from __future__ import annotations

import numpy as np

from zoo.utils.figures import pyplot, save_figure


def sample_grid(samples: dict[str, tuple[np.ndarray, np.ndarray]], path, per_case: int = 6) -> str:
    """One panel per case: up to ``per_case`` real (grey) and generated (colour) z-scored windows."""
    plt = pyplot()
    names = list(samples)
    cols = 4
    rows = max(1, -(-len(names) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.2 * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, name in zip(axes.flat, names):
        real, fake = samples[name]
        ax.axis("on")
        for w in real[:per_case]:
            ax.plot(w, color="0.6", lw=0.8)
        for w in fake[:per_case]:
            ax.plot(w, color="tab:red", lw=0.8, alpha=0.8)
        ax.set_title(name, fontsize=8)
        ax.tick_params(labelsize=6)
    fig.suptitle("real (grey) vs generated (red), z-scored with the real test statistics", fontsize=9)
    return save_figure(fig, path)


def load_heatmap(load: np.ndarray, row_labels: list[str], path, title: str) -> str:
    """(rows, experts) share of each row's routed slots per expert."""
    plt = pyplot()
    share = load / np.maximum(load.sum(axis=1, keepdims=True), 1)
    fig, ax = plt.subplots(figsize=(1.0 + 0.4 * load.shape[1], 0.8 + 0.3 * len(row_labels)))
    image = ax.imshow(share, aspect="auto", cmap="viridis", vmin=0)
    ax.set_yticks(range(len(row_labels)), row_labels, fontsize=7)
    ax.set_xticks(range(load.shape[1]), [str(e) for e in range(load.shape[1])], fontsize=7)
    ax.set_xlabel("expert")
    ax.set_title(title, fontsize=8)
    fig.colorbar(image, ax=ax)
    return save_figure(fig, path)
