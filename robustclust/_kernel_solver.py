"""Kernel robust K-means and kernel RPC (Algorithms 3 and 4) in O(N^2 C) per iteration.

Notation (Section IV of the paper): K is the N x N kernel matrix, phi_n the
feature vector of point n, Phi = [phi_1 ... phi_N].  Every vector the
iterations touch lies in range(Phi) (Proposition 4): the centres are
M = Phi B (B is N x C, eqs. (31)-(32)), the residuals R = Phi Delta
(eqs. (33)-(34)) and the outliers O = Phi A (eqs. (35)-(36)).

Why A and Delta are never formed
--------------------------------
With W the N x C matrix whose row n holds the weights of point n's residual
(w_n = e_{c(n)} for hard K-means, u_n^q / sum_c u_nc^q for soft K-means,
the posteriors gamma_n for RPC), eq. (34) reads

    delta_n = e_n - B w_n,      Delta = I - B W^T,

and eq. (36) scales each column by its shrink factor s_n =
[1 - tau_n / ||delta_n||_K]_+:

    alpha_n = s_n (e_n - B w_n),      A = Delta S,  S = diag(s).

So A is fully described by the vector s (nonzero only for the k outliers),
the k rows w_n of W used at the O-step, and the B of that step.  Every
quantity an iteration needs then follows from the N x C product K B and the
C x C matrix G = B^T K B = B^T (K B):

* residual norms (eq. (37) with alpha = 0, and ||delta_n||_K):
      ||delta_n||^2_K = K_nn - 2 (KB)_n . w_n + w_n^T G w_n;
* distances with the outlier removed (eq. (37)), t_n = 1 - s_n:
      ||e_n - beta_c - alpha_n||^2_K = || t_n e_n + B (s_n w_n - e_c) ||^2_K
        = t_n^2 K_nn + 2 t_n (s_n (KB)_n . w_n - (KB)_nc)
          + s_n^2 w_n^T G w_n - 2 s_n (G w_n)_c + G_cc;
* outlier norms (eq. (38)): ||alpha_n||_K = s_n ||delta_n||_K;
* the next centres (eq. (32)), with V the column-normalized U_q (or
  Gamma diag(N pi)^-1) and B the coefficients the current A refers to:
      B' = (I - A) V = (I - S) V + B (W^T S V),
  where W^T S V only involves the k outlier rows: O(N C + k C^2 + N C^2).

Each iteration therefore costs one product K B' (N^2 C flops) plus
O(N C^2) work, instead of the O(N^3 C) of carrying A and Delta, and stores
K plus O(N C) numbers.  The columns of B always sum to 1 (1^T Delta = 0
when they do, and V's columns sum to 1), so a centre is an affine
combination of the phi_n: centring K (K <- H K H, H = I - 11^T / N), which
the estimators do once for numerical accuracy, leaves every distance, norm
and coefficient unchanged.

The update order and every rule (IRLS centre step for hard RKM with the
convex penalty, reseeding of empty clusters, the stopping rule, the weighted
MM steps, the RPC variance root) are those of the linear solvers in
:mod:`robustclust._bcd` and :mod:`robustclust._mixture_solver`, written in
coefficients, so with a linear kernel both produce the same iterates.
"""

import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.special import logsumexp

from . import _progress
from ._bcd import _EMPTY_INDEX, fuzzy_memberships, residual_weights, worst_fitting_inliers
from ._mixture_solver import consistency_factor

_LOG_2PI = math.log(2 * math.pi)


# -- the pure array functions of one iteration ---------------------------------------
def kernel_products(K, B):
    """(K B, B^T K B): the only O(N^2 C) work of an iteration."""
    KB = K @ B
    G = B.T @ KB
    return KB, (G + G.T) / 2.0


def sq_distances(kdiag, KB, G):
    """||phi_n - m_c||^2 for all points and centres, (N, C) (eq. (37), alpha = 0)."""
    return np.maximum(kdiag[:, None] - 2.0 * KB + np.diag(G), 0.0)


