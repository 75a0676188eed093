"""The ``robustclust`` command line: ``fit``, ``predict``, ``path``, ``demo`` and ``reproduce``.

Built on click.  :func:`main` runs a command and turns every failure into one
line on stderr: exit status 2 for usage errors (a bad or missing option, an
unknown option value or input format, options that do not go together or do
not apply to the input, such as ``--gamma`` without a kernel or
``predict`` on a graph), 1 for data errors (a missing or unreadable file, a
non-numeric or missing column, missing values, too few rows, a graph the
graph kernel cannot take, an output that would overwrite data), never a
traceback.  Warnings from the estimators are shown as one line each.
"""

import os
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import click
import numpy as np
import pandas as pd

from .. import __version__, _progress
from ._data import GRAPH_KINDS, RESULT_COLUMNS, DataError, input_kind, read_input
from ._models import (
    COVARIANCES,
    GRAPH_INIT,
    INITS,
    KERNEL_PARAMETERS,
    KERNELS,
    METHODS,
    ModelOptions,
    build_estimator,
    default_lambda_rule,
    describe,
    feature_names,
    final_estimator,
    fitted_data,
    kernel_gamma,
    kernel_name,
    model_input,
    n_clusters,
    predict_rows,
    row_results,
)
from ._summary import cluster_sizes, format_summary, to_json, top_outliers
from .._files import UnsafeWriteError, atomic_write, check_destination

PROG = "robustclust"

_TABLE_OUTPUTS = {".csv": ",", ".tsv": "\t"}
_PLOT_FORMATS = (".png", ".pdf", ".svg")
_OPTION_NAMES = {"output": "-o/--output", "plot": "--plot", "saved_model": "--save-model"}


class _Session:
    """State shared by a command and :func:`main`: the warnings caught so far."""

    def __init__(self, caught):
        self.caught = caught

    def warning_messages(self):
        """The distinct warning messages caught so far, in order."""
        return list(dict.fromkeys(str(w.message) for w in self.caught))


# -- option types ------------------------------------------------------------------
class _OutlierCount(click.ParamType):
    """``-s``: a count (80), a fraction below 0.5 (0.05) or a percentage (5%)."""

    name = "COUNT"

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        text = value.strip()
        try:
            if text.endswith("%"):
                number = float(text[:-1]) / 100
            elif any(ch in text for ch in ".eE"):
                number = float(text)
            else:
                count = int(text)
                if count < 0:
                    raise ValueError
                return count
        except ValueError:
            self.fail(f"expected a count (80), a fraction below 0.5 (0.05) or a "
                      f"percentage (5%), got {value!r}", param, ctx)
        if not 0 < number < 0.5:
            self.fail(f"a fraction of the rows must be in (0, 0.5), got {value!r}", param, ctx)
        return number


class _Lambda(click.ParamType):
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


def _column_list(ctx, param, value):
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


_data_options = _options(
    click.option("--columns", callback=_column_list, metavar="A,B,...",
                 help="Comma-separated numeric columns to use (default: every numeric "
                      "column; the others are listed as skipped)."),
    click.option("--drop-missing", is_flag=True,
                 help="Leave out rows with missing values instead of failing."),
)

_model_options = _options(
    click.option("-k", "--clusters", type=click.IntRange(min=1), required=True,
                 help="Number of clusters."),
    click.option("--method", type=click.Choice(METHODS), default="kmeans", show_default=True,
                 help="kmeans: hard robust K-means; soft: soft robust K-means (see --q); "
                      "gmm: robust Gaussian mixture (RPC, see --covariance)."),
    click.option("--q", type=click.FloatRange(min=1, min_open=True),
                 help="Fuzzifier of --method soft (default: 1.5)."),
    click.option("--covariance", type=click.Choice(COVARIANCES),
                 help="Covariance of --method gmm, common to all clusters "
                      "(default: spherical)."),
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
    click.option("--init", type=click.Choice(INITS),
                 help=f"Initialisation (default: {GRAPH_INIT} for graph inputs, "
                      "robust-kmeans for --method gmm, else k-means++). spectral: "
                      "spectral clustering of the kernel, for --kernel and graphs only; "
                      "robust-kmeans: for --method gmm only."),
    click.option("--standardize", is_flag=True,
                 help="Scale every column to mean 0 and variance 1 first (kept in the "
                      "saved model)."),
    click.option("--n-init", type=click.IntRange(min=1),
                 help="Initialisations; the best run is kept (default: 10)."),
    click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
                 help="Random seed of the initialisations."),
)

