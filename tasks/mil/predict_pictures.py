"""Pictures of ``zoo predict`` on MIL runs (:mod:`zoo_tasks.mil.predict`): each bag's p(positive) by true label,
and the instance weights of a few bags (bars, or the instances themselves when they are 8x8 digit images)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.ticker import MaxNLocator

from zoo.utils.figures import pyplot, save_figure

MAX_IMAGES = 16  # instances shown per bag when instances are images (the highest weights)


def probability_picture(names: list[str], p_positive: np.ndarray, labels: np.ndarray, title: str):
    """``draw(path)``: histograms of the bags' p(positive) (n,), one per true label (n,) in {0, 1}."""

    def draw(path: Path) -> None:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5, 3))
        bins = np.linspace(0, 1, 21)
        for label, colour in ((0, "tab:blue"), (1, "tab:orange")):
            ax.hist(p_positive[labels == label], bins=bins, alpha=0.6, color=colour, label=f"true label {label}")
        ax.axvline(0.5, color="black", linewidth=0.8, linestyle="--")
        ax.set(xlabel="p(positive)", ylabel="bags", title=f"{title}: {len(names)} bags")
        ax.legend(fontsize=7)
        save_figure(fig, path, dpi=110)

    return draw


def attention_picture(
    features: list[np.ndarray],
    weights: list[np.ndarray],
    titles: list[str],
    instance_labels: list[np.ndarray] | None,
    images: bool,
):
    """``draw(path)``: one row per bag of its instance weights: bars over the instances in file order, or (``images``:
    each instance's 64 features are an 8x8 image) its ``MAX_IMAGES`` highest-weighted images with their weights.

    features: per bag (n_i, D); weights: per bag (n_i,); titles: one line per bag; instance_labels: per bag (n_i,)
    (shown beside each instance) or None.
    """

    def draw(path: Path) -> None:
        plt = pyplot()
        if images:
            fig = _image_rows(plt, features, weights, titles, instance_labels)
        else:
            fig = _bar_rows(plt, weights, titles, instance_labels)
        save_figure(fig, path, dpi=110)

    return draw


def _bar_rows(plt, weights, titles, instance_labels):
    widest = max(len(w) for w in weights)
    fig, axes = plt.subplots(
        len(weights), 1, figsize=(max(4.0, 0.18 * widest + 1.5), 1.7 * len(weights)), squeeze=False
    )
    for k, ax in enumerate(axes[:, 0]):
        n = len(weights[k])
        ax.bar(range(n), weights[k], color="tab:purple")
        ax.set_xlim(-0.6, widest - 0.4)
        ax.set_ylabel("weight", fontsize=7)
        ax.set_title(titles[k], fontsize=8)
        if instance_labels is not None:
            ax.set_xticks(range(n), [str(int(v)) for v in instance_labels[k]], fontsize=6)
            ax.set_xlabel("instance (its label)", fontsize=7)
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.tick_params(axis="x", labelsize=6)
            ax.set_xlabel("instance", fontsize=7)
    return fig


def _image_rows(plt, features, weights, titles, instance_labels):
    columns = min(MAX_IMAGES, max(len(w) for w in weights))
    fig, axes = plt.subplots(len(weights), columns, figsize=(0.75 * columns + 0.4, 1.15 * len(weights)), squeeze=False)
    for k in range(len(weights)):
        order = np.argsort(-weights[k], kind="stable")[:columns]
        for col, ax in enumerate(axes[k]):
            ax.set_xticks([])
            ax.set_yticks([])
            if col >= len(order):
                ax.axis("off")
                continue
            j = order[col]
            ax.imshow(features[k][j].reshape(8, 8), cmap="gray_r")
            digit = f" ({int(instance_labels[k][j])})" if instance_labels is not None else ""
            ax.set_title(f"{weights[k][j]:.2f}{digit}", fontsize=6)
            for spine in ax.spines.values():  # the frame widens with the weight (relative to the bag's largest)
                spine.set_color("tab:red")
                spine.set_linewidth(0.5 + 3 * float(weights[k][j] / weights[k].max()))
        axes[k][0].set_ylabel(titles[k], fontsize=6, rotation=0, ha="right", va="center")
    fig.suptitle("instances by weight (highest first); title: weight (digit)", fontsize=8)
    return fig
