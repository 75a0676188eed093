"""The models: robust K-means and the robust Gaussian mixture, each block update once.

A model knows the paper's updates of its own blocks and nothing about the
data's representation: it asks the geometry for products and sums, the
penalty for the O-step (:func:`robustclust._core.penalties.outlier_step`), and
hands states back to the driver (:class:`robustclust._core.solver.Solver`).

:class:`KMeansModel` (Algorithms 1 and 3)
    U-step eq. (14) (q > 1) or eq. (15) (q = 1); M-step eq. (9) (eq. (32) in
    coefficients), or for hard K-means with the convex group penalty its IRLS
    form (see :meth:`KMeansModel.centre_weights`); empty clusters reseeded.
:class:`MixtureModel` (Algorithms 2 and 4)
    E-step eq. (20); mixing weights eq. (22); means eq. (23); covariance step
    eq. (26): the exact root of eq. (27) for sigma^2 I, a majorized closed form
    for diagonal and full Sigma; the initial parameters from initial means.

Update order within one iteration (the driver calls :meth:`iterate`):

* K-means: M-step from (U, O) -> O-step at the new centres with the previous
  residual weights -> U-step with the new O.
* Mixture: pi and means from (gamma, O) -> O-step with the previous Sigma ->
  Sigma-step -> E-step (which gives the cost, eq. (8)).

The closed forms that go beyond the paper, for the mixture with a common
Sigma: since sum_c gamma_nc = 1,

    sum_c gamma_nc / 2 ||x_n - m_c - o||^2_{Sigma^-1} = 1/2 ||r_n - o||^2_{Sigma^-1} + const

with r_n = x_n - sum_c gamma_nc m_c, so in whitened coordinates the O-step
(eq. (24)) is a plain group-lasso prox, o_n = r_n [1 - tau_n / ||r_n||_{Sigma^-1}]_+
(eq. (25) for Sigma = sigma^2 I).  The Sigma-step minimizes
1/2 tr(Sigma^-1 S) + N/2 log det Sigma + sum_n lam_n ||o_n||_{Sigma^-1} with
S = sum_n sum_c gamma_nc (y_n - m_c)(y_n - m_c)^T, y_n = x_n - o_n:

* spherical: the exact positive root of eq. (27) (with sum_n lam_n ||o_n||_2
  in place of lam sum_n ||o_n|| for the log penalty);
* diagonal or full: sqrt(q) <= sqrt(q0) + (q - q0) / (2 sqrt(q0)) for the
  concave q -> sqrt(q), q = o^T Sigma^-1 o, at the current Sigma_0, so the
  majorizer is 1/2 tr(Sigma^-1 B) + N/2 log det Sigma with
  B = S + sum_n (lam_n / ||o_n||_{Sigma_0^-1}) o_n o_n^T, minimized by B / N
  (its diagonal for "diag").  It touches the cost at Sigma_0, so the step
  never increases it.

``reg_covar`` is a floor on the eigenvalues (variances) applied as the exact
minimizer over {Sigma >= floor I} (:func:`covariance.floor_covariance`).  Each
step minimizes (or minimizes a majorizer of) the cost over its block, so the
cost never increases (Propositions 2 and 3).
"""

import math
from dataclasses import replace

import numpy as np

from . import _pass_states
from .backend import (asarray, bincount, colsum, device, flatnonzero, float64, logsumexp, maximum,
                      minimum, pick, take, where)
from .covariance import Covariance, bound_covariance, consistency_factor
from .geometry import Assignment
from .penalties import outlier_step, penalty_values
from .state import State, no_outliers
from .compiled import lazy_module, worth

_estep = lazy_module("robustclust._core._estep")
_fused = lazy_module("robustclust._core._fused")
_passes = lazy_module("robustclust._core._passes")
_soft = lazy_module("robustclust._core._soft")

_LOG_2PI = math.log(2 * math.pi)
#: Added to the component sizes: keeps empty components' weights positive.
_TINY = 10 * np.finfo(float).eps


# -- memberships -------------------------------------------------------------------
def fuzzy_memberships(costs, q, xp=np):
    """Minimizer of sum_c u_c^q costs_c over the simplex, row by row (eq. (14)).

    Written as ``u_c = r_c^a / sum r^a`` with ``r_c = min(costs) / costs_c`` and
    ``a = 1 / (q - 1)`` so that nothing overflows as q -> 1+ (the result tends
    to the hard rule of eq. (15)); a row with a zero cost shares its mass
    between its zero-cost clusters.
    """
    costs = xp.astype(xp.asarray(costs), float64(xp), copy=False)
    cmin = xp.min(costs, axis=1, keepdims=True)
    safe = where(costs > 0, costs, 1.0, xp)  # a zero cost's ratio is not cmin / 0
    ratio = where(cmin > 0, cmin / safe, xp.astype(costs == 0, float64(xp)), xp)
    u = ratio ** (1.0 / (q - 1.0))
    return u / xp.sum(u, axis=1, keepdims=True)