_run_options = _options(
    click.option("--json", "as_json", is_flag=True,
                 help="Print a machine-readable JSON summary instead of the text one."),
    click.option("--quiet", is_flag=True,
                 help="No progress bar and no text summary (errors and warnings still "
                      "go to stderr)."),
    click.option("--force", is_flag=True,
                 help="Overwrite existing output files (never the input)."),
)


def _model_options_from(kwargs, *, graph, lam=None, n_outliers=None):
    """Check the estimator options against each other and the input; a ModelOptions."""
    method, q, covariance = kwargs["method"], kwargs["q"], kwargs["covariance"]
    kernel, init = kwargs["kernel"], kwargs["init"]
    if graph:
        for name in ("kernel", *KERNEL_PARAMETERS):
            if kwargs[name] is not None:
                raise click.UsageError(f"--{name} does not apply to graph inputs: they are "
                                       "clustered with their normalized adjacency kernel")
        if kwargs["standardize"]:
            raise click.UsageError("--standardize does not apply to graph inputs")
    for name, kernels in KERNEL_PARAMETERS.items():
        if kwargs[name] is not None and kernel not in kernels:
            raise click.UsageError(f"--{name} applies to --kernel {' and '.join(kernels)} "
                                   "only")
    if q is not None and method != "soft":
        raise click.UsageError("--q applies to --method soft only")
    if covariance is not None and (graph or kernel is not None):
        raise click.UsageError("--covariance does not apply to kernels: the kernel mixture "
                               "has one variance in feature space")
    if covariance is not None and method != "gmm":
        raise click.UsageError("--covariance applies to --method gmm only")
    if init == "spectral" and not graph and kernel is None:
        raise click.UsageError("--init spectral applies to --kernel and graph inputs only")
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
        lam=lam, n_outliers=n_outliers)


def _is_graph(input):
    """Whether INPUT names a graph file (a usage error for an unknown suffix)."""
    return input_kind(input) in GRAPH_KINDS


# -- files ---------------------------------------------------------------------------
def _destinations(inputs, force, **paths):
    """Check every output path before any work; {name: Path} of those given."""
    given = {name: Path(p) for name, p in paths.items() if p is not None}
    resolved = {}
    for name, path in given.items():
        key = os.path.abspath(path)
        if key in resolved:
            raise click.UsageError(f"{_OPTION_NAMES[resolved[key]]} and {_OPTION_NAMES[name]} "
                                   f"name the same file {path}")
        resolved[key] = name
    if "output" in given and given["output"].suffix.lower() not in _TABLE_OUTPUTS:
        raise click.BadParameter("the output file name must end in .csv or .tsv",
                                 param_hint="'-o' / '--output'")
    if "plot" in given:
        if given["plot"].suffix.lower() not in _PLOT_FORMATS:
            raise click.BadParameter("the plot file name must end in "
                                     f"{', '.join(_PLOT_FORMATS)}", param_hint="'--plot'")
        _require_matplotlib()
    try:
        return {name: check_destination(path, inputs=inputs, force=force)
                for name, path in given.items()}
    except UnsafeWriteError as exc:
        raise DataError(str(exc)) from None


def _require_matplotlib():
    from ._figures import check_available

    try:
        check_available()
    except ImportError as exc:
        raise DataError(str(exc)) from None


def _write_rows(frame, path):
    """Write a table of rows atomically, as CSV (or TSV for a .tsv name)."""
    with atomic_write(path, "w") as fh:
        frame.to_csv(fh, index=False, sep=_TABLE_OUTPUTS[path.suffix.lower()])


def _save_figure(figure, path):
    with atomic_write(path) as fh:
        figure.savefig(fh, format=path.suffix[1:].lower(), dpi=120)


