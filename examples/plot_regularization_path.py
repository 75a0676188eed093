r"""
The λ path: outlier norms and counts (the paper's Figs. 2-3)
============================================================

λ sets how many points are outliers: above ``λ_max`` none is, at 0 every
point is. :func:`~robustclust.regularization_path` fits a decreasing grid
of λ values, each started from the solution at the one before (warm
starts), and records every point's :math:`\lVert o_n \rVert` and the count
of flagged points. This is the paper's recipe for choosing λ when the
number of outliers is known, and a way to look for a natural count when it
is not.
"""

import matplotlib.pyplot as plt
import numpy as np

from robustclust import RobustKMeans, regularization_path
from robustclust.datasets import make_blobs_with_outliers
from robustclust.plotting import plot_outlier_count_path, plot_outlier_norms_path

data = make_blobs_with_outliers(n_outliers=80, random_state=0)
path = regularization_path(RobustKMeans(n_clusters=4, random_state=0), data.X)

print(f"lambda_max = {path.lambda_max:.3f} (nothing is flagged above it)")
print(f"{len(path.lambdas)} grid values, {path.fit_time:.2f} s for the whole path")
span = path.lambda_range(80)
if span is not None:
    print(f"exactly 80 flagged for lambda in [{span[0]:.3f}, {span[1]:.3f}]")
else:  # the count can jump past 80 between two neighbouring grid values
    below = np.flatnonzero(path.n_outliers >= 80)[0]
    print(f"the count passes 80 between lambda = {path.lambdas[below - 1]:.3f} "
          f"({path.n_outliers[below - 1]} flagged) and {path.lambdas[below]:.3f} "
          f"({path.n_outliers[below]} flagged)")

# %%
# Left (Fig. 2): one curve per point, :math:`\lVert o_n \rVert` against λ,
# the 80 planted outliers in colour and the cluster points in grey. As λ
# decreases the planted outliers leave zero first, then the cluster points
# follow, until at the bottom of the grid every point is flagged. Right (Fig. 3): the number of outliers against λ; the shaded
# band is where the count passes 80.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
plot_outlier_norms_path(path, ax=left, highlight=data.outlier_mask)
left.set_title("‖o_n‖ along the path (Fig. 2)")
plot_outlier_count_path(path, ax=right, target=80)
right.set_title("number of outliers (Fig. 3)")
plt.show()

# %%
# A fit with ``n_outliers=80`` walks this path down to the jump past 80,
# bisects there and restarts its initialisations at the λ it finds, then
# refines the result (concentration steps), so that exactly 80 points are
# flagged. Its λ is one that flags those 80 at the refined centres, which
# have moved: it need not lie between the two grid values above.
model = RobustKMeans(n_clusters=4, n_outliers=80, random_state=0).fit(data.X)
print(f"{model.n_outliers_} flagged at lambda = {model.lambda_:.3f}")
