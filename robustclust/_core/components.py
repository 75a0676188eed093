"""The robust mixture with one covariance per component (RPC generalized).

The paper's RPC (Algorithm 2) has one covariance Sigma common to all
components (:class:`~robustclust._core.models.MixtureModel`).
:class:`ComponentMixtureModel` gives component c its own Sigma_c (kind
``"spherical"`` sigma_c^2 I, ``"diag"`` or ``"full"``, scikit-learn's
meanings), with precisions Lambda_c = Sigma_c^-1.

The cost (eq. (8) generalized)
------------------------------
With per-component covariances the penalty must say in whose units ||o_n||
is measured.  Each component charges an outlier vector in its own
Mahalanobis norm, t_nc = ||o_n||_{Lambda_c}, as a factor of its density:

    F = - sum_n log sum_c pi_c N(x_n; m_c + o_n, Sigma_c) exp(-lam rho(t_nc)),

rho(t) = t (or log(1 + t / eps), the log penalty of Section III-C).  For an
inlier (o_n = 0) the factor is 1; when all Sigma_c equal Sigma it leaves the
sum and F is eq. (8), - L + lam sum_n rho(||o_n||_{Sigma^-1}).  For a point
of one component the O-step below flags it when its residual is more than
lam standard deviations of that component away, so lam keeps the scale-free
meaning (and the default lam = sqrt(chi^2_p quantile(0.999))) it has in the
common-covariance model.  A norm fixed for all components (Euclidean in
standardized units, or an average precision) would instead measure a tight
component's points in a broad component's units and the converse, so that
lam meant a different number of standard deviations in each component.

EM (eqs. (17)-(21)) applies unchanged: for u_n = e_c the complete-data cost
is -log pi_c - log N(x_n; m_c + o_n, Sigma_c) + lam rho(t_nc), and

* E-step (eq. (20)): gamma_nc proportional to
  pi_c N(x_n; m_c + o_n, Sigma_c) exp(-lam rho(t_nc)): the exact posterior
  of this cost (a flagged point leans towards the component in whose metric
  its o_n is smallest);
* mixing weights and means: eqs. (22) and (23) as they are;
* O-step (eq. (24) generalized), per point, with lam_nc = lam (or the MM
  weight lam / (t_nc^prev + eps) of eq. (30) for the log penalty):

      h_n(o) = sum_c gamma_nc [1/2 ||x_n - o - m_c||^2_{Lambda_c} + lam_nc ||o||_{Lambda_c}].

  With A_n = sum_c gamma_nc Lambda_c and
  r_n = A_n^-1 sum_c gamma_nc Lambda_c (x_n - m_c), the quadratic part is
  1/2 ||o - r_n||^2_{A_n} + const: a group lasso with a general quadratic,
  and a sum of norms in C metrics, with no closed form.  By Cauchy-Schwarz

      sum_c gamma_nc lam_nc ||o||_{Lambda_c} <= tau_n ||o||_{A_n},
      tau_n^2 = sum_c gamma_nc lam_nc^2,

  with equality at o = 0, so from o_n^prev = 0 the step

      o_n = r_n [1 - tau_n / ||r_n||_{A_n}]_+

  minimizes a majorizer of h_n that touches it at 0: h_n(o_n) <= h_n(0).
  When all Lambda_c equal Lambda, A_n = Lambda, r_n is the common-covariance
  residual, tau_n = lam and the bound is an equality everywhere: the step is
  then exactly eq. (25) in whitened coordinates (the tied model's O-step).
  From o_n^prev != 0 the bound ||o||_c <= (||o||_c^2 + t_c^2) / (2 t_c),
  t_c = ||o_n^prev||_{Lambda_c}, touches h_n at o_n^prev; its minimizer

      o_I = (A_n + sum_c gamma_nc lam_nc Lambda_c / t_c)^-1 A_n r_n

  (an IRLS step) has h_n(o_I) <= h_n(o_n^prev).  The step keeps the best by
  h_n of o_I, the shrinkage above and 0: it never increases h_n, lets a
  point return to 0 (which IRLS alone never reaches), and is the tied step
  when the precisions are equal.  ||r_n||^2_{A_n} needs no second pass over
  the data: it is sum_c gamma_nc (D_nc - q_c) + g_n^T A_n^-1 g_n with
  D_nc = ||x_n - m_c||^2_{Lambda_c}, q_c = ||m_c||^2_{Lambda_c} and
  g_n = sum_c gamma_nc Lambda_c m_c, a p x p solve per point for "full".
* Sigma-step (eq. (26) for each component): Sigma_c minimizes
  1/2 sum_n gamma_nc ||y_n - m_c||^2_{Lambda_c} + N_c / 2 log det Sigma_c
  + sum_n gamma_nc lam_nc ||o_n||_{Lambda_c} (y_n = x_n - o_n,
  N_c = sum_n gamma_nc), which is the common-covariance step with weights
  gamma_nc: spherical, the exact root of eq. (27) with N_c in place of N,
  sigma_c = h_c + sqrt(h_c^2 + S_c / (N_c p)),
  h_c = sum_n gamma_nc lam_nc ||o_n||_2 / (2 N_c p); diag and full, sqrt
  majorized at the current Sigma_c (see :mod:`robustclust._core.models`),
  B_c = S_c + sum_n gamma_nc (lam_nc / t_nc) o_n o_n^T and Sigma_c = B_c / N_c
  (its diagonal for "diag").  ``reg_covar`` floors every eigenvalue and
  ``eigenvalue_ratio`` bounds the ratio of the largest to the smallest over
  all components (tclust's restr.fact), both as exact minimizers over their
  constraint sets (:func:`~robustclust._core.covariance.constrain_eigenvalues`).

Each step minimizes, or minimizes a majorizer of, its block of the EM bound
(eq. (28) with these terms), so F never increases.  At lam = inf no point is
flagged and the iterations are scikit-learn's GaussianMixture EM for the same
covariance type (with ``reg_covar`` a floor on the eigenvalues rather than a
ridge added to them).
"""