def _with_results(data, labels, mask, scores):
    """The input rows plus cluster, is_outlier and outlier_score (empty for rows left out)."""
    frame = data.frame.drop(columns=[c for c in RESULT_COLUMNS if c in data.frame.columns])
    n, used = len(frame), data.used
    cluster = pd.array([pd.NA] * n, dtype="Int64")
    cluster[used] = labels
    flagged = pd.array([pd.NA] * n, dtype="boolean")
    flagged[used] = mask
    frame["cluster"] = cluster
    frame["is_outlier"] = flagged
    if scores is not None:
        score = np.full(n, np.nan)
        score[used] = scores
        frame["outlier_score"] = score
    return frame


# -- running -------------------------------------------------------------------------
@contextmanager
def _progress_bar(desc, quiet):
    """A tqdm bar counting solver iterations, on a terminal and unless quiet."""
    if quiet or not sys.stderr.isatty():
        yield
        return
    from tqdm import tqdm

    with tqdm(desc=desc, unit=" iterations", file=sys.stderr, leave=False,
              mininterval=0.2) as bar, _progress.listen(bar.update):
        yield


def _run_estimator(func, *args):
    """Call a fitting/predicting function; its ValueErrors are data errors."""
    try:
        return func(*args)
    except ValueError as exc:
        text = str(exc).strip()
        raise DataError(" ".join(text.split()) if text else type(exc).__name__) from None


def _noun(data):
    return "node" if data.graph is not None else "row"


def _check_rows(data, options):
    """The number of rows (nodes) to cluster, at least one per cluster."""
    n_rows, noun = int(data.used.sum()), _noun(data)
    if n_rows < options.n_clusters:
        raise DataError(f"{n_rows} {noun}s of {data.path} for {options.n_clusters} "
                        f"clusters: need at least one {noun} per cluster")
    return n_rows


def _model_input(data):
    """The matrix to fit: the columns used, or the graph's kernel (DataError if none)."""
    try:
        return model_input(data)
    except ValueError as exc:
        text = _one_line(exc)
        raise DataError(f"cannot cluster {data.path}: {text[:1].lower()}{text[1:]}") from None


def _summary_head(command, data, model):
    est = final_estimator(model)
    graph = data.graph is not None
    return {
        "command": command,
        "method": describe(model),
        "estimator": type(est).__name__,
        "kernel": kernel_name(model),
        "gamma": kernel_gamma(model),
        "n_clusters": n_clusters(model),
        "input": str(data.path),
        "graph": graph,
        "n_rows": len(data.frame),
        "n_edges": data.graph.number_of_edges() if graph else None,
        "n_rows_used": int(data.used.sum()),
        "columns": [str(c) for c in data.columns],
        "skipped_columns": dict(data.skipped or {}),
        "dropped_rows": data.dropped,
    }


def _written(dest, *names):
    """{name: the file written, or None} for the summary."""
    return {name: str(dest[name]) if name in dest else None for name in names}


def _finish(summary, session, as_json, quiet):
    summary["warnings"] = session.warning_messages()
    if as_json:
        click.echo(to_json(summary))
    elif not quiet:
        click.echo(format_summary(summary), nl=False)


def _lambda_rule(options, n_rows, model, noun):
    target = options.n_outliers
    if isinstance(target, float):
        return (f"chosen to flag {round(target * n_rows)} outliers "
                f"({100 * target:.4g}% of the {noun}s)")
    if target is not None:
        return f"chosen to flag {target} outliers"
    if options.lam is not None:
        return "given"
    return default_lambda_rule(model)


# -- commands ------------------------------------------------------------------------
@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name=PROG)
def cli():
    """Cluster a table of numbers and flag its outliers in one pass.

    Robust K-means and robust Gaussian mixtures with outlier-sparsity
    regularization (Forero, Kekatos and Giannakis, IEEE TSP 2012).
    Run 'robustclust COMMAND --help' for the options of a command.
    """


@cli.command()
@click.argument("input", metavar="INPUT")
@_model_options
@click.option("-s", "--outliers", type=_OutlierCount(),
              help="Number of outliers to flag: a count (80), a fraction (0.05) or a "
                   "percentage (5%); lambda is chosen to flag that many.")
@click.option("--lam", type=_Lambda(),
              help="The outlier threshold lambda itself (inf: plain clustering).")
@_data_options
@click.option("-o", "--output", metavar="FILE.csv",
              help="Write the input rows (a graph's nodes and degrees) plus cluster (-1 "
                   "for outliers), is_outlier and outlier_score.")
