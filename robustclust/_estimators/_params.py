"""Parameter names shared by the estimators, and the deprecation of the old ones.

The estimators' constructors take only the current names.  A name of an
earlier release is still accepted for one release: the constructor (and
``set_params``) translates it to the current parameters and raises a
``FutureWarning`` that says what to write instead, as scikit-learn's
deprecation cycle does.  Model files written with the old names load
without a warning (:func:`translate_params`).

The translations, one function per old name (``value, params -> updates``):

==================  ===============================================================
old                 new
==================  ===============================================================
``q``               ``fuzzifier``
``weighted``        ``penalty="log"`` (``"log-elementwise"`` with the entry-wise one)
``default_rule``    ``lam="chi2"`` for ``"chi2"``; ``"noise"`` is the default
``means_init``      ``init={"means": ...}`` (mixtures)
``weights_init``    ``init={..., "weights": ...}`` (mixtures)
``precisions_init`` ``init={..., "precisions": ...}`` (mixtures)
``gamma``,          ``kernel_params={"gamma": ...}`` (kernel estimators; likewise
``degree``,         ``degree``, ``coef0`` and ``psd_shift``)
``coef0``,
``psd_shift``
``approximation``   ``n_landmarks=m`` (``"nystroem"``: m = 100, or the given
                    ``n_landmarks``); ``"exact"`` / None: ``n_landmarks=None``
==================  ===============================================================
"""

import warnings

#: penalty parameter -> (the penalty rho, whether its log variant is used).
PENALTIES = {
    "group": ("group", False),
    "elementwise": ("elementwise", False),
    "log": ("group", True),
    "log-elementwise": ("elementwise", True),
}

#: Landmarks of ``approximation="nystroem"`` in the earlier release.
OLD_DEFAULT_LANDMARKS = 100


def penalty_name(rho, log):
    """The ``penalty`` value of the penalty ``rho`` ("group"/"elementwise"), log or not."""
    return {v: k for k, v in PENALTIES.items()}[(rho, bool(log))]


def _weighted(value, params):
    rho = PENALTIES.get(params.get("penalty", "group"), ("group", False))[0]
    return {"penalty": penalty_name(rho, value)}


def _default_rule(value, params):
    # the rule applied only to fits given neither lam nor n_outliers
    given = params.get("lam") is not None or params.get("n_outliers") is not None
    return {"lam": "chi2"} if value == "chi2" and not given else {}


def _init_part(key):
    def translate(value, params):
        if value is None:
            return {}
        init = params.get("init")
        if key == "means" and not isinstance(init, dict):
            return {"init": value}  # given means override a start's name
        parts = dict(init) if isinstance(init, dict) else {}
        if init is not None and not isinstance(init, dict):
            parts["means"] = init  # a start's name or an array of means given as init
        parts[key] = value
        return {"init": parts}
    return translate


#: The defaults of the kernel parameters in the earlier release.
_OLD_KERNEL_DEFAULTS = {"gamma": None, "degree": 3, "coef0": 1.0, "psd_shift": False}


def _kernel_param(key):
    def translate(value, params):
        if value == _OLD_KERNEL_DEFAULTS[key] and type(value) is type(
                _OLD_KERNEL_DEFAULTS[key]):
            return {}  # the default: nothing to set
        kernel_params = dict(params.get("kernel_params") or {})
        kernel_params[key] = value
        return {"kernel_params": kernel_params}
    return translate


def _approximation(value, params):
    if value in (None, "exact"):
        return {"n_landmarks": None}
    return {"n_landmarks": params.get("n_landmarks") or OLD_DEFAULT_LANDMARKS}


#: old name -> (translation, what to write instead)
RENAMED = {
    "q": (lambda value, params: {"fuzzifier": value}, "{updates}"),
    "weighted": (_weighted, "{updates}"),
    "default_rule": (_default_rule, "{updates}"),
    "means_init": (_init_part("means"), "init={{'means': ...}}"),
    "weights_init": (_init_part("weights"), "init={{'means': ..., 'weights': ...}}"),
    "precisions_init": (_init_part("precisions"),
                        "init={{'means': ..., 'precisions': ...}}"),
    "gamma": (_kernel_param("gamma"), "kernel_params={{'gamma': {value!r}}}"),
    "degree": (_kernel_param("degree"), "kernel_params={{'degree': {value!r}}}"),
    "coef0": (_kernel_param("coef0"), "kernel_params={{'coef0': {value!r}}}"),
    "psd_shift": (_kernel_param("psd_shift"), "kernel_params={{'psd_shift': {value!r}}}"),
    "approximation": (_approximation, "{updates} (the number of Nystroem landmarks; None "
                                      "for the exact kernel)"),
}


def translate_params(cls, params, old, warn=True, stacklevel=4):
    """``params`` (current names) updated with the old-named ``old`` of class ``cls``.

    Raises TypeError for a name that is neither current nor an old name of
    ``cls`` (as a constructor does for an unknown keyword).  With ``warn``,
    one ``FutureWarning`` per old name says what to write instead.
    """
    params = dict(params)
    allowed = getattr(cls, "_renamed_params", ())
    for name, value in old.items():
        if name not in allowed:
            raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument "
                            f"{name!r}")
        translate, advice = RENAMED[name]
        updates = translate(value, params)
        if warn:
            written = ", ".join(f"{key}={new!r}" for key, new in updates.items())
            instead = (f"write {advice.format(value=value, updates=written)} instead" if written
                       else "leave it out: its value is the default")
            warnings.warn(
                f"{cls.__name__}: {name!r} is deprecated and will be removed in the next "
                f"release; {instead}.", FutureWarning, stacklevel=stacklevel)
        params.update(updates)
    return params
