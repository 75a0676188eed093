"""The options of the commands: parameter types, shared option groups, their checks.

Limits on counts that only cost time or memory (``--n-init``,
``--n-lambdas``, ``--n-landmarks``) are usage errors beyond values no run
needs, rather than runs that grow without a word.
"""

import math
from dataclasses import dataclass

import click

from ._errors import DataError, count
from ._models import (
    APPROXIMATIONS,
    COVARIANCES,
    INITS,
    KERNEL_PARAMETERS,
    KERNELS,
    METHODS,
    ModelOptions,
)

#: Largest --n-init (the estimators' own cap): more initialisations than this do
#: not change a result.
from .._estimators.base import MAX_N_INIT  # noqa: E402
#: Largest --n-lambdas (regularization_path's own cap).
from .._path import MAX_N_LAMBDAS  # noqa: E402, F401  (for the commands)
#: Largest --n-landmarks (the Nystroem features take N x M numbers).
MAX_N_LANDMARKS = 100_000


# -- -s/--outliers ---------------------------------------------------------------------
@dataclass(frozen=True)
class OutlierTarget:
    """What ``-s`` asked for: a count, or a fraction of the rows (given as ``text``)."""

    text: str
    count: int | None = None
    fraction: float | None = None

    def resolve(self, n_rows, n_clusters, noun, path):
        """The number of outliers for ``n_rows`` rows (DataError when too many).

        A fraction f gives ``round(f * n_rows)``.  The same rule holds for
        both: at most ``n_rows - n_clusters``, so that every cluster keeps a
        row.
        """
        s = self.count if self.fraction is None else int(round(self.fraction * n_rows))
        most = n_rows - n_clusters
        if s > most:
            asked = (f"-s/--outliers {self.text}" if self.fraction is None
                     else f"-s/--outliers {self.text} ({count(s, noun)})")
            raise DataError(f"{asked} is too many for {count(n_rows, noun)} of {path}: "
                            f"{_clusters_need(n_clusters, noun)}, so at most {most} can be "
                            "flagged")
        return s

    def describe(self, s, noun):
        """How lambda was chosen, in words."""
        rule = f"chosen to flag {count(s, 'outlier')}"
        if self.fraction is not None:
            rule += f" ({100 * self.fraction:.4g}% of the {noun}s)"
        return rule


def _clusters_need(n_clusters, noun):
    """'1 cluster needs at least one row', '4 clusters need at least one row each'."""
    if n_clusters == 1:
        return f"1 cluster needs at least one {noun}"
    return f"{n_clusters} clusters need at least one {noun} each"


class OutlierCount(click.ParamType):
    """``-s``: a count (80, 80.0, 1e3), a fraction below 1 (0.05) or a percentage (5%)."""

    name = "COUNT"

    def convert(self, value, param, ctx):
        if isinstance(value, OutlierTarget):
            return value
        text = str(value).strip()
        usage = ("expected a count (80), a fraction of the rows below 1 (0.05) or a "
                 f"percentage below 100 (5%), got {value!r}")
        try:
            number = float(text[:-1] if text.endswith("%") else text)
        except ValueError:
            self.fail(usage, param, ctx)
        if not math.isfinite(number) or number < 0:
            self.fail(usage, param, ctx)
        if text.endswith("%"):
            if number >= 100:
                self.fail(f"a percentage of the rows must be below 100%, got {value!r}",
                          param, ctx)
            return OutlierTarget(text, fraction=number / 100)
        if number < 1:
            return OutlierTarget(text, fraction=number) if number > 0 else \
                OutlierTarget(text, count=0)
        if number != int(number):
            self.fail(f"{value!r} is neither a whole count nor a fraction below 1", param, ctx)
        return OutlierTarget(text, count=int(number))


class Lambda(click.ParamType):
    """``--lam``: a number >= 0, ``inf`` allowed (plain K-means / mixture)."""

    name = "FLOAT"

    def convert(self, value, param, ctx):
        try:
            lam = float(value)
        except (TypeError, ValueError):
            self.fail(f"expected a number >= 0 (or inf), got {value!r}", param, ctx)
        if not lam >= 0:
            self.fail(f"expected a number >= 0 (or inf), got {value!r}", param, ctx)
        return lam