@click.option("--plot", metavar="FILE.png",
              help="2-D picture of the clusters (principal components beyond two "
                   "columns), outliers circled by score; for a graph, the network.")
@click.option("--save-model", metavar="FILE",
              help="Save the fitted model for 'robustclust predict' (a .npz file, no pickle; "
                   "not for graphs).")
@_run_options
@click.pass_obj
def fit(session, input, outliers, lam, columns, drop_missing, output, plot, save_model,
        as_json, quiet, force, **model_kwargs):
    """Cluster the rows of INPUT and flag its outliers.

    INPUT is a CSV or TSV file with a header line, a Parquet file, a 2-D
    .npy array, or a graph (.gml, or an edge list .edges/.txt), whose
    nodes are clustered with the normalized adjacency kernel. Without -s
    or --lam, lambda is set from the data so that about 0.1% of Gaussian
    inliers would be flagged.
    """
    if outliers is not None and lam is not None:
        raise click.UsageError("give at most one of -s/--outliers and --lam")
    graph = _is_graph(input)
    options = _model_options_from(model_kwargs, graph=graph, lam=lam, n_outliers=outliers)
    if graph and save_model is not None:
        raise click.UsageError("--save-model does not apply to graph inputs: a model of a "
                               "graph's nodes cannot label new nodes (-o writes the nodes' "
                               "labels)")
    dest = _destinations([input], force, output=output, plot=plot, saved_model=save_model)
    data = read_input(input, columns=columns, drop_missing=drop_missing)
    model = build_estimator(options, graph=graph)
    n_rows, noun = _check_rows(data, options), _noun(data)
    if isinstance(outliers, int) and outliers >= n_rows:
        raise DataError(f"-s/--outliers {outliers} must be smaller than the number of "
                        f"{noun}s ({n_rows})")
    X = _model_input(data)
    start = time.perf_counter()
    with _progress_bar("fit", quiet):
        _run_estimator(model.fit, X)
    elapsed = time.perf_counter() - start
    est = final_estimator(model)
    labels, mask, scores = row_results(model)

    if "saved_model" in dest:
        from .._model_io import save_model as save

        save(model, dest["saved_model"])
    if "output" in dest:
        _write_rows(_with_results(data, labels, mask, scores), dest["output"])
    if "plot" in dest:
        _save_figure(_fit_figure(data, model, labels, scores), dest["plot"])

    summary = _summary_head("fit", data, model)
    degrees = data.frame["degree"].to_numpy() if graph else None
    summary.update({
        "lambda": float(est.lambda_),
        "lambda_rule": _lambda_rule(options, n_rows, model, noun),
        "n_outliers": int(est.n_outliers_),
        "cluster_sizes": cluster_sizes(labels, n_clusters(model)),
        "top_outliers": top_outliers(data.used_labels, mask, scores, noun, degrees),
        "objective": float(est.objective_),
        "n_iter": int(est.n_iter_),
        "time_s": elapsed,
        **_written(dest, "output", "plot", "saved_model"),
    })
    _finish(summary, session, as_json, quiet)


def _fit_figure(data, model, labels, scores):
    """The --plot of fit: the graph with its outliers, or the rows in 2-D."""
    from ._figures import cluster_figure, graph_figure

    title = f"{describe(model)}: {final_estimator(model).n_outliers_} outliers"
    if data.graph is not None:
        return graph_figure(data.graph, labels, scores, title=title)
    names = tuple(data.columns) if len(data.columns) == 2 else None
    return cluster_figure(fitted_data(model, data.X), labels, scores, axis_names=names,
                          title=title)


@cli.command()
@click.option("-m", "--model", "model_path", required=True, metavar="FILE",
              help="A model saved by 'robustclust fit --save-model'.")
@click.argument("input", metavar="INPUT")
@click.option("--drop-missing", is_flag=True,
              help="Leave out rows with missing values instead of failing.")
@click.option("-o", "--output", metavar="FILE.csv",
              help="Write the input rows plus cluster (-1 for outliers), is_outlier and, "
                   "for K-means models, outlier_score.")
