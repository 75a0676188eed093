"""The normalized adjacency kernel of Section VI-C."""

from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from sklearn.metrics import adjusted_rand_score

from robustclust import KernelRobustKMeans
from robustclust._estimators.kernels import spectral_embedding
from robustclust.graph import NU_MARGIN, normalized_adjacency_kernel

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def test_kernel_is_positive_definite_with_the_smallest_nu():
    G = nx.karate_club_graph()
    K = normalized_adjacency_kernel(G)
    E = nx.to_numpy_array(G, nodelist=list(G.nodes))
    d = E.sum(1)
    A = E / np.sqrt(np.outer(d, d))
    lam_min = np.linalg.eigvalsh(A).min()
    np.testing.assert_allclose(K - np.diag(np.diag(K)), A - np.diag(np.diag(A)), atol=1e-12)
    nu = K[0, 0] - A[0, 0]
    assert nu == pytest.approx(-lam_min + NU_MARGIN, abs=1e-12)
    assert np.linalg.eigvalsh(K).min() == pytest.approx(NU_MARGIN, abs=1e-9)
    with pytest.raises(ValueError, match="not positive definite: it must be >"):
        normalized_adjacency_kernel(G, nu=-lam_min / 2)
    K2 = normalized_adjacency_kernel(G, nu=2.0)
    np.testing.assert_allclose(np.diag(K2), np.diag(A) + 2.0)


def test_graph_dense_and_sparse_inputs_agree_and_follow_node_order():
    G = nx.relabel_nodes(nx.les_miserables_graph(), lambda n: n.upper())
    nodes = list(G.nodes)
    E = nx.to_numpy_array(G, nodelist=nodes)
    K = normalized_adjacency_kernel(G)
    np.testing.assert_allclose(normalized_adjacency_kernel(E), K, atol=1e-12)
    np.testing.assert_allclose(normalized_adjacency_kernel(sp.csr_matrix(E)), K, atol=1e-12)
    i, j = nodes.index("VALJEAN"), nodes.index("JAVERT")
    w = G["VALJEAN"]["JAVERT"]["weight"]
    d = E.sum(1)
    assert K[i, j] == pytest.approx(w / np.sqrt(d[i] * d[j]))


def test_isolated_nodes_are_named():
    G = nx.path_graph(["a", "b", "c"])
    G.add_node("lonely")
    with pytest.raises(ValueError, match=r"1 isolated node\(s\) \('lonely'\)"):
        normalized_adjacency_kernel(G)
    E = np.zeros((3, 3))
    E[0, 1] = E[1, 0] = 1
    with pytest.raises(ValueError, match=r"isolated node\(s\) \(2\)"):
        normalized_adjacency_kernel(E)


def test_bad_graph_inputs():
    with pytest.raises(ValueError, match="directed"):
        normalized_adjacency_kernel(nx.DiGraph([(0, 1), (1, 2)]))
    with pytest.raises(ValueError, match="not symmetric"):
        normalized_adjacency_kernel(np.array([[0, 1.0], [0, 0]]))
    with pytest.raises(ValueError, match="square"):
        normalized_adjacency_kernel(np.ones((2, 3)))
    with pytest.raises(ValueError, match="negative weights"):
        normalized_adjacency_kernel(np.array([[0, -1.0], [-1.0, 0]]))


def test_spectral_start_is_the_symmetric_laplacian_embedding():
    # the paper starts KRKM on graphs from spectral clustering with
    # L = I - D^{-1/2} E D^{-1/2}: the top eigenvectors of K, whatever nu is
    G = nx.karate_club_graph()
    E = nx.to_numpy_array(G, nodelist=list(G.nodes), weight=None)
    d = E.sum(1)
    L = np.eye(len(E)) - E / np.sqrt(np.outer(d, d))
    V = np.linalg.eigh(L)[1][:, :3]
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    for nu in (None, 1.0, 5.0):
        Y = spectral_embedding(normalized_adjacency_kernel(E, nu=nu), 3)
        np.testing.assert_allclose(Y @ Y.T, V @ V.T, atol=1e-8)  # same rows up to a rotation


def _flagged(graph, n_clusters):
    K = normalized_adjacency_kernel(graph)
    est = KernelRobustKMeans(n_clusters, kernel="precomputed", init="spectral", n_outliers=12,
                             n_init=10, random_state=0).fit(K)
    return est, np.array(list(graph.nodes))[est.outlier_mask_]


@pytest.mark.skipif(not (DATA / "dolphins.gml").exists(),
                    reason="shared data folder ../shared/data not present")
def test_dolphins_flags_the_papers_outliers():
    # Section VI-C: sn89, sn100, tr99 and kringel (degrees 2, 7, 7, 9) are
    # flagged, the other outliers have unit degree, and zig (degree 1) is not
    G = nx.read_gml(DATA / "dolphins.gml", label="label")
    _, flagged = _flagged(G, 4)
    named = {"sn89", "sn100", "tr99", "kringel"}
    assert len(flagged) == 12
    assert named <= {name.lower() for name in flagged}
    assert "zig" in {name.lower() for name in G.nodes} and "Zig" not in flagged
    assert all(G.degree(name) == 1 for name in flagged if name.lower() not in named)


@pytest.mark.skipif(not (DATA / "football.gml").exists(),
                    reason="shared data folder ../shared/data not present")
def test_football_flags_the_papers_twelve_teams():
    # Section VI-D: ARI 0.9218 after removing the outliers, and these 12 teams
    G = nx.read_gml(DATA / "football.gml", label="label")
    est, flagged = _flagged(G, 12)
    assert set(flagged) == {"Connecticut", "Navy", "NotreDame", "NorthernIllinois", "Toledo",
                            "MiamiOhio", "BowlingGreenState", "CentralMichigan",
                            "EasternMichigan", "Kent", "Ohio", "Marshall"}
    conference = np.array([G.nodes[n]["value"] for n in G.nodes])
    inliers = est.labels_ >= 0
    assert adjusted_rand_score(conference[inliers], est.labels_[inliers]) >= 0.92