class PositiveLambda(click.ParamType):
    """``--lam-min`` / ``--lam-max``: a finite number > 0 (a grid's end)."""

    name = "L"

    def convert(self, value, param, ctx):
        try:
            lam = float(value)
        except (TypeError, ValueError):
            self.fail(f"expected a finite number > 0, got {value!r}", param, ctx)
        if not (lam > 0 and math.isfinite(lam)):
            self.fail(f"expected a finite number > 0, got {value!r}", param, ctx)
        return lam


def column_list(ctx, param, value):
    """``--columns a,b``: the names, each once."""
    if value is None:
        return None
    names = [name.strip() for name in value.split(",")]
    if not all(names):
        raise click.BadParameter(f"empty column name in {value!r}", ctx, param)
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise click.BadParameter(f"column {twice[0]!r} is named twice", ctx, param)
    return names


# -- shared options ----------------------------------------------------------------
def _options(*decorators):
    def apply(func):
        for decorator in reversed(decorators):
            func = decorator(func)
        return func
    return apply


data_options = _options(
    click.option("--columns", callback=column_list, metavar="A,B,...",
                 help="Comma-separated numeric columns to use (default: every numeric "
                      "column with a name in the header, except empty columns and numbers "
                      "written with leading zeros; the others are listed as skipped)."),
    click.option("--drop-missing", is_flag=True,
                 help="Leave out rows with missing values instead of failing."),
)

model_options = _options(
    click.option("-k", "--clusters", type=click.IntRange(min=1), required=True,
                 help="Number of clusters."),
    click.option("--method", type=click.Choice(METHODS), default="kmeans", show_default=True,
                 help="kmeans: hard robust K-means; soft: soft robust K-means (see --q); "
                      "gmm: robust Gaussian mixture (RPC, see --covariance)."),
    click.option("--q", type=click.FloatRange(min=1, min_open=True),
                 help="Fuzzifier of --method soft (default: 1.5)."),
    click.option("--covariance", type=click.Choice(COVARIANCES),
                 help="Covariance of --method gmm: tied_* common to all clusters, the "
                      "others one per cluster (default: tied_spherical, the paper's)."),
    click.option("--weighted", is_flag=True,
                 help="Weighted (log-penalty) variant: flagged rows pull less on the fit."),
    click.option("--kernel", type=click.Choice(KERNELS),
                 help="Kernel robust clustering (kernel K-means, or the kernel mixture "
                      "with --method gmm). Graph inputs always use their normalized "
                      "adjacency kernel."),
    click.option("--gamma", type=click.FloatRange(min=0, min_open=True),
                 help="gamma of --kernel rbf (default: 1 / the median squared distance "
                      "between rows) and poly (default: 1 / number of columns)."),
    click.option("--degree", type=click.IntRange(min=1),
                 help="Degree of --kernel poly (default: 3)."),
    click.option("--coef0", type=float,
                 help="Constant of --kernel poly: (gamma x.y + coef0)^degree (default: 1)."),
    click.option("--approximation", type=click.Choice(APPROXIMATIONS),
                 help="Of --kernel: exact (the N x N kernel matrix) or nystroem "
                      "(N x M Nystroem features, see --n-landmarks). Default: exact when "
                      "the kernel fits in half the available memory, else nystroem (the "
                      "summary says so)."),
    click.option("--n-landmarks", type=click.IntRange(1, MAX_N_LANDMARKS), metavar="M",
                 help="Landmarks of --approximation nystroem (default: 100)."),
    click.option("--init", type=click.Choice(INITS),
                 help="Initialisation (default: spectral for graph inputs; k-means++ "
                      "with --kernel, robust-kmeans with --kernel and --method gmm; else "
                      "robust). robust: trimmed k-means++ seeding and concentration steps, "
                      "which far points cannot capture (--method gmm: a robust k-means fit "
                      "from it); k-means++: scikit-learn's seeding; spectral: spectral "
                      "clustering of the kernel, for --kernel and graphs only; "
                      "robust-kmeans: a robust k-means fit from k-means++, for --method "
                      "gmm only."),
    click.option("--standardize", is_flag=True,
                 help="Scale every column to mean 0 and variance 1 first (kept in the "
                      "saved model)."),
    click.option("--n-init", type=click.IntRange(1, MAX_N_INIT),
                 help="Initialisations; the best run is kept (default: 10)."),
    click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
                 help="Random seed of the initialisations."),
)