@_run_options
@click.pass_obj
def predict(session, model_path, input, drop_missing, output, as_json, quiet, force):
    """Label the rows of INPUT with a saved model (-1 for outliers).

    The model's columns are taken from INPUT by name (for a model fitted on
    an unnamed array, every numeric column, in order). Graph inputs cannot be
    predicted: 'robustclust fit -o' labels a graph's nodes.
    """
    from .._model_io import load_model

    if _is_graph(input):
        raise click.UsageError("predict does not take graph inputs: a saved model labels "
                               "new rows of numbers; 'robustclust fit GRAPH -o FILE.csv' "
                               "labels the nodes of a graph")
    dest = _destinations([input, model_path], force, output=output)
    if not Path(model_path).exists():
        raise DataError(f"no such model file: {model_path}")
    try:
        model = load_model(model_path)
    except (ValueError, OSError) as exc:
        raise DataError(str(exc)) from None
    data = read_input(input, columns=feature_names(model), drop_missing=drop_missing)
    expected = final_estimator(model).n_features_in_ if feature_names(model) is None else None
    if expected is not None and len(data.columns) != expected:
        raise DataError(f"the model was fitted on {expected} columns but {input} has "
                        f"{len(data.columns)} numeric columns")
    X = data.X if feature_names(model) is not None else data.X.to_numpy()
    start = time.perf_counter()
    labels, mask, scores = _run_estimator(predict_rows, model, X)
    elapsed = time.perf_counter() - start
    if "output" in dest:
        _write_rows(_with_results(data, labels, mask, scores), dest["output"])

    summary = _summary_head("predict", data, model)
    summary.update({
        "model": str(model_path),
        "n_outliers": int(mask.sum()),
        "cluster_sizes": cluster_sizes(labels, n_clusters(model)),
        "top_outliers": (None if scores is None
                         else top_outliers(data.used_labels, mask, scores, "row")),
        "time_s": elapsed,
        **_written(dest, "output"),
    })
    _finish(summary, session, as_json, quiet)


@cli.command()
@click.argument("input", metavar="INPUT")
@_model_options
@click.option("--n-lambdas", type=click.IntRange(min=1), default=100, show_default=True,
              help="Number of lambda values, spaced geometrically from lambda_max down "
                   "to lambda_max / 1000.")
@_data_options
@click.option("-o", "--output", metavar="FILE.csv",
              help="Write the table: lambda, n_outliers, objective, n_iter.")
@click.option("--plot", metavar="FILE.png",
              help="Outlier norms and the number of outliers versus lambda (the "
                   "paper's Figs. 2-3).")
@_run_options
@click.pass_obj
def path(session, input, n_lambdas, columns, drop_missing, output, plot, as_json, quiet,
         force, **model_kwargs):
    """Number of outliers of INPUT along the warm-started lambda path.

    Solves from lambda_max (the smallest lambda that flags nothing) down a
    decreasing grid, each solution started from the previous one, and
    prints how many rows each lambda flags.
    """
    from .._path import regularization_path

    graph = _is_graph(input)
    options = _model_options_from(model_kwargs, graph=graph)
    dest = _destinations([input], force, output=output, plot=plot)
    data = read_input(input, columns=columns, drop_missing=drop_missing)
    model = build_estimator(options, graph=graph)
    _check_rows(data, options)
    X = _model_input(data)
    if options.standardize:
        X = _run_estimator(model[:-1].fit_transform, X)
    with _progress_bar("path", quiet):
        result = _run_estimator(regularization_path, final_estimator(model), X, None,
                                n_lambdas)
    table = pd.DataFrame({"lambda": result.lambdas, "n_outliers": result.n_outliers,
                          "objective": result.objectives, "n_iter": result.n_iter})
    if "output" in dest:
        _write_rows(table, dest["output"])
    if "plot" in dest:
        from ._figures import path_figure

        _save_figure(path_figure(result, title=f"{describe(model)}, {input}"), dest["plot"])

    summary = _summary_head("path", data, model)
    summary.update({
        "lambda_max": result.lambda_max,
        "lambdas": result.lambdas.tolist(),
        "n_outliers": result.n_outliers.tolist(),
        "objectives": result.objectives.tolist(),
        "n_iter": result.n_iter.tolist(),
        "time_s": result.fit_time,
        **_written(dest, "output", "plot"),
    })
    _finish(summary, session, as_json, quiet)