def residual_sq_norms(kdiag, KB, G, W):
    """||delta_n||^2_K = ||phi_n - M w_n||^2 for residual weights W (N, C)."""
    cross = np.einsum("nc,nc->n", W, KB)
    quad = np.einsum("nc,nc->n", W @ G, W)
    return np.maximum(kdiag - 2.0 * cross + quad, 0.0)


def outlier_sq_distances(kdiag, KB, G, index, shrink, weights):
    """||phi_n - o_n - m_c||^2 for the outlier rows ``index``, (k, C).

    o_n = s_n (phi_n - M w_n) with s_n = ``shrink``, w_n = ``weights`` rows
    and M = Phi B the centres of ``KB`` and ``G`` (module docstring).
    """
    t = 1.0 - shrink
    kb = KB[index]
    cross = np.einsum("kc,kc->k", kb, weights)
    GW = weights @ G
    quad = np.einsum("kc,kc->k", GW, weights)
    D = ((t * t * kdiag[index] + shrink * shrink * quad)[:, None]
         + 2.0 * t[:, None] * (shrink[:, None] * cross[:, None] - kb)
         - 2.0 * shrink[:, None] * GW + np.diag(G))
    return np.maximum(D, 0.0)


def centre_coefficients(B, V, index, shrink, weights):
    """sum_n V_nc (e_n - alpha_n) as coefficients, (N, C): eq. (32) before the division.

    ``B`` is the coefficient matrix the outliers refer to (module docstring).
    """
    S = V.copy()
    if len(index):
        S[index] *= (1.0 - shrink)[:, None]
        S += B @ (weights.T @ (shrink[:, None] * V[index]))
    return S


def outlier_shift(kdiag, old, new, KB_old, G_old, KB_new, G_new, cross):
    """||O_new - O_old||_F, each O given as (index, shrink, weights) on its own B.

    ``cross`` is B_new^T K B_old.  Row n of the difference is
    (s'_n - s_n) phi_n - Phi (s'_n B_new w'_n - s_n B_old w_n).
    """
    (ia, sa, wa), (ib, sb, wb) = old, new
    union = np.union1d(ia, ib)
    if len(union) == 0:
        return 0.0
    C = KB_old.shape[1]
    s0, s1 = np.zeros(len(union)), np.zeros(len(union))
    c0, c1 = np.zeros((len(union), C)), np.zeros((len(union), C))
    pa, pb = np.searchsorted(union, ia), np.searchsorted(union, ib)
    s0[pa], s1[pb] = sa, sb
    c0[pa], c1[pb] = sa[:, None] * wa, sb[:, None] * wb
    ds = s1 - s0
    lin = (np.einsum("kc,kc->k", KB_new[union], c1)
           - np.einsum("kc,kc->k", KB_old[union], c0))
    quad = (np.einsum("kc,kc->k", c1 @ G_new, c1) - 2.0 * np.einsum("kc,kc->k", c1 @ cross, c0)
            + np.einsum("kc,kc->k", c0 @ G_old, c0))
    sq = ds * ds * kdiag[union] - 2.0 * ds * lin + quad
    return math.sqrt(max(float(sq.sum()), 0.0))


@dataclass
class KernelState:
    """One iterate in coefficients: B, memberships, outliers (s_n, w_n) and bookkeeping."""

    dual_coef: np.ndarray  # (N, C) B: centre c = sum_n B_nc phi_n
    KB: np.ndarray  # (N, C) K B
    G: np.ndarray  # (C, C) B^T K B
    labels: np.ndarray  # (N,)
    memberships: np.ndarray | None  # (N, C) U (q > 1) or posteriors (RPC); None for q = 1
    outlier_index: np.ndarray  # (k,)
    outlier_shrink: np.ndarray  # (k,) s_n of alpha_n = s_n (e_n - B w_n)
    outlier_weights: np.ndarray  # (k, C) the w_n of those residuals
    outlier_sizes: np.ndarray  # (k,) ||o_n|| = ||alpha_n||_K
    point_costs: np.ndarray  # (N,) each point's term of the cost
    objective: float
    history: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False
    weights: np.ndarray | None = None  # (C,) pi (RPC)
    variance: float | None = None  # sigma^2 (RPC)

    @property
    def n_outliers(self):
        return len(self.outlier_index)

    @property
    def centers(self):
        """B^T: the centres as coefficients over the training points, (C, N)."""
        return self.dual_coef.T

    @property
    def outlier_magnitudes(self):
        return self.outlier_sizes

    @property
    def outliers(self):
        return self.outlier_index, self.outlier_shrink, self.outlier_weights