def residual_weights(memberships, q, xp=np):
    """Rows u_n^q / sum_c u_nc^q: the weights of the soft residual r_n (eq. (12)).

    Scaled by the row maximum first so that u^q cannot underflow to 0 / 0.
    """
    wq = (memberships / xp.max(memberships, axis=1, keepdims=True)) ** q
    return wq / xp.sum(wq, axis=1, keepdims=True)


def worst_fitting_inliers(point_costs, outlier_mask, k, xp=np):
    """Indices of the k non-outliers with the largest cost: reseeds for empty clusters."""
    costs = where(outlier_mask, -math.inf, point_costs, xp)
    return xp.argsort(-costs, stable=True)[:k]


def _divide_rows(sums, totals, fallback, xp):
    """sums / totals row by row; rows with total <= 0 keep ``fallback``."""
    safe = where(totals > 0, totals, 1.0, xp)
    return where(totals[:, None] > 0, sums / safe[:, None], xp.astype(fallback, sums.dtype), xp)


class KMeansModel:
    """Robust (soft) K-means: Algorithm 1 (linear) and Algorithm 3 (kernel).

    Parameters
    ----------
    n_clusters : int
    q : float
        Fuzzifier; q = 1 is hard K-means.
    irls : bool, default=True
        For q = 1 and the convex group penalty, the IRLS centre step (same
        fixed points as eq. (9), fewer iterations); False is eq. (9) itself.
    """

    mixture = False
    stops_on_objective = False
    #: lam = 0 is a valid problem: every point with a residual is flagged.
    zero_lambda_ok = True
    #: A count search may warm-start each lam from the solution at a larger one.
    cold_count_search = False
    #: the O-step's lambda is the model's (threshold lam / 2).
    penalty_scale = 1.0

    def __init__(self, n_clusters, q=1.0, irls=True):
        self.n_clusters = n_clusters
        self.q = float(q)
        self.hard = self.q == 1.0
        self.irls = irls

    # -- pieces ------------------------------------------------------------------------
    def residual_weights(self, solver, labels, memberships):
        """W of the residuals r_n (eq. (12)): the labels (hard) or u^q / sum u^q."""
        if memberships is None:
            return labels
        if _compiled(solver, memberships):
            return _soft.soft_residual_weights(memberships, self.q)
        return residual_weights(memberships, self.q, solver.xp)

    def state_weights(self, solver, state):
        """:meth:`residual_weights` of ``state`` (kept by its compiled U-step)."""
        if state.memberships is None:
            return state.labels
        cache = state.soft_cache()
        if cache is not None:
            return cache[1]
        return self.residual_weights(solver, state.labels, state.memberships)

    def uses_irls(self, penalty):
        """Whether the centre step is IRLS (:meth:`centre_weights`): hard K-means
        with the group penalty, convex or weighted."""
        return self.irls and self.hard and penalty.name == "group"

    def membership_step(self, solver, products, outliers, lam, penalty, centers):
        """U-step: eq. (15) (q = 1) or eq. (14) (q > 1) with the current O.

        Returns (labels, memberships or None, point costs).
        """
        return self._membership_step(solver, products, outliers, lam, penalty, centers)[:3]

    def _membership_step(self, solver, products, outliers, lam, penalty, centers):
        """:meth:`membership_step`, plus u^q when the compiled U-step computed it."""
        xp = solver.xp
        if outliers.count:
            D = solver.outlier_distances(products, outliers, centers)
            D = D + (lam * penalty_values(penalty, outliers, xp))[:, None]
        elif self.hard:
            T = xp.linalg.diagonal(products.gram)[None, :] - 2.0 * products.cross
            labels = xp.argmin(T, axis=1)
            return labels, None, maximum(products.diag + pick(T, labels, xp), 0.0, xp)
        else:
            D = products.sq_distances()
        if self.hard:
            labels = xp.argmin(D, axis=1)
            return labels, None, pick(D, labels, xp)
        if _compiled(solver, D):
            U, Uq, W, costs, labels = _soft.soft_memberships(D, self.q)
            return labels, U, costs, Uq, W
        U = fuzzy_memberships(D, self.q, xp)
        costs = xp.sum(U**self.q * D, axis=1)
        return xp.argmax(U, axis=1), U, costs

    def _new_state(self, solver, centers, products, outliers, step):
        """The State of a U-step's result (with the u^q the compiled U-step kept)."""
        labels, U, costs = step[:3]
        return State(centers, products, labels, U, outliers, costs, solver.objective_of(costs),
                     soft=(U,) + tuple(step[3:]) if len(step) > 3 else None)

    def centre_weights(self, solver, state, lam, penalty):
        """V of the centre step and whether the outliers are subtracted (eq. (9)).

        q > 1: u_nc^q w_n.  q = 1: w_n on the point's cluster; with the convex
        group penalty, the IRLS form: for fixed labels, minimizing over O
        leaves each point the Huber cost H(||x_n - m_c||) with knee lam / 2,
        and the (M, O) block is Huber location estimation.  Its IRLS step,
        m_c = sum w_n a_n x_n / sum w_n a_n with a_n = min(1, (lam/2) /
        ||x_n - m_{c(n)}||), minimizes a quadratic majorizer of the cost that
        touches it at the current iterate, so it never increases the cost of
        eq. (5); its fixed points are those of eq. (9) (centres equal the means
        of x_n - o_n), but where eq. (9) moves a centre by a step shrunk by
        the share of flagged points, IRLS does not, so runs with many
        outliers (the bottom of a path) need far fewer iterations.  The log
        penalty (eq. (30)) the same way: its MM step majorizes each point's
        penalty by a weighted norm, which for fixed labels leaves the Huber
        cost with knee tau_n = lam / (2 (||o_n|| + eps)) at the current o_n,
        the threshold of the next O-step; IRLS on it, then that O-step, never
        increase the majorizer, hence the cost, and the fixed points are again
        those of eq. (9).  (With eq. (9), the weighted path on digits spent
        14,400 of its 17,800 iterations at max_iter where every point was
        flagged.)
        """
        xp = solver.xp
        w = solver.sample_weight
        if not self.hard:
            cache = state.soft_cache()
            if cache is not None:
                return cache[0] * w[:, None], True
            return state.memberships**self.q * w[:, None], True
        if not self.uses_irls(penalty):
            return Assignment(state.labels, w, self.n_clusters), True
        if state.n_outliers == 0:
            return Assignment(state.labels, w, self.n_clusters), False
        # a_n = min(1, tau_n / ||x_n - m_c(n)||) for the outliers, 1 for the others;
        # tau_n = lam / 2, or for the log penalty the threshold of the next O-step,
        # lam / (2 (||o_n|| + eps)) (eq. (30)): the knee of the Huber cost that
        # the MM majorizer of eq. (30) leaves each point
        d = xp.sqrt(solver.label_distances(state))
        outliers = solver.dense(state.outliers)
        flagged = outliers.shrink_full > 0
        safe = where(d > 0, d, 1.0, xp)
        tau = penalty.point_thresholds(lam, outliers.sizes_full) if penalty.weighted \
            else lam / 2.0
        a = where(flagged & (d > 0), minimum(1.0, tau / safe, xp), 1.0, xp)
        return Assignment(state.labels, w * a, self.n_clusters), False

    def centre_step(self, solver, state, lam, penalty):
        """The next centres: eq. (9) / eq. (32), or the IRLS step, then reseeding."""
        xp = solver.xp
        geometry = solver.geometry
        V, subtract = self.centre_weights(solver, state, lam, penalty)
        sums = (geometry.removed_sums(V, state.outliers, state.centers) if subtract
                else geometry.point_sums(V))
        totals = V.totals(xp) if isinstance(V, Assignment) else colsum(V, xp)
        return self.divide(solver, sums, totals, state)

    def divide(self, solver, sums, totals, state):
        """Centres from their numerators and denominators; empty clusters reseeded.

        As scikit-learn's K-means does (q = 1), a centre without members is
        moved to the inlier that fits worst; outliers are never used as seeds.
        A centre with no members does not enter the cost, so this cannot
        increase it.
        """
        xp = solver.xp
        centers = _divide_rows(sums, totals, state.centers, xp)
        centers = solver.geometry_dtype(centers)
        if not self.hard or bool(xp.all(totals > 0)):
            return centers
        # zero weight can also mean members that all carry an IRLS weight of 0
        # (lam = 0); those clusters are not empty and keep their centre
        members = bincount(state.labels, solver.sample_weight, self.n_clusters, xp)
        empty = flatnonzero(members <= 0, xp)
        if empty.shape[0] == 0:
            return centers
        flagged = solver.dense(state.outliers).sizes_full > 0
        costs = state.point_costs
        if costs is None:  # a compiled pass keeps none; the inliers' are their distances
            costs = xp.min(solver.products_of(state).sq_distances(), axis=1)
        far = worst_fitting_inliers(costs, flagged, empty.shape[0], xp)
        host = np.array(solver.to_host(centers))
        host[solver.to_host(empty)] = solver.to_host(solver.geometry.point_centers(far))
        return asarray(host, xp, like=centers)

    # -- the driver's calls ----------------------------------------------------------------
    def iterate(self, solver, state, lam, penalty):
        """One BCD iteration: M-step, O-step, U-step (Algorithm 1 / 3)."""
        if worth(solver.geometry.n_samples) and _passes.kmeans_eligible(solver, penalty):
            # the same iteration, compiled
            return _passes.kmeans_iterate(self, solver, state, lam, penalty)
        centers = self.centre_step(solver, state, lam, penalty)
        products = solver.geometry.products(centers)
        return self.fixed_centre_step(solver, state, centers, products, lam, penalty)

    def fixed_centre_step(self, solver, state, centers, products, lam, penalty):
        """O-step (with the residual weights of ``state``) then U-step, centres fixed."""
        W = self.state_weights(solver, state)
        r2 = products.residual_sq_norms(W)
        outliers = outlier_step(penalty, lam, r2, W, state.outliers, solver.xp,
                                residuals=solver.residual_rows(centers, W))
        outliers.euclidean = outliers.sizes  # K-means measures o_n in the Euclidean norm
        step = self._membership_step(solver, products, outliers, lam, penalty, centers)
        return self._new_state(solver, centers, products, outliers, step)

    def settled_assignment(self, solver, centers, lam):
        """What :meth:`Solver.assign` settles on for hard K-means with the convex
        group penalty at fixed ``centers``, in one compiled pass: each point's
        nearest centre and the prox of its residual r_n to it (eq. (11)),
        o_n = s_n r_n, with each point's cost of eq. (6),
        ||r_n - o_n||^2 + lam rho(o_n) = (1 - s_n)^2 ||r_n||^2 + lam rho(o_n).
        """
        sq_residuals = np.empty(solver.geometry.n_samples)
        state = _fused.init_state(solver, np.asarray(centers), lam, costs=sq_residuals)
        costs = sq_residuals
        if math.isfinite(lam):
            o = state.outliers
            costs = (sq_residuals * (1.0 - o.shrink_full) ** 2
                     + lam * penalty_values(solver.penalty, o))
        state.point_costs = costs
        state.objective = solver.objective_of(costs)
        return state

    def start(self, solver, centers, products):
        """The state of centres with O = 0: memberships that best fit them."""
        outliers = no_outliers(solver.geometry.n_samples, solver.xp, like=products.diag)
        step = self._membership_step(solver, products, outliers, math.inf, solver.penalty,
                                     centers)
        return self._new_state(solver, centers, products, outliers, step)

    def clean_costs(self, solver, products):
        """Each point's best cost without outlier term: min_u sum_c u^q ||x - m_c||^2."""
        xp = solver.xp
        D = products.sq_distances()
        if self.hard:
            return xp.min(D, axis=1)
        if _compiled(solver, D):
            return _soft.soft_memberships(D, self.q)[3]
        U = fuzzy_memberships(D, self.q, xp)
        return xp.sum(U**self.q * D, axis=1)

    def residual_max(self, solver, state, penalty):
        """max_n ||r_n|| (group) or max_{n,j} |r_nj| (elementwise) at ``state``."""
        W = self.state_weights(solver, state)
        if penalty.row_sparse:
            return math.sqrt(float(solver.xp.max(solver.residual_sq_norms(state, W))))
        residuals = solver.residual_rows(state.centers, W)
        best = 0.0
        n = solver.geometry.n_samples
        for start in range(0, n, 4096):
            rows = np.arange(start, min(start + 4096, n))
            best = max(best, float(np.abs(residuals(rows)).max()))
        return best

    def lambda_max(self, solver, state):
        """Smallest lam at which the O-step from O = 0 flags nothing."""
        return solver.penalty.lambda_max(self.residual_max(solver, state, solver.penalty))

    def critical_lambdas(self, solver, state, penalty):
        """lam below which the next O-step flags each point (see Solver.critical_lambdas)."""
        W = self.state_weights(solver, state)
        prev = solver.dense(state.outliers)
        if penalty.row_sparse:
            norms = solver.xp.sqrt(solver.residual_sq_norms(state, W))
            return penalty.critical_lambdas(norms, prev.sizes_full)
        # entry-wise: flagged when any entry passes its threshold
        residuals = solver.residual_rows(state.centers, W)
        n = solver.geometry.n_samples
        lookup = np.full(n, -1)
        lookup[prev.index] = np.arange(prev.count)
        out = np.zeros(n)
        for start in range(0, n, 4096):
            rows = np.arange(start, min(start + 4096, n))
            R = np.abs(residuals(rows))
            before = np.zeros(R.shape)
            pos = lookup[rows]
            if prev.count:
                before[pos >= 0] = np.abs(prev.rows[pos[pos >= 0]])
            out[rows] = penalty.critical_lambdas(R, before).max(axis=1)
        return out

    def point_scores(self, solver, state):
        """Per-point costs of the l0 problem (eq. (3)) at the state's centres."""
        if self.hard and worth(solver.geometry.n_samples) and _fused.dense_linear(solver):
            # the costs of the pass that made the state when it kept them,
            # else one compiled pass instead of the N x C distance matrix
            g = solver.geometry
            costs = _pass_states.kept_costs(state)
            if costs is None:
                costs = _fused.nearest_sq_distances(g.X, state.centers, g.sq_norms)
        else:
            costs = self.clean_costs(solver, solver.products_of(state))
        return solver.sample_weight * costs


