r"""
The odd nodes of a graph
========================

Zachary's karate club (it ships with networkx): 34 members, the friendships
between them, and a club that split in two. Robust clustering works on the
nodes of a graph through a kernel: the paper's normalized adjacency kernel
:math:`K = \nu I + D^{-1/2} E D^{-1/2}`
(:func:`robustclust.graph.normalized_adjacency_kernel`), with
``kernel="precomputed"``. Nodes whose outlier vector is nonzero are those
that fit neither group well.
"""

import matplotlib.pyplot as plt
import networkx as nx
from sklearn.metrics import adjusted_rand_score

from robustclust import KernelRobustKMeans
from robustclust.graph import normalized_adjacency_kernel
from robustclust.plotting import plot_graph, plot_kernel_matrix

G = nx.karate_club_graph()
K = normalized_adjacency_kernel(G)  # row n is node list(G.nodes)[n]
club = KernelRobustKMeans(2, kernel="precomputed", init="spectral", n_outliers=3,
                          random_state=0).fit(K)

odd = [node for node, out in zip(G.nodes, club.outlier_mask_) if out]
print("outliers:", odd, "with degrees", [G.degree[node] for node in odd])

# %%
# How do the two groups compare with the split the club really made
# (the ``club`` attribute of each node)? The outliers are left out.
split = [0 if G.nodes[node]["club"] == "Mr. Hi" else 1 for node in G.nodes]
kept = ~club.outlier_mask_
print("adjusted Rand index against the split:",
      round(adjusted_rand_score([s for s, k in zip(split, kept) if k], club.labels_[kept]), 2))

# %%
# Left: the network, outliers as red diamonds, larger for higher scores.
# Right: the kernel matrix with its rows and columns ordered by cluster,
# the outliers last.
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.5), layout="constrained")
plot_graph(G, club.labels_, outlier_scores=club.outlier_norms_, ax=left, font_size=7)
left.set_title("karate club: 2 clusters, 3 outliers")
plot_kernel_matrix(K, club.labels_, ax=right, names=[str(node) for node in G.nodes])
right.set_title("the kernel K, nodes ordered by cluster, outliers last")
plt.show()
