"""
Data larger than memory, with Dask
==================================

:class:`~robustclust.RobustKMeans` fits a ``dask.array`` block by block:
each pass sends the centres to the blocks and adds up what they return, so
the data never need to fit in memory at once. This small example builds
80,000 rows in 8 lazily generated blocks and fits them on Dask's threaded
scheduler (with a ``distributed.Client`` active, the fit runs on its
workers instead). It needs the ``dask`` extra: ``pip install '.[dask]'``.
"""

import dask
import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

from robustclust import RobustKMeans
from robustclust.plotting import plot_clusters

ROWS, P = 10_000, 4
MEANS = np.random.default_rng(0).normal(scale=5.0, size=(3, P))


def block(seed):
    """One block of rows, made where it is computed: 3 clusters, 1% outliers."""
    rng = np.random.default_rng(seed)
    X = MEANS[rng.integers(3, size=ROWS)] + rng.normal(size=(ROWS, P))
    X[: ROWS // 100] = rng.uniform(-15, 15, size=(ROWS // 100, P))
    return X


X = da.concatenate([da.from_delayed(dask.delayed(block)(b), shape=(ROWS, P), dtype=float)
                    for b in range(8)])
print(X)

model = RobustKMeans(n_clusters=3, n_outliers=0.01, random_state=0).fit(X)

# %%
# The parameters and the flagged rows are concrete; per-point results such
# as ``labels_`` are lazy dask arrays, computed from the final centres when
# asked for. A Dask fit is not refined (no concentration steps after the
# count search).
print(model.n_outliers_, "outliers; the first rows flagged:", model.outlier_indices_[:5])
print(type(model.labels_).__name__, model.labels_.shape)
print("rows per cluster:", np.bincount(model.labels_.compute() + 1)[1:])

# %%
# The first block, computed, drawn on its first two principal components
# (the data have four features; the axis labels say how much of the
# cluster points' variance each component holds).
first = slice(0, ROWS)
ax = plot_clusters(X[first].compute(), model.labels_[first].compute(),
                   outlier_norms=model.outlier_norms_[first].compute(),
                   centers=model.cluster_centers_, point_size=4)
ax.set_aspect("equal", adjustable="box")  # keep the limits that show every circle
ax.set_title("the first block: 10,000 rows of 4 features, projected")
plt.show()