class MixtureBase:
    """What the mixture models share: the driver's flags and the constructor.

    Parameters
    ----------
    n_components : int
    kind : {"spherical", "diag", "full"}
    reg_covar : float
        Floor on the variances (eigenvalues) of the covariances, in the
        solver's units.
    dim : int
        Dimension P of eq. (27): n_features, or the kernel feature space's.
    eigenvalue_ratio : float or None
        Bound on the ratio of the largest to the smallest eigenvalue
        (:func:`~robustclust._core.covariance.constrain_eigenvalues`).
    """

    mixture = True
    #: One covariance common to all components: the compiled common-Sigma pass
    #: (:mod:`~robustclust._core._passes`) serves it.
    shared_covariance = False
    #: EM stops on the objective (see :meth:`Solver.run`), as scikit-learn's
    #: GaussianMixture and mclust do: its means converge linearly and slowly.
    stops_on_objective = True
    #: lam = 0 makes eq. (8) unbounded below (Section II-B): never solve at it.
    zero_lambda_ok = False
    #: A count search restarts each lam from the initialisation: warm starts from
    #: a solution with too few outliers let the common variance grow and a
    #: component absorb outliers.
    cold_count_search = True
    #: the O-step threshold is lam itself: the penalty is handed 2 lam.
    penalty_scale = 2.0
    zero_lambda_message = (
        "lam=0 makes the cost of eq. (8) unbounded below (Section II-B of the "
        "paper): o_n = x_n - m_c with Sigma -> 0; use lam > 0.")

    #: Initial parameters given by the user (internal units), or None.
    start_weights = None
    start_covariance = None

    def __init__(self, n_components, kind, reg_covar, dim, eigenvalue_ratio=None):
        self.n_clusters = n_components
        self.kind = kind
        self.reg_covar = reg_covar
        self.dim = int(dim)
        self.eigenvalue_ratio = eigenvalue_ratio
        self.hard = False

    def mean_sums(self, solver, state):
        """sum_n gamma_nc (x_n - o_n), (C, p): what the means of eq. (23) divide."""
        return solver.geometry.removed_sums(state.memberships, state.outliers, state.centers)

    def mixing_step(self, solver, state):
        """(sum_n gamma_nc, pi, means): eqs. (22)-(23) from the state's posteriors
        and outliers (the counts floored at a tiny value)."""
        xp = solver.xp
        nk = colsum(state.memberships, xp) + _TINY
        return nk, nk / xp.sum(nk), self.mean_sums(solver, state) / nk[:, None]