import math

import numpy as np

from .backend import (
    asarray,
    device,
    float64,
    flatnonzero,
    maximum,
    rowdot,
    set_masked_rows,
    take,
    where,
)
from .covariance import (ComponentCovariances, consistency_factor, constrain_eigenvalues,
                         factorable_floor)
from .geometry import row_sq_distances, row_sq_norms
from .models import _TINY, MixtureBase, MixtureModel, posteriors
from .state import Outliers, State, no_outliers

#: Rows of the per-point p x p solves done at once ("full").
CHUNK_ROWS = 4096


# -- the precision-weighted quadratic of the O-step: A_n = sum_c w_nc Lambda_c ------------
class _Precisions:
    """The precisions of a :class:`ComponentCovariances` in the data's namespace."""

    def __init__(self, covs, xp, like):
        self.kind = covs.kind
        self.xp = xp
        lam = covs.precisions()
        C = lam.shape[0]
        self.flat = asarray(lam.reshape(C, -1), xp, like=like)  # (C,), (C, p) or (C, p*p)
        if self.kind == "spherical":
            self.flat = asarray(lam, xp, like=like)
        self.dim = covs.dim

    def weighted(self, W):
        """A_n = sum_c W_nc Lambda_c: (k,), (k, p) or (k, p, p)."""
        A = W @ self.flat
        if self.kind == "full":
            A = self.xp.reshape(A, (W.shape[0], self.dim, self.dim))
        return A

    def apply(self, A, V):
        """A_n v_n for rows V (k, p)."""
        if self.kind == "spherical":
            return A[:, None] * V
        if self.kind == "diag":
            return A * V
        return (A @ V[:, :, None])[:, :, 0]

    def solve(self, A, V):
        """A_n^-1 v_n for rows V (k, p)."""
        if self.kind == "spherical":
            return V / A[:, None]
        if self.kind == "diag":
            return V / A
        return self.xp.linalg.solve(A, V[:, :, None])[:, :, 0]

    def times_centres(self, M):
        """Lambda_c m_c, (C, p)."""
        xp = self.xp
        if self.kind == "spherical":
            return self.flat[:, None] * M
        if self.kind == "diag":
            return self.flat * M
        C, p = M.shape
        L = xp.reshape(self.flat, (C, p, p))
        return (L @ M[:, :, None])[:, :, 0]


