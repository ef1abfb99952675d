"""zoo.utils.kmeans: Lloyd steps equal sklearn's from the same start; k-means++ seeding, warm starts, edge cases."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zoo.utils.kmeans import kmeans


def blobs(n: int = 30, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Three well-separated 2-d blobs of n points each: points (3n, 2), true labels (3n,), blob centres (3, 2)."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.tensor([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    truth = torch.arange(3).repeat_interleave(n)
    return centres[truth] + 0.5 * torch.randn(3 * n, 2, generator=g), truth, centres


def same_partition(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to a relabelling of the clusters."""
    return bool((a[:, None] == a[None, :]).eq(b[:, None] == b[None, :]).all())


def test_kmeans_recovers_separated_blobs_with_kmeanspp_seeding():
    x, truth, centres = blobs()
    labels, centroids = kmeans(x, 3, generator=torch.Generator().manual_seed(0))
    assert labels.dtype == torch.long and labels.shape == (90,) and centroids.shape == (3, 2)
    assert same_partition(labels, truth)
    order = torch.cdist(centres, centroids).argmin(dim=1)
    assert torch.allclose(centroids[order], centres, atol=0.3)


def test_kmeans_lloyd_iterations_equal_sklearn_from_the_same_start():
    sklearn_cluster = pytest.importorskip("sklearn.cluster")
    g = torch.Generator().manual_seed(1)
    x = torch.randn(200, 5, generator=g)  # no cluster structure: many Lloyd steps change assignments
    init = x[:4].clone()
    labels, centroids = kmeans(x, 4, iters=50, init=init)
    ref = sklearn_cluster.KMeans(4, init=init.double().numpy(), n_init=1, max_iter=50, tol=0.0, algorithm="lloyd")
    ref.fit(x.double().numpy())
    assert np.array_equal(labels.numpy(), ref.labels_)
    assert np.allclose(centroids.numpy(), ref.cluster_centers_, atol=1e-5)


def test_kmeans_is_deterministic_under_a_generator_and_clamps_k():
    x, _, _ = blobs(n=5)
    a = kmeans(x, 3, generator=torch.Generator().manual_seed(7))
    b = kmeans(x, 3, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    labels, centroids = kmeans(x[:2], 5, generator=torch.Generator().manual_seed(0))
    assert centroids.shape == (2, 2) and sorted(labels.tolist()) == [0, 1]  # k' = min(k, T)


def test_kmeans_warm_start_and_empty_clusters():
    x, truth, centres = blobs()
    labels, centroids = kmeans(x, 3, iters=0, init=centres)
    assert torch.equal(labels, truth)  # assignments to the given centroids, no Lloyd step
    assert torch.equal(centroids, centres)
    far = torch.cat([centres[:2], torch.tensor([[100.0, 100.0]])])
    labels, centroids = kmeans(x, 3, iters=3, init=far)
    assert (labels != 2).all() and torch.equal(centroids[2], far[2])  # an empty cluster keeps its centroid
    wrong_shape = torch.zeros(3, 7)
    labels, _ = kmeans(x, 3, init=wrong_shape, generator=torch.Generator().manual_seed(0))
    assert same_partition(labels, truth)  # a mismatched init is ignored, k-means++ seeds instead


def test_kmeans_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty"):
        kmeans(torch.zeros(0, 3), 2)
    with pytest.raises(ValueError, match=r"\(T, d\)"):
        kmeans(torch.zeros(4), 2)