class MixtureModel(MixtureBase):
    """Robust probabilistic clustering (RPC): Algorithm 2 (linear) and 4 (kernel).

    A Gaussian mixture with one covariance common to all components, of kind
    ``"spherical"`` (the paper's sigma^2 I; the only kind in kernel feature
    spaces), ``"diag"`` or ``"full"``.  Parameters: see :class:`MixtureBase`.
    """

    shared_covariance = True

    # -- pieces ------------------------------------------------------------------------
    def e_step(self, solver, D, weights, cov, sizes, lam, penalty):
        """Posteriors (eq. (20)), per-point log-likelihoods and the cost of eq. (8).

        ``D`` holds the Mahalanobis squared distances ||x_n - o_n - m_c||^2,
        ``sizes`` the outliers' ||o_n||_{Sigma^-1}.
        """
        return self._e_step(solver, D, weights, cov, sizes, lam, penalty)[:3]

    def _e_step(self, solver, D, weights, cov, sizes, lam, penalty):
        """:meth:`e_step`, plus the labels (argmax of the posteriors) when the
        compiled E-step computed them (else None)."""
        xp = solver.xp
        resp, log_norm, labels = posteriors(solver, D, weights, cov.log_det, self.dim)
        total = xp.sum(log_norm)
        cost = -float(total)
        if sizes is not None and sizes.shape[0]:
            values = penalty.value_of_norms(sizes, xp)
            cost += lam * float(xp.sum(values))
        return resp, log_norm, cost, labels

    def distances(self, solver, products, outliers, centers):
        """||x_n - o_n - m_c||^2 in the products' metric, (N, C)."""
        if outliers.count:
            return solver.outlier_distances(products, outliers, centers)
        return products.sq_distances()

    def covariance_step(self, solver, lam, penalty, resp, nk, centers, outliers, D_raw):
        """eq. (26)/(27): exact root (spherical) or the majorized closed form."""
        xp = solver.xp
        N = solver.geometry.n_samples
        lam_n = _outlier_lams(xp, lam, penalty, outliers)
        if self.kind == "spherical":
            trace = float(xp.sum(resp * D_raw))
            a = float(xp.sum(lam_n * outliers.euclidean)) if outliers.count else 0.0
            return self._covariance_of(trace, a, None, N)
        S = solver.geometry.scatter(resp, nk, centers, outliers, lam_n,
                                    outliers.sizes if outliers.count else None)
        return self._covariance_of(None, None, np.asarray(solver.to_host(S), dtype=np.float64),
                                   N)

    def _covariance_of(self, trace, a, S, N):
        """Sigma of eq. (27) (spherical: the root from ``trace`` and the outlier term
        ``a``) or of eq. (26) (diag, full: from the whole scatter ``S``), over N
        points, floored and bounded."""
        P = self.dim
        if self.kind == "spherical":
            h = a / (2.0 * N * P)
            sigma = h + math.sqrt(max(trace, 0.0) / (N * P) + h * h)
            return Covariance("spherical", max(sigma * sigma, self.reg_covar), P)
        if self.kind == "diag":
            return Covariance("diag", bound_covariance("diag", np.diag(S) / N, N, self.reg_covar,
                                                       self.eigenvalue_ratio), P)
        return Covariance.full_step(S / N, N, self.reg_covar, self.eigenvalue_ratio, P)

    # -- the driver's calls ----------------------------------------------------------------
    def iterate(self, solver, state, lam, penalty):
        """One EM iteration (Algorithm 2 / 4)."""
        if worth(solver.geometry.n_samples) and _passes.mixture_eligible(solver, penalty):
            # the same iteration, compiled
            return _passes.mixture_iterate(self, solver, state, lam, penalty)
        geometry = solver.geometry
        resp = state.memberships
        nk, weights, centers = self.mixing_step(solver, state)
        cov_old = state.covariance
        products = geometry.products(centers, cov_old.metric)
        outliers = self.outlier_step(solver, products, cov_old, resp, state.outliers, lam,
                                     penalty)
        if self.kind == "spherical":
            # Euclidean products: the new variance only rescales the distances
            D = self.distances(solver, products, outliers, centers)
            cov = self.covariance_step(solver, lam, penalty, resp, nk, centers, outliers, D)
            D = D * cov.scale
        else:
            cov = self.covariance_step(solver, lam, penalty, resp, nk, centers, outliers, None)
            products = geometry.products(centers, cov.metric)
            D = self.distances(solver, products, outliers, centers)
        return self._state(solver, centers, products, weights, cov, outliers, D, lam, penalty)

    def outlier_step(self, solver, products, cov, resp, prev, lam, penalty):
        """eq. (24)/(25): o_n = r_n [1 - tau_n / ||r_n||_{Sigma^-1}]_+ with tau_n = lam."""
        r2 = products.residual_sq_norms(resp) * cov.scale
        outliers = outlier_step(penalty, self.penalty_scale * lam, r2, resp, prev, solver.xp)
        if cov.kind == "spherical":
            outliers.euclidean = outliers.sizes / math.sqrt(cov.scale)
        return outliers

    def _state(self, solver, centers, products, weights, cov, outliers, D, lam, penalty):
        """The state after an E-step at these parameters (outlier sizes in Sigma's norm)."""
        xp = solver.xp
        if outliers.count:
            outliers = self.with_metric_sizes(solver, products, outliers, cov)
        resp, log_norm, cost, labels = self._e_step(solver, D, weights, cov,
                                                    outliers.sizes if outliers.count else None,
                                                    lam, penalty)
        if labels is None:
            labels = xp.argmax(resp, axis=1)
        return State(centers, products, labels, resp, outliers, -log_norm,
                     cost, weights=weights, covariance=cov)

    def with_metric_sizes(self, solver, products, outliers, cov):
        """The outliers with ``sizes`` = ||o_n|| in the norm of ``cov``."""
        xp = solver.xp
        if xp is np:
            index = outliers.index
            r2 = products.rows(index).residual_sq_norms(outliers.weights) * cov.scale
            sizes = outliers.shrink * np.sqrt(r2)
            sizes_full = np.zeros(products.diag.shape[0])
            sizes_full[index] = sizes
            return replace(outliers, sizes=sizes, sizes_full=sizes_full)
        r2 = products.residual_sq_norms(outliers.weights_full) * cov.scale
        sizes_full = outliers.shrink_full * xp.sqrt(r2)
        return replace(outliers, sizes=take(sizes_full, outliers.index, xp),
                       sizes_full=sizes_full)

    def fixed_centre_step(self, solver, state, centers, products, lam, penalty):
        """O-step then E-step with the parameters of ``state`` held fixed."""
        if worth(solver.geometry.n_samples) and _passes.mixture_eligible(solver, penalty):
            # the same step, compiled
            return _passes.mixture_fixed_step(self, solver, state, centers, products, lam,
                                              penalty)
        cov = state.covariance
        outliers = self.outlier_step(solver, products, cov, state.memberships, state.outliers,
                                     lam, penalty)
        D = self.distances(solver, products, outliers, centers) * cov.scale
        return self._state(solver, centers, products, state.weights, cov, outliers, D, lam,
                           penalty)

    def start(self, solver, centers, products, weights, cov):
        """The state of parameters with O = 0 (E-step)."""
        outliers = no_outliers(solver.geometry.n_samples, solver.xp, like=products.diag)
        D = products.sq_distances() * cov.scale
        return self._state(solver, centers, products, weights, cov, outliers, D, math.inf,
                           solver.penalty)

    def initial_parameters(self, solver, centers, exclude=None):
        """Initial (pi, Sigma) from initial means: a robust nearest-mean partition.

        pi: the proportions of the nearest-mean partition.  Sigma: the scatter
        of the half of the points closest to their mean, times the consistency
        factor 0.5 / F_{chi^2_{P+2}}(median of chi^2_P) that makes it unbiased
        for Gaussian clusters (as in the minimum covariance determinant).  A
        scatter of all points would be inflated by the outliers, and the
        threshold lam sqrt(Sigma) of the first O-steps with it.  ``exclude``
        (bool mask) leaves points out as well.  Returns (products, pi, Sigma).
        """
        xp = solver.xp
        geometry = solver.geometry
        products = geometry.products(centers)
        D = products.sq_distances()
        labels = xp.argmin(D, axis=1)
        d2 = pick(D, labels, xp)
        counts = bincount(labels, xp.ones_like(d2), self.n_clusters, xp)
        weights = (counts + _TINY) / (xp.sum(counts) + _TINY * self.n_clusters)
        n = geometry.n_samples
        d2h = solver.to_host(d2)
        keep = np.ones(n, bool) if exclude is None else ~np.asarray(exclude, dtype=bool)
        keep &= d2h <= np.median(d2h[keep])
        idx = np.flatnonzero(keep)
        count = max(len(idx), 1)
        factor = consistency_factor(self.dim)
        if self.kind == "spherical":
            value = max(factor * float(d2h[idx].sum()) / (count * self.dim), self.reg_covar)
            if value <= 0:  # every kept point on its mean
                value = 1.0
        else:
            idx_x = asarray(idx, xp, like=d2)
            R = solver.to_host(geometry.residual_rows(centers, take(labels, idx_x, xp), idx_x))
            if self.kind == "diag":
                value = bound_covariance("diag", factor * (R * R).sum(0) / count, n,
                                         self.reg_covar, self.eigenvalue_ratio)
            else:
                value = bound_covariance("full", factor * (R.T @ R) / count, n,
                                         self.reg_covar, self.eigenvalue_ratio)
            if np.all(np.asarray(value) <= 0):
                value = np.asarray(value) + 1.0
        if self.start_weights is not None:
            weights = asarray(self.start_weights, xp, like=d2)
        if self.start_covariance is not None:
            return products, weights, self.start_covariance
        return products, weights, Covariance(self.kind, value, self.dim)

    def clean_costs(self, solver, state):
        """Negative log-likelihood of each point with o = 0 at the state's parameters."""
        products = solver.products_of(state)
        D = products.sq_distances() * state.covariance.scale
        _, log_norm, _ = self.e_step(solver, D, state.weights, state.covariance, None,
                                     math.inf, solver.penalty)
        return -log_norm

    def residual_max(self, solver, state):
        """max_n ||r_n||_{Sigma^-1} at ``state``."""
        products = solver.products_of(state)
        r2 = products.residual_sq_norms(state.memberships) * state.covariance.scale
        return math.sqrt(float(solver.xp.max(r2)))

    def lambda_max(self, solver, state):
        """max_n ||r_n||_{Sigma^-1} at a lam = inf fixed point: the O-step threshold
        is lam itself, so just below it one point is flagged."""
        return self.residual_max(solver, state)

    def critical_lambdas(self, solver, state, penalty):
        """lam below which the next O-step flags each point (see Solver.critical_lambdas)."""
        products = solver.products_of(state)
        r = solver.xp.sqrt(products.residual_sq_norms(state.memberships)
                           * state.covariance.scale)
        prev = solver.dense(state.outliers)
        return penalty.critical_lambdas(r, prev.sizes_full) / self.penalty_scale

    def point_scores(self, solver, state):
        """Per-point costs of the trimmed likelihood: -log p(x_n) with o = 0."""
        return self.clean_costs(solver, state)

    # -- an iteration split at its sums over the points (robustclust._core.dask_backend) --
    # The Dask solver runs the steps above on each block of rows and needs, between
    # them, the few quantities that are sums over all the points; these methods give
    # them per block (they add up over any split of the points) and the parameters
    # from their totals, with the formulas of :meth:`iterate`,
    # :meth:`covariance_step` and :meth:`initial_parameters`.
    def state_at(self, solver, centers, weights, cov, outliers, lam, penalty):
        """The state of an E-step at (pi, means, Sigma) and the outliers ``outliers``.

        Every state of a fit is one (:meth:`iterate`, :meth:`fixed_centre_step`,
        :meth:`start` end in it), so it is a function of those parameters and
        the flagged points' records alone.
        """
        products = solver.geometry.products(centers, cov.metric)
        D = self.distances(solver, products, outliers, centers) * cov.scale
        return self._state(solver, centers, products, weights, cov, outliers, D, lam, penalty)

    def mean_statistics(self, solver, state):
        """(sum_n gamma_nc, sum_n gamma_nc (x_n - o_n)): what eqs. (22)-(23) divide."""
        return solver.xp.sum(state.memberships, axis=0), self.mean_sums(solver, state)

    def means_and_weights(self, resp_totals, sums):
        """(means, pi) of eqs. (23), (22) from the totals of :meth:`mean_statistics`."""
        nk = resp_totals + _TINY
        return sums / nk[:, None], nk / nk.sum()

    def covariance_statistics(self, solver, lam, penalty, resp, centers, outliers, D_raw):
        """The sums over the points that the covariance step divides (eq. (26)/(27)).

        Spherical: ``trace`` = sum_n sum_c gamma_nc ||y_n - m_c||^2 (``D_raw``)
        and ``a`` = sum_n lam_n ||o_n||_2; diag and full: ``scatter``, the
        matrix S + sum_n (lam_n / ||o_n||) o_n o_n^T of :meth:`covariance_step`
        with the points' own sum_n gamma_nc.
        """
        xp = solver.xp
        lam_n = _outlier_lams(xp, lam, penalty, outliers)
        if self.kind == "spherical":
            return {"trace": float(xp.sum(resp * D_raw)),
                    "a": float(xp.sum(lam_n * outliers.euclidean)) if outliers.count else 0.0}
        S = solver.geometry.scatter(resp, xp.sum(resp, axis=0), centers, outliers, lam_n,
                                    outliers.sizes if outliers.count else None)
        return {"scatter": np.asarray(solver.to_host(S), dtype=np.float64)}

    def covariance_from_statistics(self, totals, n_samples, centers):
        """Sigma of :meth:`covariance_step` from the totals of :meth:`covariance_statistics`
        over all ``n_samples`` points at the means ``centers``."""
        if self.kind == "spherical":
            return self._covariance_of(totals["trace"], totals["a"], None, n_samples)
        M = np.asarray(centers, dtype=np.float64)
        S = totals["scatter"] + (M.T * _TINY) @ M  # the step's nk carries _TINY
        return self._covariance_of(None, None, S, n_samples)

    def initial_partition(self, solver, centers):
        """The nearest-mean partition of :meth:`initial_parameters`: (labels, d2)."""
        xp = solver.xp
        D = solver.geometry.products(centers).sq_distances()
        labels = xp.argmin(D, axis=1)
        return labels, pick(D, labels, xp)

    def initial_statistics(self, solver, centers, labels, d2, keep):
        """Sums over the points ``keep`` (host bool mask) of :meth:`initial_parameters`'
        Sigma: of d2 (spherical), of the squared residuals (diag) or R^T R (full)."""
        idx = np.flatnonzero(keep)
        if self.kind == "spherical":
            return float(solver.to_host(d2)[idx].sum())
        idx_x = asarray(idx, solver.xp, like=d2)
        R = solver.to_host(solver.geometry.residual_rows(
            centers, take(labels, idx_x, solver.xp), idx_x))
        return (R * R).sum(0) if self.kind == "diag" else R.T @ R

    def initial_from_statistics(self, counts, total, kept):
        """(pi, Sigma) of :meth:`initial_parameters` from the partition's counts and the
        totals of :meth:`initial_statistics` over the ``kept`` points."""
        counts = np.asarray(counts, dtype=np.float64)
        weights = (counts + _TINY) / (np.sum(counts) + _TINY * self.n_clusters)
        count = max(int(kept), 1)
        factor = consistency_factor(self.dim)
        if self.kind == "spherical":
            value = max(factor * float(total) / (count * self.dim), self.reg_covar)
            if value <= 0:
                value = 1.0
        else:
            value = bound_covariance(self.kind, factor * np.asarray(total) / count,
                                     float(np.sum(counts)), self.reg_covar,
                                     self.eigenvalue_ratio)
            if np.all(np.asarray(value) <= 0):
                value = np.asarray(value) + 1.0
        if self.start_weights is not None:
            weights = np.asarray(self.start_weights, dtype=np.float64)
        if self.start_covariance is not None:
            return weights, self.start_covariance
        return weights, Covariance(self.kind, value, self.dim)