class ComponentMixtureModel(MixtureBase):
    """Robust Gaussian mixture with one covariance per component (see the module notes).

    Parameters: see :class:`~robustclust._core.models.MixtureBase` (``reg_covar``
    floors every eigenvalue of every Sigma_c, ``eigenvalue_ratio`` bounds max /
    min eigenvalue over all components, ``dim`` is p).
    """

    # -- E-step ----------------------------------------------------------------------------
    def e_step(self, solver, D, weights, covs, outliers, lam, penalty):
        """Posteriors, per-point log-likelihoods and the cost F (module notes).

        ``D`` holds ||x_n - o_n - m_c||^2_{Lambda_c}; the outliers' factors
        exp(-lam rho(t_nc)) enter on their k rows (as 2 lam rho(t_nc) added
        to D).
        """
        return self._e_step(solver, D, weights, covs, outliers, lam, penalty)[:3]

    def _e_step(self, solver, D, weights, covs, outliers, lam, penalty):
        """:meth:`e_step`, plus the labels when the compiled E-step gave them."""
        xp = solver.xp
        if outliers is not None and outliers.count:
            charged = take(D, outliers.index, xp) \
                + 2.0 * lam * penalty.value_of_norms(outliers.component_sizes, xp)
            if xp is np:
                D = D.copy()
                D[outliers.index] = charged
            else:  # the standard scatters by a boolean mask (rows in index order)
                D = set_masked_rows(D, outliers.flagged_full, charged, xp)
        resp, log_norm, labels = posteriors(solver, D, weights, covs.log_det, self.dim)
        return resp, log_norm, -float(xp.sum(log_norm)), labels

    def _state(self, solver, centers, weights, covs, outliers, lam, penalty):
        """The state after an E-step at these parameters (outlier sizes in their norms)."""
        xp = solver.xp
        g = solver.geometry
        if outliers.count:
            rows = g.outlier_rows(outliers, centers)
            outliers.component_sizes = _sizes(rows, covs, xp)
        D = g.component_sq_distances(centers, covs, outliers)
        resp, log_norm, cost, labels = self._e_step(solver, D, weights, covs, outliers, lam,
                                                    penalty)
        if outliers.count:
            outliers.sizes = xp.sum(take(resp, outliers.index, xp) * outliers.component_sizes,
                                    axis=1)
            outliers.sizes_full = _scatter(outliers, outliers.sizes, g.n_samples, xp, like=D)
        if labels is None:
            labels = xp.argmax(resp, axis=1)
        return State(centers, None, labels, resp, outliers, -log_norm, cost,
                     weights=weights, covariance=covs)

    # -- O-step ----------------------------------------------------------------------------
    def residual_sq_norms(self, solver, D0, W, centers, covs):
        """||r_n||^2_{A_n} of every point (module notes), from D0 = ||x_n - m_c||^2_c."""
        xp = solver.xp
        M = _float64(centers, xp)
        prec = _Precisions(covs, xp, like=D0)
        LM = prec.times_centres(M)                        # Lambda_c m_c
        q = xp.sum(LM * M, axis=1)                        # ||m_c||^2_c
        first = xp.sum(W * (D0 - q[None, :]), axis=1)
        G = W @ LM                                        # g_n
        n = W.shape[0]
        if covs.kind != "full":
            quad = rowdot(G, prec.solve(prec.weighted(W), G), xp)
        else:  # a p x p solve per point, a block of rows at a time
            parts = []
            for start in range(0, n, CHUNK_ROWS):
                stop = min(start + CHUNK_ROWS, n)
                Wc, Gc = W[start:stop, :], G[start:stop, :]
                parts.append(rowdot(Gc, prec.solve(prec.weighted(Wc), Gc), xp))
            quad = parts[0] if len(parts) == 1 else xp.concat(parts)
        return maximum(first + quad, 0.0, xp)

    def _penalty_weights(self, lam, penalty, sizes):
        """lam_nc of the O-step: lam, or lam / (t_nc + eps) for the log penalty (eq. (30))."""
        if penalty.weighted:
            return lam / (sizes + penalty.eps)
        return lam + 0.0 * sizes

    def outlier_step(self, solver, centers, covs, resp, prev, lam, penalty):
        """eq. (24) generalized: the majorized step of the module notes, every point."""
        xp = solver.xp
        g = solver.geometry
        n = g.n_samples
        M = _float64(centers, xp)
        if not math.isfinite(lam):
            return no_outliers(n, xp, like=resp)
        D0 = g.component_sq_distances(M, covs)
        base = lam / penalty.eps if penalty.weighted else lam
        before = _flagged(prev, xp) if prev.count else None
        tau = _full_thresholds(self, lam, penalty, prev, resp, base, n, xp, like=D0)
        # ||r_n||^2_{A_n} <= sum_c gamma_nc D_nc (module notes): a point below its
        # threshold there stays at 0, and only the others need the p x p solve
        candidate = xp.sum(resp * D0, axis=1) > tau * tau
        if before is not None:
            candidate = candidate | before
        cand = flatnonzero(candidate, xp)
        if cand.shape[0] == 0:
            return no_outliers(n, xp, like=resp)
        r2 = self.residual_sq_norms(solver, take(D0, cand, xp), take(resp, cand, xp), M, covs)
        tau_c = take(tau, cand, xp)
        norms = xp.sqrt(r2)
        shrink = where(r2 > tau_c * tau_c, 1.0 - tau_c / where(norms > 0, norms, 1.0, xp),
                       0.0, xp)
        keep_c = shrink > 0
        if before is not None:
            keep_c = keep_c | take(before, cand, xp)
        pos = flatnonzero(keep_c, xp)
        if pos.shape[0] == 0:
            return no_outliers(n, xp, like=resp)
        index = take(cand, pos, xp)
        if xp is np:
            index = index.astype(np.intp, copy=False)
            keep = None
        else:  # the points with a row, as a mask (the standard's scatter)
            keep = set_masked_rows(candidate, candidate, keep_c, xp)
        shrink = take(shrink, pos, xp)
        prec = _Precisions(covs, xp, like=D0)
        Wk = take(resp, index, xp)
        Xk = g.points(index)
        A = prec.weighted(Wk)
        R = Xk - prec.solve(A, Wk @ prec.times_centres(M))   # r_n
        O = shrink[:, None] * R                               # the shrinkage step
        if prev.count:
            O = self._improve(solver, prev, index, take(before, index, xp), O, R, Xk, Wk, A,
                              M, covs, prec, lam, penalty)
        nonzero = xp.any(O != 0, axis=1)
        if not bool(xp.all(nonzero)):
            keep = set_masked_rows(keep, keep, nonzero, xp) if xp is not np else None
            pos = flatnonzero(nonzero, xp)
            index, O, Wk = take(index, pos, xp), take(O, pos, xp), take(Wk, pos, xp)
            if index.shape[0] == 0:
                return no_outliers(n, xp, like=resp)
        if xp is np:
            keep = np.zeros(n, dtype=bool)
            keep[index] = True
        T = _sizes(O, covs, xp)
        out = Outliers(index, shrink=None, weights=Wk, sizes=xp.sum(Wk * T, axis=1), rows=O,
                       euclidean=xp.sqrt(rowdot(O, O, xp)), weights_full=resp,
                       component_sizes=T, flagged_full=keep)
        out.sizes_full = _scatter(out, out.sizes, n, xp, like=D0)
        return out

    def _improve(self, solver, prev, index, before, O, R, Xk, Wk, A, M, covs, prec, lam,
                 penalty):
        """Rows of points flagged before: the best by h_n of o_I, the shrinkage, and 0.

        ``before`` marks those points among the rows ``index``.
        """
        xp = solver.xp
        pos = flatnonzero(before, xp)
        T_prev = prev.component_sizes
        W_p = take(Wk, pos, xp)
        lam_c = self._penalty_weights(lam, penalty, T_prev)
        # o_I = (A + sum_c gamma lam_c Lambda_c / t_c)^-1 A r
        O_irls = prec.solve(prec.weighted(W_p + W_p * lam_c / T_prev),
                            prec.apply(take(A, pos, xp), take(R, pos, xp)))
        Y = take(Xk, pos, xp)

        def cost(o):
            quad = 0.5 * xp.sum(W_p * row_sq_distances(Y - o, M, covs, xp), axis=1)
            return quad + xp.sum(W_p * lam_c * _sizes(o, covs, xp), axis=1)

        O_shrink = take(O, pos, xp)
        h_shrink, h_irls = cost(O_shrink), cost(O_irls)
        h_zero = cost(xp.zeros_like(O_shrink))
        # the shrinkage unless IRLS is clearly better (equal precisions: the tied step)
        slack = 1e-12 * xp.abs(h_shrink)
        best = where((h_irls < h_shrink - slack)[:, None], O_irls, O_shrink, xp)
        best = where((h_zero <= xp.minimum(h_shrink, h_irls))[:, None], 0.0, best, xp)
        if xp is np:
            O = O.copy()
            O[pos] = best
            return O
        return set_masked_rows(O, before, best, xp)

    # -- Sigma-step --------------------------------------------------------------------------
    def covariance_step(self, solver, lam, penalty, resp, nk, centers, outliers):
        """eq. (26) per component (module notes), floored and ratio-bounded."""
        xp = solver.xp
        g = solver.geometry
        host = solver.to_host
        nk_h = np.asarray(host(nk), dtype=np.float64)
        kind = self.kind
        if kind == "full":
            S = np.asarray(host(g.component_scatter(resp, nk, centers, outliers)),
                           dtype=np.float64)
        else:
            S = np.asarray(host(g.component_scatter_diag(resp, nk, centers, outliers)),
                           dtype=np.float64)
        a = None
        if outliers.count and math.isfinite(lam):
            T = np.asarray(host(outliers.component_sizes), dtype=np.float64)
            Wk = np.asarray(host(take(resp, outliers.index, xp)), dtype=np.float64)
            O = np.asarray(host(outliers.rows), dtype=np.float64)
            lam_c = self._penalty_weights(lam, penalty, T)
            if kind == "spherical":
                a = (Wk * lam_c * np.sqrt(np.einsum("ij,ij->i", O, O))[:, None]).sum(0)
            else:
                coef = Wk * lam_c / T
                if kind == "full":
                    S = S + np.einsum("kc,ki,kj->cij", coef, O, O)
                else:
                    S = S + coef.T @ (O * O)
        return self.covariances_from_scatter(S, nk_h, a)

    def covariances_from_scatter(self, S, nk, a=None):
        """Sigma_c of eq. (26) from the components' scatters, floored and ratio-bounded.

        ``S``: sum_n gamma_nc (y_n - m_c)(y_n - m_c)^T per component, (C, p, p)
        for "full", its diagonal (C, p) for "diag" and "spherical" (plus the
        majorizer's outlier term); ``nk``: N_c, (C,); ``a``: the linear
        outlier term of eq. (27) per component (spherical; None for none).
        The exact minimizer over the floor and the eigenvalue-ratio bound
        (:func:`~robustclust._core.covariance.constrain_eigenvalues`); the
        EM step and the trimmed refinement
        (:mod:`robustclust._core.trimmed_mixture`) both end in it.
        """
        p = self.dim
        ratio = self.eigenvalue_ratio
        nk_h = np.asarray(nk, dtype=np.float64)
        if self.kind == "spherical":
            trace = S.sum(axis=1)
            values = constrain_eigenvalues(nk_h * p, trace / (nk_h * p), a,
                                           self.reg_covar, ratio)
        elif self.kind == "diag":
            values = constrain_eigenvalues(nk_h[:, None], S / nk_h[:, None], None,
                                           self.reg_covar, ratio)
        else:
            B = S / nk_h[:, None, None]
            vals, vecs = np.linalg.eigh((B + np.swapaxes(B, 1, 2)) / 2)
            vals = constrain_eigenvalues(nk_h[:, None], vals, None,
                                         factorable_floor(vals, self.reg_covar), ratio)
            values = np.einsum("cij,cj,ckj->cik", vecs, vals, vecs)
        return ComponentCovariances(self.kind, values, p)

    def constrain(self, covs, weights_host, n):
        """Covariances clipped onto the floor and eigenvalue-ratio constraints.

        For an initial value: each component counts as weights_c n points,
        as in a covariance step.
        """
        counts = np.maximum(np.asarray(weights_host, dtype=np.float64) * n, _TINY)
        value = covs.value
        ratio = self.eigenvalue_ratio
        if covs.kind == "full":
            vals, vecs = np.linalg.eigh((value + np.swapaxes(value, 1, 2)) / 2)
            vals = constrain_eigenvalues(counts[:, None], vals, None, self.reg_covar, ratio)
            value = np.einsum("cij,cj,ckj->cik", vecs, vals, vecs)
        elif covs.kind == "diag":
            value = constrain_eigenvalues(counts[:, None], value, None, self.reg_covar, ratio)
        else:
            value = constrain_eigenvalues(counts * self.dim, value, None, self.reg_covar, ratio)
        if np.all(np.asarray(value) <= 0):  # every kept point on its mean, no floor
            value = np.asarray(value) + 1.0
        return ComponentCovariances(covs.kind, value, covs.dim)

    # -- the driver's calls ----------------------------------------------------------------
    def iterate(self, solver, state, lam, penalty):
        """One EM iteration: pi and means, O-step (previous Sigma_c), Sigma-step, E-step."""
        resp = state.memberships
        nk, weights, centers = self.mixing_step(solver, state)
        outliers = self.outlier_step(solver, centers, state.covariance, resp, state.outliers,
                                     lam, penalty)
        covs = self.covariance_step(solver, lam, penalty, resp, nk, centers, outliers)
        return self._state(solver, centers, weights, covs, outliers, lam, penalty)

    def fixed_centre_step(self, solver, state, centers, products, lam, penalty):
        """O-step then E-step with the parameters of ``state`` held fixed."""
        covs = state.covariance
        outliers = self.outlier_step(solver, centers, covs, state.memberships, state.outliers,
                                     lam, penalty)
        return self._state(solver, centers, state.weights, covs, outliers, lam, penalty)

    def start(self, solver, centers, products, weights, covs):
        """The state of parameters with O = 0 (E-step)."""
        outliers = no_outliers(solver.geometry.n_samples, solver.xp,
                               like=solver.geometry.sq_norms)
        return self._state(solver, centers, weights, covs, outliers, math.inf, solver.penalty)

    def initial_parameters(self, solver, centers, exclude=None):
        """Initial (pi, Sigma_c) from initial means: a robust nearest-mean partition.

        pi: the proportions of the nearest-mean partition, as in
        :meth:`MixtureModel.initial_parameters`.  Sigma_c: the scatter of the
        half of component c's points closest to its mean, times the
        consistency factor that makes it unbiased for a Gaussian cluster
        (the common start's rule, per component: the scatter of the closest
        half of all points would come from the tightest clusters only).  A
        component with fewer than p + 1 such points (2 for the spherical and
        diagonal kinds) starts from the common start's covariance.
        ``exclude`` (bool mask) leaves points out.  Parameters the user gave
        (``start_weights``, ``start_covariance``) replace these.  Returns
        (None, pi, ComponentCovariances).
        """
        xp = solver.xp
        g = solver.geometry
        pooled = MixtureModel(self.n_clusters, self.kind, self.reg_covar, self.dim)
        products, weights, cov = pooled.initial_parameters(solver, centers, exclude)
        if self.start_weights is not None:
            weights = asarray(self.start_weights, xp, like=g.sq_norms)
        if self.start_covariance is not None:
            return None, weights, self.start_covariance
        D = products.sq_distances()
        labels = np.asarray(solver.to_host(xp.argmin(D, axis=1)))
        d2 = np.min(np.asarray(solver.to_host(D)), axis=1)
        keep = np.ones(g.n_samples, bool) if exclude is None else ~np.asarray(exclude, bool)
        factor = consistency_factor(self.dim)
        least = self.dim + 1 if self.kind == "full" else 2
        M = np.asarray(solver.to_host(_float64(centers, xp)))
        values = []
        for c in range(self.n_clusters):
            members = np.flatnonzero(keep & (labels == c))
            if len(members) >= 2:
                members = members[d2[members] <= np.median(d2[members])]
            if len(members) < least:
                values.append(np.asarray(cov.value, dtype=np.float64))
                continue
            rows = g.points(asarray(members, xp, like=g.sq_norms))
            R = np.asarray(solver.to_host(rows)) - M[c]
            if self.kind == "spherical":
                value = factor * float((R * R).sum()) / (len(members) * self.dim)
            elif self.kind == "diag":
                value = factor * (R * R).sum(0) / len(members)
            else:
                value = factor * (R.T @ R) / len(members)
            values.append(value)
        covs = ComponentCovariances(self.kind, np.array(values, dtype=np.float64), self.dim,
                                    check=False)
        covs = self.constrain(covs, solver.to_host(weights), g.n_samples)
        return None, weights, covs

    def clean_costs(self, solver, state):
        """Negative log-likelihood of each point with o = 0 at the state's parameters."""
        D = solver.geometry.component_sq_distances(state.centers, state.covariance)
        _, log_norm, _ = self.e_step(solver, D, state.weights, state.covariance, None,
                                     math.inf, solver.penalty)
        return -log_norm

    def _residual_norms(self, solver, state):
        D0 = solver.geometry.component_sq_distances(state.centers, state.covariance)
        return solver.xp.sqrt(self.residual_sq_norms(solver, D0, state.memberships,
                                                     state.centers, state.covariance))

    def residual_max(self, solver, state):
        """max_n ||r_n||_{A_n} at ``state``."""
        return float(solver.xp.max(self._residual_norms(solver, state)))

    def lambda_max(self, solver, state):
        """max_n ||r_n||_{A_n} at a lam = inf fixed point: from O = 0 a point is
        flagged iff ||r_n||_{A_n} > lam."""
        return self.residual_max(solver, state)

    def critical_lambdas(self, solver, state, penalty):
        """lam below which the next O-step flags each point (exact from o = 0).

        ||r_n||_{A_n} / (tau_n / lam), with tau_n of the module notes at the
        state's outliers (for a point flagged before, the shrinkage rule only:
        the step may keep it through the IRLS candidate).
        """
        xp = solver.xp
        r = self._residual_norms(solver, state)
        n = r.shape[0]
        base = 1.0 / penalty.eps if penalty.weighted else 1.0
        tau = _full_thresholds(self, 1.0, penalty, state.outliers, state.memberships, base, n,
                               xp, like=r)
        return r / tau

    def point_scores(self, solver, state):
        """Per-point costs of the trimmed likelihood: -log p(x_n) with o = 0."""
        return self.clean_costs(solver, state)


