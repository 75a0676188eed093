"""Draws docs/_static/readme.png, the README's figure: plain K-means against
RobustKMeans on four clusters with a far group of outliers.

Run from the repository root: python docs/_scripts/readme_figure.py
"""

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from sklearn.cluster import KMeans

from robustclust import RobustKMeans
from robustclust.plotting import plot_clusters

rng = np.random.default_rng(0)
centres = np.array([[-3.0, -3.0], [-3.0, 3.0], [3.0, -3.0], [3.0, 3.0]])
X = np.vstack([c + rng.normal(scale=0.8, size=(60, 2)) for c in centres]
              + [rng.uniform(-6, 6, size=(15, 2)), [14.0, 12.0] + rng.normal(size=(10, 2))])

plain = KMeans(4, n_init=10, random_state=0).fit(X)
robust = RobustKMeans(4, n_outliers=25, random_state=0).fit(X)

fig = Figure(figsize=(9, 4), layout="constrained")
left, right = fig.subplots(1, 2)
for c in range(4):
    members = plain.labels_ == c
    left.scatter(X[members, 0], X[members, 1], s=10, label=f"cluster {c}")
left.scatter(*plain.cluster_centers_.T, marker="x", c="k", s=60, label="centres")
left.set_title("KMeans(4): the far group takes a cluster", fontsize=10)
left.legend(loc="upper left", fontsize=7)
left.set_aspect("equal", adjustable="datalim")
plot_clusters(X, robust, ax=right)
right.set_title("RobustKMeans(4, n_outliers=25): outliers circled", fontsize=10)
fig.savefig(Path(__file__).parents[1] / "_static" / "readme.png", dpi=90)
