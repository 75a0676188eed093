"""The covariance types of the mixtures: what each ``covariance_type`` is, its
model, the shape of its ``covariances_``, and a start's covariance."""

import numpy as np

from .._core.components import ComponentMixtureModel
from .._core.covariance import ComponentCovariances, Covariance
from .._core.models import MixtureModel

#: covariance_type -> (kind of each covariance, one per component?)
COVARIANCE_TYPES = {
    "tied_spherical": ("spherical", False),
    "tied_diag": ("diag", False),
    "tied": ("full", False),
    "spherical": ("spherical", True),
    "diag": ("diag", True),
    "full": ("full", True),
}


#: The eigenvalue-ratio bound of ``eigenvalue_ratio="auto"`` for the per-component
#: types (tclust's ``restr.fact`` default; the tied types are not bounded).
DEFAULT_EIGENVALUE_RATIO = 12.0


def eigenvalue_bound(covariance_type, eigenvalue_ratio):
    """The bound an ``eigenvalue_ratio`` parameter means for a covariance type:
    ``"auto"`` is DEFAULT_EIGENVALUE_RATIO for the per-component types and no
    bound (None) for the tied ones; a number or None is itself."""
    if isinstance(eigenvalue_ratio, str) and eigenvalue_ratio == "auto":
        return DEFAULT_EIGENVALUE_RATIO if COVARIANCE_TYPES[covariance_type][1] else None
    return eigenvalue_ratio


def make_mixture_model(covariance_type, n_components, reg_covar, dim, eigenvalue_ratio=None):
    """The model of a ``covariance_type``: common (tied_*) or per-component covariances;
    ``eigenvalue_ratio`` as the estimators' parameter (:func:`eigenvalue_bound`)."""
    eigenvalue_ratio = eigenvalue_bound(covariance_type, eigenvalue_ratio)
    kind, per_component = COVARIANCE_TYPES[covariance_type]
    if per_component:
        return ComponentMixtureModel(n_components, kind, reg_covar, dim, eigenvalue_ratio)
    return MixtureModel(n_components, kind, reg_covar, dim, eigenvalue_ratio)


def covariance_shape(covariance_type, n_components, n_features):
    """Shape of ``covariances_`` (and of ``init["precisions"]``) for a covariance type."""
    k, p = n_components, n_features
    return {"tied_spherical": (), "tied_diag": (p,), "tied": (p, p), "spherical": (k,),
            "diag": (k, p), "full": (k, p, p)}[covariance_type]


def start_covariance(precisions, covariance_type, scale, dim):
    """The covariance object of checked ``init["precisions"]`` in internal units (X / scale)."""
    kind, per_component = COVARIANCE_TYPES[covariance_type]
    if kind == "full":
        P = np.asarray(precisions).reshape(-1, dim, dim)
        values = np.array([np.linalg.inv(m) for m in P])
        values = (values + np.swapaxes(values, 1, 2)) / 2
        values = values if per_component else values[0]
    else:
        values = 1.0 / np.asarray(precisions, dtype=np.float64)
    values = values / (scale * scale)
    if per_component:
        return ComponentCovariances(kind, values, dim)
    return Covariance(kind, values, dim)