def _no_outliers(n_clusters):
    return _EMPTY_INDEX, np.zeros(0), np.zeros((0, n_clusters))


def _onehot(labels, n_clusters):
    W = np.zeros((len(labels), n_clusters))
    W[np.arange(len(labels)), labels] = 1.0
    return W


class _KernelGeometry:
    """What both kernel solvers share: K, its diagonal, shifts and scales."""

    def __init__(self, K, n_clusters):
        self.K = K
        self.kdiag = np.ascontiguousarray(np.diag(K), dtype=np.float64)
        self.n_samples = K.shape[0]
        self.n_clusters = n_clusters

    def products(self, B):
        return kernel_products(self.K, B)

    def coefficients_from_labels(self, labels, sample_weight=None):
        """B whose columns are the (weighted) means of the labelled groups."""
        w = np.ones(self.n_samples) if sample_weight is None else sample_weight
        V = _onehot(labels, self.n_clusters) * w[:, None]
        sums = V.sum(axis=0)
        if np.any(sums <= 0):
            raise ValueError("Every cluster of the initial labels needs a point of "
                             "positive weight.")
        return V / sums

    def shifts(self, state, B, KB, G, outliers):
        """(centre shift, ||M||_F, outlier shift, ||O||_F) between ``state`` and the new
        iterate, all in feature space."""
        dB = B - state.dual_coef
        centre_shift = math.sqrt(max(float(np.einsum("nc,nc->", dB, KB - state.KB)), 0.0))
        scale_m = math.sqrt(max(float(np.trace(G)), 0.0))
        cross = B.T @ state.KB
        o_shift = outlier_shift(self.kdiag, state.outliers, outliers, state.KB, state.G,
                                KB, G, cross)
        return centre_shift, scale_m, o_shift

    def converged(self, tol, centre_shift, scale_m, o_shift, sizes):
        scale_o = max(math.sqrt(float(np.dot(sizes, sizes))), scale_m)
        return centre_shift <= tol * scale_m and o_shift <= tol * scale_o