run_options = _options(
    click.option("--json", "as_json", is_flag=True,
                 help="Print a machine-readable JSON summary instead of the text one."),
    click.option("--quiet", is_flag=True,
                 help="No progress bar and no text summary (errors and warnings still "
                      "go to stderr)."),
    click.option("--force", is_flag=True,
                 help="Overwrite existing output files (never the input)."),
)


def model_options_from(kwargs, *, graph, lam=None, n_outliers=None):
    """Check the estimator options against each other and the input; a ModelOptions."""
    method, q, covariance = kwargs["method"], kwargs["q"], kwargs["covariance"]
    kernel, init = kwargs["kernel"], kwargs["init"]
    if graph:
        for name in ("kernel", *KERNEL_PARAMETERS, "approximation", "n_landmarks"):
            if kwargs[name] is not None:
                raise click.UsageError(f"--{name.replace('_', '-')} does not apply to graph "
                                       "inputs: they are clustered with their normalized "
                                       "adjacency kernel")
        if kwargs["standardize"]:
            raise click.UsageError("--standardize does not apply to graph inputs")
    for name, kernels in KERNEL_PARAMETERS.items():
        if kwargs[name] is not None and kernel not in kernels:
            raise click.UsageError(f"--{name} applies to --kernel {' and '.join(kernels)} "
                                   "only")
    if kwargs["approximation"] is not None and kernel is None:
        raise click.UsageError("--approximation applies to --kernel only")
    if kwargs["n_landmarks"] is not None and kwargs["approximation"] == "exact":
        raise click.UsageError("--n-landmarks applies to --approximation nystroem only")
    if kwargs["n_landmarks"] is not None and kernel is None:
        raise click.UsageError("--n-landmarks applies to --kernel only")
    if kwargs.get("unrefined") and (method != "kmeans" or kernel is not None or graph):
        raise click.UsageError("--unrefined applies to --method kmeans without --kernel only")
    if q is not None and method != "soft":
        raise click.UsageError("--q applies to --method soft only")
    if covariance is not None and (graph or kernel is not None):
        raise click.UsageError("--covariance does not apply to kernels: the kernel mixture "
                               "has one variance in feature space")
    if covariance is not None and method != "gmm":
        raise click.UsageError("--covariance applies to --method gmm only")
    if init == "spectral" and not graph and kernel is None:
        raise click.UsageError("--init spectral applies to --kernel and graph inputs only")
    if init == "spectral" and kwargs["approximation"] == "nystroem":
        raise click.UsageError("--init spectral needs the exact kernel, not "
                               "--approximation nystroem")
    if init == "robust-kmeans" and method != "gmm":
        raise click.UsageError("--init robust-kmeans applies to --method gmm only")
    if lam == 0 and method == "gmm":
        raise click.UsageError("--lam must be > 0 with --method gmm (at 0 the mixture's "
                               "cost is unbounded below)")
    return ModelOptions(
        n_clusters=kwargs["clusters"], method=method, q=q, covariance=covariance,
        weighted=kwargs["weighted"], kernel=kernel, gamma=kwargs["gamma"],
        degree=kwargs["degree"], coef0=kwargs["coef0"], init=init,
        standardize=kwargs["standardize"], n_init=kwargs["n_init"], seed=kwargs["seed"],
        lam=lam, n_outliers=n_outliers, refine=not kwargs.get("unrefined", False),
        approximation=kwargs["approximation"], n_landmarks=kwargs["n_landmarks"])