def _full_thresholds(model, lam, penalty, prev, resp, base, n, xp, like):
    """tau_n of every point: ``base`` (lam, or lam / eps) for points with o = 0 before;
    sqrt(sum_c gamma_nc lam_nc^2) for points flagged before (the log penalty's
    weights differ by component)."""
    tau = xp.full(n, float(base), dtype=float64(xp), device=device(like))
    if not penalty.weighted or prev is None or not prev.count:
        return tau
    lam_c = model._penalty_weights(lam, penalty, prev.component_sizes)
    W = take(resp, prev.index, xp)
    tau_prev = xp.sqrt(xp.sum(W * lam_c * lam_c, axis=1))
    if xp is np:
        tau[prev.index] = tau_prev
        return tau
    return set_masked_rows(tau, _flagged(prev, xp), tau_prev, xp)


def _flagged(outliers, xp):
    """The bool mask of the points with a row in ``outliers``, (N,)."""
    if outliers.flagged_full is not None:
        return outliers.flagged_full
    return outliers.sizes_full > 0


def _scatter(outliers, values, n, xp, like):
    """A length-n vector with ``values`` on the outliers' rows, 0 elsewhere."""
    if xp is np:
        out = np.zeros(n)
        out[outliers.index] = values
        return out
    zeros = xp.zeros(n, dtype=xp.float64, device=device(like))
    return set_masked_rows(zeros, _flagged(outliers, xp), values, xp)


def _sizes(rows, covs, xp):
    """||o_k||_{Lambda_c} of outlier rows in every component's norm, (k, C)."""
    return xp.sqrt(maximum(row_sq_norms(rows, covs, xp), 0.0, xp))


def _float64(centers, xp):
    return asarray(centers, xp, like=centers, dtype=float64(xp))