class KernelRKMSolver(_KernelGeometry):
    """Algorithm 3 (KRKM) in O(N^2 C) per iteration, for any lam, from any state.

    The calls of :class:`robustclust._bcd.RKMSolver` (``init_state``, ``run``,
    ``lambda_max``, ``trimmed_cost``, ``assign``), so that
    :mod:`robustclust._selection` chooses lam for it too.  ``init_state``
    takes the initial coefficients B (N, C).

    Parameters
    ----------
    K : ndarray of shape (n_samples, n_samples)
        Kernel matrix (positive semidefinite; centred by the estimators).
    sample_weight : ndarray of shape (n_samples,)
    n_clusters, q, max_iter, tol, verbose : see :class:`KernelRobustKMeans`.
    penalty, log_penalty : group penalties (convex and log) of
        :mod:`robustclust._penalties`.
    irls : bool, default=True
        For q = 1 and the convex penalty, use the IRLS centre step of the
        linear solver (same fixed points as eq. (32), fewer iterations);
        False gives the paper's eq. (32) exactly.
    """

    zero_lambda_ok = True

    def __init__(self, K, sample_weight, n_clusters, q, penalty, log_penalty, max_iter, tol,
                 verbose=0, irls=True):
        super().__init__(K, n_clusters)
        self.sample_weight = sample_weight
        self.q = float(q)
        self.hard = self.q == 1.0
        self.penalty = penalty
        self.log_penalty = log_penalty
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.irls = irls

    # -- pieces of one iteration ---------------------------------------------------------
    def residual_weights(self, labels, memberships):
        """W of the residuals r_n = phi_n - M w_n (eq. (33))."""
        if memberships is None:
            return _onehot(labels, self.n_clusters)
        return residual_weights(memberships, self.q)

    def outlier_step(self, lam, penalty, r2, W, prev_index, prev_sizes):
        """eq. (36): alpha_n = s_n delta_n, s_n = [1 - tau_n / ||delta_n||_K]_+."""
        tau = penalty.point_thresholds(lam, self.n_samples, prev_index, prev_sizes)
        cand = np.flatnonzero(r2 > tau * tau)
        norms = np.sqrt(r2[cand])
        shrink = penalty.shrink(norms, tau if np.isscalar(tau) else tau[cand])
        keep = shrink > 0
        index = cand[keep].astype(np.intp)
        return index, shrink[keep], W[index], (shrink * norms)[keep]

    def membership_step(self, lam, penalty, kdiag, KB, G, outliers, sizes):
        """eq. (15) or eq. (14) with the distances of eq. (37).

        Returns (labels, memberships or None, point_costs).
        """
        index, shrink, weights = outliers
        D = sq_distances(kdiag, KB, G)
        if len(index):
            D[index] = (outlier_sq_distances(kdiag, KB, G, index, shrink, weights)
                        + (lam * penalty.value_of_norms(sizes))[:, None])
        if self.hard:
            labels = D.argmin(axis=1)
            return labels, None, D[np.arange(len(labels)), labels]
        U = fuzzy_memberships(D, self.q)
        return np.argmax(U, axis=1), U, np.einsum("nc,nc->n", U**self.q, D)

    def _irls_weights(self, lam, state):
        """min(1, (lam/2) / ||phi_n - m_{c(n)}||) of the outlier rows (see RKMSolver)."""
        index = state.outlier_index
        lab = state.labels[index]
        d2 = np.maximum(self.kdiag[index] - 2.0 * state.KB[index, lab] + state.G[lab, lab], 0.0)
        with np.errstate(divide="ignore"):
            return np.minimum(1.0, (lam / 2.0) / np.sqrt(d2))

    def centre_step(self, lam, penalty, state):
        """eq. (32) (or its IRLS form): the next B from ``state``."""
        w = self.sample_weight
        index = state.outlier_index
        use_irls = self.irls and self.hard and not penalty.weighted
        if self.hard:
            w_eff = w.copy()
            if use_irls and len(index):
                w_eff[index] *= self._irls_weights(lam, state)
            V = _onehot(state.labels, self.n_clusters) * w_eff[:, None]
        else:
            V = state.memberships**self.q * w[:, None]
        sizes = V.sum(axis=0)
        if use_irls:
            S = V
        else:
            S = centre_coefficients(state.dual_coef, V, index, state.outlier_shrink,
                                    state.outlier_weights)
        with np.errstate(divide="ignore", invalid="ignore"):
            B = np.where(sizes > 0, S / sizes, state.dual_coef)
        return self._reseed_empty(B, sizes, state)

    def _reseed_empty(self, B, sizes, state):
        """Empty clusters restart at the worst-fitting inliers (as RKMSolver)."""
        if not self.hard or np.all(sizes > 0):
            return B
        members = np.bincount(state.labels, self.sample_weight, self.n_clusters)
        empty = np.flatnonzero(members <= 0)
        if len(empty) == 0:
            return B
        far = worst_fitting_inliers(state.point_costs, state.outlier_index, len(empty))
        B[:, empty] = 0.0
        B[far, empty] = 1.0
        return B

    def objective_of(self, costs):
        return float(np.dot(self.sample_weight, costs))

    def _step_at_fixed_centres(self, lam, penalty, KB, G, labels, U, outliers, sizes):
        """O-step then U-step, centres fixed; returns (labels, U, outliers, sizes, costs)."""
        W = self.residual_weights(labels, U)
        r2 = residual_sq_norms(self.kdiag, KB, G, W)
        index, shrink, weights, sizes = self.outlier_step(lam, penalty, r2, W, outliers[0],
                                                          sizes)
        outliers = (index, shrink, weights)
        labels, U, costs = self.membership_step(lam, penalty, self.kdiag, KB, G, outliers, sizes)
        return labels, U, outliers, sizes, costs

    # -- the solver interface ----------------------------------------------------------
    def init_state(self, B, lam=None):
        """Cold state from initial coefficients B; with a finite lam, O and U at them."""
        B = np.array(B, dtype=np.float64)
        KB, G = self.products(B)
        outliers, sizes = _no_outliers(self.n_clusters), np.zeros(0)
        labels, U, costs = self.membership_step(np.inf, self.penalty, self.kdiag, KB, G,
                                                outliers, sizes)
        if lam is not None and np.isfinite(lam):
            labels, U, outliers, sizes, costs = self._step_at_fixed_centres(
                lam, self.penalty, KB, G, labels, U, outliers, sizes)
        return KernelState(B, KB, G, labels, U, *outliers, sizes, costs,
                           self.objective_of(costs))

    def run(self, state, lam, weighted=False):
        """KRKM iterations at ``lam`` from ``state`` until B and A settle."""
        penalty = self.log_penalty if weighted else self.penalty
        history, converged = [], False
        for it in range(1, self.max_iter + 1):
            B = self.centre_step(lam, penalty, state)
            KB, G = self.products(B)
            W = self.residual_weights(state.labels, state.memberships)
            r2 = residual_sq_norms(self.kdiag, KB, G, W)
            index, shrink, weights, sizes = self.outlier_step(
                lam, penalty, r2, W, state.outlier_index, state.outlier_sizes)
            outliers = (index, shrink, weights)
            labels, U, costs = self.membership_step(lam, penalty, self.kdiag, KB, G, outliers,
                                                    sizes)
            obj = self.objective_of(costs)
            history.append(obj)
            shift = self.shifts(state, B, KB, G, outliers)
            state = KernelState(B, KB, G, labels, U, *outliers, sizes, costs, obj)
            _progress.iteration()
            if self.verbose:
                print(f"  iteration {it}: objective {obj:.6g}, outliers {len(index)}")
            if self.converged(self.tol, *shift, sizes):
                converged = True
                break
        return replace(state, history=history, n_iter=it, converged=converged)

    def residual_max(self, state):
        """max_n ||r_n||_K at ``state`` (with O = 0)."""
        W = self.residual_weights(state.labels, state.memberships)
        return math.sqrt(float(residual_sq_norms(self.kdiag, state.KB, state.G, W).max()))

    def lambda_max(self, state):
        """Smallest lam at which the O-step flags nothing, from ``state``."""
        return self.penalty.lambda_max(self.residual_max(state))

    def nearest_sq_dists(self, state):
        """||phi_n - m_c||^2 to the nearest centre of ``state``."""
        return sq_distances(self.kdiag, state.KB, state.G).min(axis=1)

    def clean_costs(self, state):
        D = sq_distances(self.kdiag, state.KB, state.G)
        if self.hard:
            return D.min(axis=1)
        U = fuzzy_memberships(D, self.q)
        return np.einsum("nc,nc->n", U**self.q, D)

    def trimmed_cost(self, state, n_trim):
        """The l0 cost of eq. (3) at the state's centres (see RKMSolver)."""
        costs = self.sample_weight * self.clean_costs(state)
        if n_trim > 0:
            costs[np.argpartition(-costs, n_trim - 1)[:n_trim]] = 0.0
        return float(costs.sum())

    def assign(self, kdiag, KB, G, stages, max_iter=100):
        """Memberships and outliers of new points, centres fixed (see RKMSolver.assign).

        ``kdiag`` holds k(x, x) of the new points, ``KB`` their kernel rows
        against the training points times B, ``G`` = B^T K B.  Returns
        (labels, memberships or None, outlier_index, outlier_sizes, costs).
        """
        new = _PointSet(self, kdiag)
        outliers, sizes = _no_outliers(self.n_clusters), np.zeros(0)
        labels, U, costs = new.membership_step(np.inf, self.penalty, kdiag, KB, G, outliers,
                                               sizes)
        for lam, weighted in stages:
            penalty = self.log_penalty if weighted else self.penalty
            for _ in range(max_iter):
                step = new._step_at_fixed_centres(lam, penalty, KB, G, labels, U, outliers, sizes)
                new_labels, new_U, new_outliers, new_sizes, costs = step
                settled = (np.array_equal(new_outliers[0], outliers[0])
                           and np.allclose(new_sizes, sizes, rtol=1e-12, atol=0)
                           and np.array_equal(new_labels, labels)
                           and (U is None or np.allclose(new_U, U, rtol=0, atol=1e-12)))
                labels, U, outliers, sizes = new_labels, new_U, new_outliers, new_sizes
                if settled:
                    break
        return labels, U, outliers[0], sizes, costs


