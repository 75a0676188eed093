"""The normalized adjacency kernel of Section VI-C."""

from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from robustclust import KernelRobustKMeans
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


@pytest.mark.skipif(not (DATA / "dolphins.gml").exists(),
                    reason="shared data folder ../shared/data not present")
def test_dolphins_flags_twelve_named_nodes():
    G = nx.read_gml(DATA / "dolphins.gml", label="label")
    K = normalized_adjacency_kernel(G)
    est = KernelRobustKMeans(4, kernel="precomputed", init="spectral", n_outliers=12,
                             n_init=10, random_state=0).fit(K)
    names = np.array(list(G.nodes))
    flagged = {name.lower() for name in names[est.outlier_mask_]}
    assert len(flagged) == 12
    assert {"sn89", "tr99"} <= flagged  # two of the paper's outliers
    assert "zig" in {name.lower() for name in names} and "zig" not in flagged
