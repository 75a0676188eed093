"""Synthetic data shared by several test modules (not collected: no tests here)."""

import numpy as np


def separated_blobs(seed, k=4, n_per=500, p=3, n_far=40, offset=5.0):
    """k unit-variance clusters 20 apart (rotated, shifted by ``offset``) and ``n_far``
    points 60-120 from their mean, shuffled; labels (-1 for the far points)."""
    rng = np.random.default_rng(seed)
    means = np.zeros((k, p))
    means[:, 0] = 20.0 * np.arange(k)
    means = means @ np.linalg.qr(rng.normal(size=(p, p)))[0] + offset
    X = np.vstack([m + rng.normal(size=(n_per, p)) for m in means])
    direction = rng.normal(size=(n_far, p))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    far = means.mean(0) + direction * rng.uniform(60, 120, size=(n_far, 1))
    y = np.concatenate([np.repeat(np.arange(k), n_per), -np.ones(n_far, dtype=int)])
    order = rng.permutation(len(y))
    return np.vstack([X, far])[order], y[order]


def gaussian_clusters_with_noise(seed, n=150, p=3, C=3, n_out=15):
    """n points in C correlated Gaussian clusters (means of scale 5) and ``n_out``
    uniform on [-15, 15]^p after them."""
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=5.0, size=(C, p))
    A = np.eye(p) + 0.3 * rng.normal(size=(p, p))
    X = means[rng.integers(C, size=n)] + rng.normal(size=(n, p)) @ A
    return np.vstack([X, rng.uniform(-15, 15, size=(n_out, p))])