def _outlier_lams(xp, lam, penalty, outliers):
    """lam_n of the outliers in the covariance step's majorizer (eqs. (26)-(27)):
    lam, or lam / (||o_n||_{Sigma_old^-1} + eps) for the log penalty; None
    without outliers."""
    if not outliers.count:
        return None
    t0 = outliers.sizes  # ||o_n||_{Sigma_old^-1}
    if penalty.weighted:
        return lam / (t0 + penalty.eps)
    return xp.full(outliers.count, float(lam), device=device(t0))


def posteriors(solver, D, weights, log_det, dim):
    """The E-step (eq. (20)): (posteriors, log-normalisers, labels or None).

    gamma_nc is proportional to pi_c N(x_n; m_c + o_n, Sigma_c), i.e. to
    exp(log pi_c - (dim log 2 pi + log det Sigma_c + D_nc) / 2), for the
    Mahalanobis squared distances ``D`` (N, C) and ``log_det`` a number
    (one Sigma) or one per component (C,).  Any other factor of a point's
    complete-data likelihood (the per-component outlier charge of
    :mod:`robustclust._core.components`) enters as 2 x its minus-log added to D.
    NumPy float64: the compiled kernel (:mod:`robustclust._core._estep`),
    which also returns the labels; other namespaces: array calls, labels None.
    """
    xp = solver.xp
    if _compiled(solver, D):
        if isinstance(log_det, float):  # one Sigma (NumPy's scalar arithmetic costs more)
            offset = dim * _LOG_2PI + log_det
        else:
            offset = dim * _LOG_2PI + np.asarray(solver.to_host(log_det), dtype=np.float64)
        return _estep.e_step(D, np.log(np.asarray(weights, dtype=np.float64)), offset)
    log_w = xp.log(asarray(weights, xp, like=D))
    log_det = asarray(log_det, xp, like=D) if np.ndim(log_det) else float(log_det)
    log_prob = log_w[None, :] - 0.5 * (dim * _LOG_2PI + log_det + D)
    log_norm = logsumexp(log_prob, xp)
    return xp.exp(log_prob - log_norm[:, None]), log_norm, None


def _compiled(solver, A):
    """Whether the compiled row maps serve ``A`` (NumPy float64 (N, C), enough rows)."""
    return solver.xp is np and isinstance(A, np.ndarray) and A.dtype == np.float64 \
        and A.ndim == 2 and worth(A.shape[0])
