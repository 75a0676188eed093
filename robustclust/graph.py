"""Kernels for graphs: robust clustering of the nodes of a network (Sections VI-C, VI-D).

Use with ``kernel="precomputed"``::

    K = normalized_adjacency_kernel(G)
    model = KernelRobustKMeans(4, kernel="precomputed", n_outliers=12,
                               init="spectral").fit(K)
    names = list(G.nodes)          # row n of K, and labels_[n], is node names[n]
"""

import math

import numpy as np
import scipy.sparse as sp
from scipy.linalg import eigh

#: Smallest eigenvalue that the default nu leaves to K.
NU_MARGIN = 1e-6


def _adjacency(G):
    """Dense symmetric adjacency matrix and node names of any accepted graph."""
    try:
        import networkx as nx
    except ImportError:  # pragma: no cover - networkx is a dependency
        nx = None
    if nx is not None and isinstance(G, nx.Graph):
        nodes = list(G.nodes)
        E = nx.to_numpy_array(G, nodelist=nodes, weight="weight", dtype=np.float64)
        if G.is_directed():
            raise ValueError("The graph is directed; the normalized adjacency kernel needs "
                             "an undirected graph (use G.to_undirected()).")
        return E, nodes
    E = G.toarray() if sp.issparse(G) else np.asarray(G, dtype=np.float64)
    E = np.asarray(E, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] != E.shape[1]:
        raise ValueError(f"An adjacency matrix must be square; got shape {E.shape}.")
    if not np.all(np.isfinite(E)):
        raise ValueError("The adjacency matrix contains NaN or infinity.")
    if not np.allclose(E, E.T):
        raise ValueError("The adjacency matrix is not symmetric; the normalized adjacency "
                         "kernel needs an undirected graph.")
    return E, list(range(E.shape[0]))


def normalized_adjacency_kernel(G, nu=None):
    """K = nu I + D^{-1/2} E D^{-1/2}, a positive definite kernel on the nodes of G.

    E is the (weighted) adjacency matrix and D the diagonal matrix of the
    degrees, as in Section VI-C of the paper.  The normalized adjacency
    D^{-1/2} E D^{-1/2} has its eigenvalues in [-1, 1] and is indefinite
    (its trace is 0 without self-loops), so nu shifts the spectrum.

    Parameters
    ----------
    G : networkx.Graph, scipy sparse matrix or ndarray of shape (n_nodes, n_nodes)
        Undirected graph, or its symmetric adjacency matrix (non-negative
        weights).  Row and column n of K is node ``list(G.nodes)[n]`` for a
        networkx graph (its iteration order), node n for a matrix.
    nu : float, default=None
        Diagonal shift.  None: just large enough that K is positive definite,
        nu = -lambda_min(D^{-1/2} E D^{-1/2}) + 1e-6, so the smallest
        eigenvalue of K is 1e-6.  A given nu that leaves K not positive
        definite is an error that states the smallest valid value.

    Returns
    -------
    K : ndarray of shape (n_nodes, n_nodes)

    Raises
    ------
    ValueError
        Isolated nodes (degree 0: D^{-1/2} is undefined) are named in the
        message; so are negative weights and asymmetric matrices.  A graph
        without nodes (or a 0 x 0 matrix) is refused too.
    """
    E, nodes = _adjacency(G)
    if E.shape[0] == 0:
        raise ValueError("The graph has no nodes: the normalized adjacency kernel needs at "
                         "least one node with an edge.")
    if np.any(E < 0):
        raise ValueError("The adjacency matrix has negative weights.")
    degree = E.sum(axis=1)
    isolated = np.flatnonzero(degree <= 0)
    if len(isolated):
        names = ", ".join(repr(nodes[i]) for i in isolated[:10])
        more = f" and {len(isolated) - 10} more" if len(isolated) > 10 else ""
        raise ValueError(
            f"The graph has {len(isolated)} isolated node(s) ({names}{more}): the "
            "normalized adjacency needs every degree > 0; remove them or add self-loops.")
    scale = 1.0 / np.sqrt(degree)
    A = scale[:, None] * E * scale[None, :]
    A = (A + A.T) / 2.0
    lam_min = float(eigh(A, eigvals_only=True, subset_by_index=[0, 0])[0])
    smallest_nu = -lam_min
    if nu is None:
        nu = smallest_nu + NU_MARGIN
    elif isinstance(nu, (bool, np.bool_)) or not isinstance(nu, (int, float, np.integer,
                                                                 np.floating)):
        raise ValueError(f"nu must be a number, got {nu!r}.")
    elif not math.isfinite(nu):
        raise ValueError(f"nu={nu!r} is not a finite number: the kernel would be "
                         f"{'all NaN' if math.isnan(nu) else 'infinite'}; give nu > "
                         f"{smallest_nu:.6g} or leave it None.")
    elif nu <= smallest_nu:
        raise ValueError(f"nu={nu!r} leaves the kernel not positive definite: it must be "
                         f"> {smallest_nu:.6g}, minus the smallest eigenvalue of the "
                         "normalized adjacency.")
    return A + float(nu) * np.eye(len(A))