@cli.command()
@click.option("--runs", type=click.IntRange(min=1), default=100, show_default=True,
              metavar="N", help="Initialisations per method and data set.")
@click.option("--seed", type=int, default=0, show_default=True, metavar="S",
              help="random_state of the data generator.")
def demo(runs, seed):
    """Reproduce Table I of the paper (centre RMSE on synthetic blobs).

    Clusters the four-blob data set with 40 and 80 outliers by hard/soft
    K-means, robust K-means and the robust mixture, and prints the mean
    centre RMSE next to the paper's Table I.
    """
    from .._reproduce.demo import run_demo

    run_demo(n_runs=runs, data_seed=seed)


@cli.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="reports/paper",
              show_default=True, metavar="DIR",
              help="Folder of the report; its README.md and figures are replaced.")
@click.option("--quick", is_flag=True,
              help="The quick subset (under two minutes); exit 1 if a headline claim fails.")
@click.option("--data-home", type=click.Path(file_okay=False), envvar="ROBUSTCLUST_DATA",
              metavar="DIR", help="Folder with local copies of the real data sets "
              "[env ROBUSTCLUST_DATA].")
@click.option("--download/--no-download", default=True, show_default=True,
              help="Download missing real data sets into the cache first.")
@click.option("--only", multiple=True, metavar="NAME",
              help="Run only this experiment (repeatable): "
                   "table1, path, rings, usps, dolphins, football.")
def reproduce(out_dir, quick, data_home, download, only):
    """Reproduce Section VI of the paper into DIR (tables, figures, README.md).

    Every table puts the paper's number beside ours. Experiments whose data
    cannot be found are listed as not run. The headline claims (robust beats
    K-means in Table I, exactly s outliers, football ARI >= 0.88) are checked
    and printed; with --quick a failed claim makes the exit status 1.
    """
    from .._reproduce import EXPERIMENTS, run_reproduction

    unknown = [name for name in only if name not in EXPERIMENTS]
    if unknown:
        raise click.BadParameter(f"unknown experiment {unknown[0]!r}; choose from "
                                 f"{', '.join(EXPERIMENTS)}", param_hint="--only")
    sections = run_reproduction(out_dir, quick=quick, data_home=data_home,
                                experiments=list(only) or None, download=download)
    failed = []
    for section in sections:
        if section.skipped:
            click.echo(f"not run  {section.key}: {section.skipped}")
        for claim, ok in section.checks.items():
            click.echo(f"{'ok' if ok else 'FAILED':8s} {section.key}: {claim}")
            if not ok:
                failed.append(claim)
    click.echo(f"report: {Path(out_dir) / 'README.md'}")
    if quick and failed:
        raise DataError(f"{len(failed)} headline claim(s) failed: {'; '.join(failed)}")


# -- entry point ---------------------------------------------------------------------
def main(argv=None):
    """Run the ``robustclust`` command line.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments after the program name; None means ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 on success, 1 after a data error, 2 after a usage error, 130 when
        interrupted.  Every error is one line on stderr.  With no arguments
        the help is printed and 0 returned.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        click.echo(cli.get_help(click.Context(cli, info_name=PROG)))
        return 0
    command = next((a for a in args if a in cli.commands), None)
    prefix = f"{PROG} {command}" if command else PROG
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            status = cli.main(args, prog_name=PROG, standalone_mode=False,
                              obj=_Session(caught))
        except click.ClickException as exc:
            status = exc.exit_code
            _error(prefix, exc.format_message())
        except click.exceptions.Abort:
            status = 130
            _error(prefix, "interrupted")
        except Exception as exc:  # a bug: still one line, the traceback on request
            if os.environ.get("ROBUSTCLUST_DEBUG"):
                raise
            status = 1
            _error(prefix, f"internal error ({type(exc).__name__}: {exc}); please report "
                           "it (ROBUSTCLUST_DEBUG=1 shows the traceback)")
    for message in _Session(caught).warning_messages():
        click.echo(f"{prefix}: warning: {_one_line(message)}", err=True)
    return status if isinstance(status, int) else 0


def _one_line(text):
    return " ".join(str(text).split())


def _error(prefix, message):
    click.echo(f"{prefix}: error: {_one_line(message)}", err=True)