class _PointSet(KernelRKMSolver):
    """The per-point steps of a solver applied to other points (new data)."""

    def __init__(self, solver, kdiag):
        self.__dict__.update(solver.__dict__)
        self.kdiag = kdiag
        self.n_samples = len(kdiag)
        self.K = None


class KernelRPCSolver(_KernelGeometry):
    """Algorithm 4 (KRPC) in O(N^2 C) per iteration: RPC with Sigma = sigma^2 I in
    feature space, for any lam, from any state.

    The order of the steps is that of :class:`robustclust._mixture_solver.RPCSolver`
    with a spherical covariance: pi and B from the posteriors, the O-step with
    the previous sigma, sigma from eq. (27) with p replaced by ``dim``, then
    the E-step (which computes the distances that step 3 of the next
    iteration of Algorithm 4 uses).  Step 8 of Algorithm 4 as printed
    computes sigma from the distances of step 3, i.e. with the previous
    centres and outliers; here sigma uses the updated ones, which is the
    exact minimizer of eq. (26) over sigma and makes the kernel solver with
    a linear kernel equal RPC.

    Parameters
    ----------
    K : ndarray of shape (n_samples, n_samples)
    n_components : int
    penalty, log_penalty : group penalties (convex and log).
    dim : int
        Dimension P of the feature space in eq. (27): the number of features
        for the linear kernel, N (the empirical kernel map) otherwise.
    reg_covar : float
        Floor on sigma^2.
    max_iter, tol, verbose : see :class:`KernelRobustGaussianMixture`.
    """

    zero_lambda_ok = False

    def __init__(self, K, n_components, penalty, log_penalty, dim, reg_covar, max_iter, tol,
                 verbose=0):
        super().__init__(K, n_components)
        self.penalty = penalty
        self.log_penalty = log_penalty
        self.dim = int(dim)
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose

    def distances(self, kdiag, KB, G, outliers):
        """||phi_n - o_n - m_c||^2, (N, C), with the outlier rows."""
        D = sq_distances(kdiag, KB, G)
        index, shrink, weights = outliers
        if len(index):
            D[index] = outlier_sq_distances(kdiag, KB, G, index, shrink, weights)
        return D

    def e_step(self, D, weights, variance, sizes, lam, penalty):
        """Posteriors, per-point log-likelihoods and the cost of eq. (8)."""
        log_prob = np.log(weights) - 0.5 * (self.dim * (_LOG_2PI + math.log(variance))
                                            + D / variance)
        log_norm = logsumexp(log_prob, axis=1)
        resp = np.exp(log_prob - log_norm[:, None])
        cost = -float(log_norm.sum())
        if len(sizes):
            cost += lam * float(penalty.value_of_norms(sizes / math.sqrt(variance)).sum())
        return resp, log_norm, cost

    def outlier_step(self, lam, penalty, resp, KB, G, variance, prev_index, prev_sizes,
                     kdiag=None):
        """eq. (24)/(25): o_n = r_n [1 - lam sigma / ||r_n||]_+ (or the weighted tau_n)."""
        kdiag = self.kdiag if kdiag is None else kdiag
        sigma = math.sqrt(variance)
        r2 = residual_sq_norms(kdiag, KB, G, resp) / variance  # whitened
        tau = penalty.point_thresholds(2.0 * lam, len(kdiag), prev_index, prev_sizes / sigma)
        cand = np.flatnonzero(r2 > tau * tau)
        norms = np.sqrt(r2[cand])
        shrink = penalty.shrink(norms, tau if np.isscalar(tau) else tau[cand])
        keep = shrink > 0
        index = cand[keep].astype(np.intp)
        return index, shrink[keep], resp[index], (shrink * norms * sigma)[keep]

    def variance_step(self, lam, penalty, resp, D, sizes, variance_old):
        """eq. (27) with P = dim: the positive root, floored at reg_covar."""
        N, P = self.n_samples, self.dim
        trace = float(np.einsum("nc,nc->", resp, D))
        a = 0.0
        if len(sizes):
            if penalty.weighted:
                lam_n = lam / (sizes / math.sqrt(variance_old) + penalty.eps)
            else:
                lam_n = np.full(len(sizes), lam)
            a = float(np.dot(lam_n, sizes))
        h = a / (2.0 * N * P)
        sigma = h + math.sqrt(max(trace, 0.0) / (N * P) + h * h)
        return max(sigma * sigma, self.reg_covar)

    def params_from_coefficients(self, B, exclude=None):
        """Initial (pi, sigma^2) from initial centres, as RPCSolver.params_from_means:
        the nearest-centre partition and the scatter of its closest half, times the
        chi^2 consistency factor for ``dim`` dimensions."""
        KB, G = self.products(B)
        D = sq_distances(self.kdiag, KB, G)
        labels = D.argmin(axis=1)
        d2 = D[np.arange(self.n_samples), labels]
        counts = np.bincount(labels, minlength=self.n_clusters).astype(np.float64)
        tiny = 10 * np.finfo(float).eps
        weights = (counts + tiny) / (counts.sum() + tiny * self.n_clusters)
        keep = np.ones(self.n_samples, bool) if exclude is None else ~exclude
        keep &= d2 <= np.median(d2[keep])
        P = self.dim
        n = max(int(keep.sum()), 1)
        variance = max(consistency_factor(P) * float(d2[keep].sum()) / (n * P), self.reg_covar)
        if variance <= 0:
            variance = 1.0
        return KB, G, weights, variance

    def _state(self, B, KB, G, weights, variance, outliers, sizes, lam, penalty):
        D = self.distances(self.kdiag, KB, G, outliers)
        resp, log_norm, cost = self.e_step(D, weights, variance, sizes, lam, penalty)
        return KernelState(B, KB, G, resp.argmax(axis=1), resp, *outliers, sizes, -log_norm,
                           cost, weights=weights, variance=variance)

    def init_state(self, init, lam=None):
        """State at initial coefficients; ``init`` is (B, exclude) as in RPCSolver."""
        B, exclude = init
        B = np.array(B, dtype=np.float64)
        KB, G, weights, variance = self.params_from_coefficients(B, exclude)
        none, nosize = _no_outliers(self.n_clusters), np.zeros(0)
        state = self._state(B, KB, G, weights, variance, none, nosize, np.inf, self.penalty)
        if lam is None or not np.isfinite(lam):
            return state
        index, shrink, W, sizes = self.outlier_step(lam, self.penalty, state.memberships, KB,
                                                    G, variance, _EMPTY_INDEX, nosize)
        return self._state(B, KB, G, weights, variance, (index, shrink, W), sizes, lam,
                           self.penalty)

    def run(self, state, lam, weighted=False):
        """EM iterations at ``lam`` from ``state`` until B and A settle."""
        penalty = self.log_penalty if weighted else self.penalty
        history, converged = [], False
        for it in range(1, self.max_iter + 1):
            resp = state.memberships
            nk = resp.sum(axis=0) + 10 * np.finfo(float).eps
            weights = nk / nk.sum()
            S = centre_coefficients(state.dual_coef, resp, *state.outliers)
            B = S / nk
            KB, G = self.products(B)
            index, shrink, W, sizes = self.outlier_step(
                lam, penalty, resp, KB, G, state.variance, state.outlier_index,
                state.outlier_sizes)
            outliers = (index, shrink, W)
            D = self.distances(self.kdiag, KB, G, outliers)
            variance = self.variance_step(lam, penalty, resp, D, sizes, state.variance)
            new_resp, log_norm, obj = self.e_step(D, weights, variance, sizes, lam, penalty)
            history.append(obj)
            shift = self.shifts(state, B, KB, G, outliers)
            state = KernelState(B, KB, G, new_resp.argmax(axis=1), new_resp, *outliers, sizes,
                                -log_norm, obj, weights=weights, variance=variance)
            _progress.iteration()
            if self.verbose:
                print(f"  iteration {it}: objective {obj:.6g}, outliers {len(index)}")
            if self.converged(self.tol, *shift, sizes):
                converged = True
                break
        return replace(state, history=history, n_iter=it, converged=converged)

    def lambda_max(self, state):
        """max_n ||r_n|| / sigma: just below it one point is flagged."""
        r2 = residual_sq_norms(self.kdiag, state.KB, state.G, state.memberships)
        return math.sqrt(float(r2.max()) / state.variance)

    def residual_norms(self, state):
        """||r_n|| = ||phi_n - sum_c gamma_nc m_c|| at ``state`` (with O = 0)."""
        return np.sqrt(residual_sq_norms(self.kdiag, state.KB, state.G, state.memberships))

    def trimmed_cost(self, state, n_trim):
        """Negative log-likelihood (o = 0) of all but the n_trim least likely points."""
        D = sq_distances(self.kdiag, state.KB, state.G)
        _, log_norm, _ = self.e_step(D, state.weights, state.variance, np.zeros(0), np.inf,
                                     self.penalty)
        nll = -log_norm
        if n_trim > 0:
            nll[np.argpartition(-nll, n_trim - 1)[:n_trim]] = 0.0
        return float(nll.sum())

    def assign(self, kdiag, KB, G, weights, variance, stages, max_iter=100):
        """Posteriors and outliers of new points, parameters fixed (RPCSolver.assign).

        Returns (memberships, outlier_index, outlier_sizes, point_log_likelihood).
        """
        outliers, sizes = _no_outliers(self.n_clusters), np.zeros(0)
        D = self.distances(kdiag, KB, G, outliers)
        resp, log_norm, _ = self.e_step(D, weights, variance, sizes, np.inf, self.penalty)
        for lam, weighted in stages:
            penalty = self.log_penalty if weighted else self.penalty
            for _ in range(max_iter):
                index, shrink, W, new_sizes = self.outlier_step(
                    lam, penalty, resp, KB, G, variance, outliers[0], sizes, kdiag=kdiag)
                new_outliers = (index, shrink, W)
                D = self.distances(kdiag, KB, G, new_outliers)
                new_resp, log_norm, _ = self.e_step(D, weights, variance, new_sizes, lam,
                                                    penalty)
                settled = (np.array_equal(index, outliers[0])
                           and np.allclose(new_sizes, sizes, rtol=1e-12, atol=0)
                           and np.allclose(new_resp, resp, rtol=0, atol=1e-12))
                outliers, sizes, resp = new_outliers, new_sizes, new_resp
                if settled:
                    break
        return resp, outliers[0], sizes, log_norm
