"""
Robust K-means against plain K-means
====================================

The paper's first synthetic set: four Gaussian clusters of 50 points and 80
outliers scattered around them. Plain K-means (scikit-learn's
:class:`~sklearn.cluster.KMeans`) must put every point in a cluster, so the
outliers drag its centres outwards. :class:`~robustclust.RobustKMeans`
asked for 80 outliers gives each of them a nonzero outlier vector
:math:`o_n` instead, and its centres stay on the clusters.
"""

import matplotlib.pyplot as plt
from sklearn.cluster import KMeans

from robustclust import RobustKMeans
from robustclust.datasets import make_blobs_with_outliers
from robustclust.metrics import center_rmse, outlier_precision_recall
from robustclust.plotting import plot_clusters

data = make_blobs_with_outliers(n_outliers=80, random_state=0)

plain = KMeans(n_clusters=4, n_init=10, random_state=0).fit(data.X)
robust = RobustKMeans(n_clusters=4, n_outliers=80, random_state=0).fit(data.X)

# %%
# How far is each set of centres from the true means? (RMSE after matching
# the centres to the means.) And how many of the 80 flagged points are
# planted outliers?
print(f"K-means centre RMSE:        {center_rmse(data.centers, plain.cluster_centers_):.3f}")
print(f"robust K-means centre RMSE: {center_rmse(data.centers, robust.cluster_centers_):.3f}")
precision, recall = outlier_precision_recall(data.outlier_mask, robust.outlier_mask_)
print(f"flagged {robust.n_outliers_}: precision {precision:.2f}, recall {recall:.2f}")

# %%
# Left, K-means: every point belongs to a cluster. Right, robust K-means:
# the flagged points are starred and circled, the circle's radius growing
# with :math:`\lVert o_n \rVert`. The crosses are the centres.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 5.6), layout="constrained")
plot_clusters(data.X, plain.labels_, ax=left, centers=plain.cluster_centers_)
left.set_title("KMeans: the outliers pull the centres")
plot_clusters(data.X, robust, ax=right)
right.set_title("RobustKMeans(n_outliers=80)")
for ax in (left, right):
    ax.set_aspect("equal", adjustable="box")  # keep the limits that show every circle
plt.show()
