"""
A λ, a count, or the default count
==================================

There are three ways to tell :class:`~robustclust.RobustKMeans` how many
outliers to flag: a λ (``lam=``), a count (``n_outliers=``), or neither.
With neither, the number is estimated by a model of Gaussian clusters plus
a uniform noise component over the data's bounding box: the points whose
noise probability exceeds 0.5 are counted, and that count is fitted.

Here three clusters of 100 points share the plane with 60 uniform points.
"""

import matplotlib.pyplot as plt
import numpy as np

from robustclust import RobustKMeans
from robustclust.plotting import plot_clusters

rng = np.random.default_rng(0)
centres = np.array([[0.0, 0.0], [6.0, 0.0], [3.0, 5.0]])
clusters = centres[rng.integers(3, size=300)] + rng.normal(size=(300, 2))
noise = rng.uniform(-6, 12, size=(60, 2))
X = np.vstack([clusters, noise])
planted = np.r_[np.zeros(300, bool), np.ones(60, bool)]

# %%
# The default: no λ, no count.
default = RobustKMeans(n_clusters=3, random_state=0).fit(X)
print(default.lambda_rule())
print(f"flagged {default.n_outliers_}, of which {np.sum(default.outlier_mask_ & planted)} "
      f"planted; estimated noise share {default.noise_proportion_:.3f}")
print(f"promised share of cluster points flagged: {default.inlier_flag_rate_:.4f}")

# %%
# A count and a λ, for comparison. A given λ flags whatever lies beyond
# λ/2 of its centre; a count is met exactly when the path allows it.
by_count = RobustKMeans(n_clusters=3, n_outliers=60, random_state=0).fit(X)
by_lambda = RobustKMeans(n_clusters=3, lam=6.0, random_state=0).fit(X)
for name, model in [("n_outliers=60", by_count), ("lam=6.0", by_lambda)]:
    print(f"{name:14s} flagged {model.n_outliers_:3d}, "
          f"{np.sum(model.outlier_mask_ & planted)} of them planted")

# %%
# Left: the default fit. Right: each point's noise probability under the
# default's noise model (``outlier_probability_``); the points above 0.5
# are the ones counted.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.8), layout="constrained")
plot_clusters(X, default, ax=left)
left.set_aspect("equal", adjustable="box")  # keep the limits that show every circle
left.set_title(f"default count: {default.n_outliers_} flagged")
dots = right.scatter(X[:, 0], X[:, 1], c=default.outlier_probability_, cmap="viridis",
                     vmin=0, vmax=1, s=12)
right.set_aspect("equal", adjustable="datalim")
right.set_xlabel("x₁")
right.set_ylabel("x₂")
right.set_title("noise probability")
fig.colorbar(dots, ax=right, shrink=0.8, label="noise probability")
plt.show()
