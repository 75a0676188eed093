"""The ``robustclust`` command line: ``fit``, ``predict``, ``path``, ``demo`` and ``reproduce``.

Built on click.  :func:`main` runs a command and turns every failure into one
line on stderr: exit status 2 for usage errors (a bad or missing option, an
unknown option value or input format, options that do not go together or do
not apply to the input, such as ``--gamma`` without a kernel or
``predict`` on a graph), 1 for data errors (a missing or unreadable file, a
non-numeric or missing column, missing values, too few rows, a graph the
graph kernel cannot take, an output that would overwrite data, a fit whose
numbers overflowed, not enough memory), 130 when interrupted (Ctrl-C) and
128 + the signal number when terminated (SIGTERM, SIGHUP); never a
traceback.  Temporary files are removed in every case.  Warnings are shown
as one line each after a run that succeeds.
"""

import dataclasses
import functools
import os
import signal
import sys
import time
import warnings
from pathlib import Path

import click
import numpy as np

from .. import __version__
from ._dask_run import MAX_WORKERS
from ._data import GRAPH_KINDS, input_kind, read_input
from . import _signals
from ._errors import (
    PROG,
    DataError,
    count,
    error_reported,
    one_line,
    report_error,
    rows_phrase,
)
from ._models import (
    build_estimator,
    lambda_rule,
    describe,
    feature_names,
    final_estimator,
    fitted_data,
    kernel_gamma,
    kernel_name,
    model_input,
    n_clusters,
    own_matrix,
    predict_rows,
    row_results,
)
from ._options import (
    MAX_N_LAMBDAS,
    Lambda,
    OutlierCount,
    PositiveLambda,
    data_options,
    model_options,
    model_options_from,
    run_options,
)
from ._run import (
    TABLE_OUTPUTS,
    check_fit,
    check_fit_memory,
    check_rows,
    check_standardizable,
    choose_approximation,
    destinations,
    figure_writer,
    out_of_memory,
    progress_bar,
    run_estimator,
    table_writer,
    with_results,
    write_outputs,
)
from ._signals import Terminated
from ._summary import cluster_sizes, format_summary, to_json, top_outliers

#: NumPy's floating-point warnings: the results are checked instead (check_fit).
_FLOATING_POINT = r"(overflow|invalid value|divide by zero|underflow) encountered"


class _Session:
    """State shared by a command and :func:`main`: the warnings caught so far."""

    def __init__(self, caught):
        self.caught = caught

    def warning_messages(self):
        """The distinct warning messages caught so far, in order."""
        return list(dict.fromkeys(str(w.message) for w in self.caught))


def _guarded(command):
    """Keep an EOFError from reaching click, which would report it as an
    interruption, and a KeyboardInterrupt too, which click would precede with
    an empty line on stderr (the interruption is reported by :func:`main`)."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except EOFError as exc:
            raise RuntimeError(f"unexpected end of data ({one_line(exc)})") from None
        except KeyboardInterrupt:
            raise Terminated(signal.SIGINT) from None
    return wrapper


def _is_graph(input):
    """Whether INPUT names a graph file (a usage error for an unknown suffix)."""
    return input_kind(input) in GRAPH_KINDS


def _noun(data):
    return "node" if data.graph is not None else "row"


def _model_input(data):
    """The matrix to fit: the columns used, or the graph's kernel (DataError if none)."""
    try:
        return model_input(data)
    except ValueError as exc:
        text = one_line(exc)
        raise DataError(f"cannot cluster {data.path}: {text[:1].lower()}{text[1:]}") from None


def _summary_head(command, data, model, notes=()):
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
        "n_rows": data.n_rows,
        "n_edges": data.graph.number_of_edges() if graph else None,
        "n_rows_used": int(data.used.sum()),
        "n_input_columns": None if graph else data.n_columns,
        "columns": [str(c) for c in data.columns],
        "skipped_columns": {str(k): v for k, v in (data.skipped or {}).items()},
        "dropped_rows": data.dropped,
        "notes": list(notes),
    }


def _written(dest, *names):
    """{name: the file written, or None} for the summary."""
    return {name: str(dest[name]) if name in dest else None for name in names}


def _warn_empty_clusters(summary):
    """A warning for the clusters a fit left without a row (the summary's table
    showed a 0 and nothing more: a centre left alone by extreme values, or all
    of whose rows were flagged)."""
    sizes = summary.get("cluster_sizes")
    if summary.get("command") != "fit" or not sizes:
        return
    empty = [str(c) for c, size in enumerate(sizes) if size == 0]
    if not empty:
        return
    which = f"cluster {empty[0]} keeps" if len(empty) == 1 else \
        f"clusters {', '.join(empty)} keep"
    warnings.warn(f"{which} no row (a centre left alone by values far from the others, or "
                  "all of whose rows are flagged): check the largest values of the data, or "
                  "fit fewer clusters", UserWarning, stacklevel=2)


def _finish(summary, session, as_json, quiet):
    _warn_empty_clusters(summary)
    summary["warnings"] = session.warning_messages()
    if as_json:
        click.echo(to_json(summary))
    elif not quiet:
        click.echo(format_summary(summary), nl=False)


def _fit_options(model_kwargs, *, graph, lam, save_model):
    options = model_options_from(model_kwargs, graph=graph, lam=lam)
    if graph and save_model is not None:
        raise click.UsageError("--save-model does not apply to graph inputs: a model of a "
                               "graph's nodes cannot label new nodes (-o writes the nodes' "
                               "labels)")
    if save_model is not None and options.approximation == "nystroem":
        raise click.UsageError("--save-model does not apply to --approximation nystroem: "
                               "such models cannot be saved")
    return options


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
@model_options
@click.option("-s", "--outliers", type=OutlierCount(),
              help="Number of outliers to flag: a count (80), a fraction of the rows "
                   "(0.05) or a percentage (5%); lambda is chosen to flag that many. At "
                   "most the number of rows minus the number of clusters.")
@click.option("--lam", type=Lambda(),
              help="The outlier threshold lambda itself (inf: plain clustering).")
@data_options
@click.option("-o", "--output", metavar="FILE.csv",
              help="Write the input rows (a graph's nodes and degrees) plus cluster (-1 "
                   "for outliers), is_outlier and outlier_score; the input's fields are "
                   "copied as written.")
@click.option("--plot", metavar="FILE.png",
              help="2-D picture of the clusters (principal components beyond two "
                   "columns), outliers circled by score; for a graph, the network.")
@click.option("--unrefined", is_flag=True,
              help="With --method kmeans and -s: the paper's estimator as it is (no "
                   "concentration steps after the fit, which by default lower the trimmed "
                   "cost of eq. (3) and flag exactly the count unless rows tie).")
@click.option("--save-model", metavar="FILE",
              help="Save the fitted model for 'robustclust predict' (a .npz file, no pickle; "
                   "not for graphs).")
@click.option("--workers", type=click.IntRange(1, MAX_WORKERS), metavar="N",
              help="Dataset inputs: fit on a local Dask cluster of N worker processes x 1 "
                   "thread, closed at the end (default: Dask's threaded scheduler).")
@click.option("--scheduler", metavar="ADDRESS",
              help="Dataset inputs: fit on the running Dask scheduler at ADDRESS "
                   "(tcp://host:8786); its workers must read the files under the same paths.")
@run_options
@click.pass_obj
@_guarded
def fit(session, input, outliers, lam, columns, drop_missing, output, plot, save_model,
        workers, scheduler, as_json, quiet, force, unrefined=False, **model_kwargs):
    """Cluster the rows of INPUT and flag its outliers.

    INPUT is a CSV or TSV file with a header line, a Parquet file, a 2-D
    .npy array, or a graph (.gml, or an edge list .edges/.txt), whose
    nodes are clustered with the normalized adjacency kernel. Without -s
    or --lam, the methods kmeans, soft and gmm flag the points that a model
    of Gaussian clusters plus uniform noise gives a noise probability above
    0.5; kernels and datasets set lambda so that about 0.1% of Gaussian
    inliers would be flagged.

    INPUT may also be a dataset, read lazily and fitted with Dask: a quoted
    glob ('data/*.parquet'), a directory of Parquet or CSV files, or a
    Parquet file with -o DIR, --workers or --scheduler. Its -o is a
    directory, written as a Parquet dataset (one part file per partition,
    the global row number in column 'row').
    """
    if outliers is not None and lam is not None:
        raise click.UsageError("give at most one of -s/--outliers and --lam")
    if workers is not None and scheduler is not None:
        raise click.UsageError("give at most one of --workers and --scheduler")
    if _is_dataset(input, output, workers, scheduler):
        return _fit_dataset(session, input, outliers, lam, columns, drop_missing, output, plot,
                            save_model, workers, scheduler, as_json, quiet, force, unrefined,
                            model_kwargs)
    if workers is not None or scheduler is not None:
        if not os.path.lexists(input):
            raise DataError(f"no such file or directory: {input}")
        raise click.UsageError(f"--{'workers' if workers is not None else 'scheduler'} "
                               "applies to dataset inputs only: a quoted glob "
                               "('data/*.parquet'), a directory of Parquet or CSV files, or a "
                               "Parquet file")
    graph = _is_graph(input)
    options = _fit_options({**model_kwargs, "unrefined": unrefined}, graph=graph, lam=lam,
                           save_model=save_model)
    dest = destinations([input], force, output=output, plot=plot, saved_model=save_model)
    # C order (the estimators' own) unless --standardize, whose sums agree with the
    # library's on a frame pandas read only in pandas' layout (see _data._features)
    data = read_input(input, columns=columns, drop_missing=drop_missing, raw="output" in dest,
                      order="F" if options.standardize else "C")
    noun = _noun(data)
    n_rows = check_rows(data, options, noun)
    s = None if outliers is None else outliers.resolve(n_rows, options.n_clusters, noun,
                                                       data.path)
    approximation, note = choose_approximation(options, n_rows, saving="saved_model" in dest)
    options = dataclasses.replace(options, n_outliers=s, approximation=approximation)
    model = build_estimator(options, graph=graph)
    X = _model_input(data)
    if options.standardize:
        check_standardizable(X, data.path)
    names = None
    if not graph:
        check_fit_memory(X, options, data.path)
        X, names = own_matrix(model, data)
    start = time.perf_counter()
    with progress_bar("fit", quiet), warnings.catch_warnings():
        warnings.filterwarnings("ignore", _FLOATING_POINT, RuntimeWarning)
        run_estimator(model.fit, X, kernel=graph or options.kernel is not None)
    elapsed = time.perf_counter() - start
    est = final_estimator(model)
    if not graph and X is not data.X:  # the reader's block, centred in place (own_matrix)
        # the estimator's own default again: a saved model refits on a copy
        est.set_params(copy_x=True)
        if names is not None:
            est.feature_names_in_ = np.asarray(names, dtype=object)
    labels, mask, scores = row_results(model)
    check_fit(data, X if graph else fitted_data(model, X), est, mask, scores,
              options.n_clusters)

    summary = _summary_head("fit", data, model, [note] if note else [])
    degrees = data.frame["degree"].to_numpy() if graph else None
    summary.update({
        "lambda": float(est.lambda_),
        "lambda_rule": lambda_rule(options, outliers, s, model, noun),
        "n_outliers": int(est.n_outliers_),
        "cluster_sizes": cluster_sizes(labels, n_clusters(model)),
        "top_outliers": top_outliers(data.used_labels, mask, scores, noun, degrees),
        "objective": float(est.objective_),
        "n_iter": int(est.n_iter_),
        "time_s": elapsed,
        **_written(dest, "output", "plot", "saved_model"),
    })
    history = getattr(est, "refine_history_", None)
    if history is not None and len(history):
        unrefined = getattr(est, "unrefined_lambda_", None)
        summary["refined"] = {"trimmed_cost": float(est.trimmed_cost_),
                              "steps": int(len(history)),
                              "unrefined_lambda": None if unrefined is None
                              else float(unrefined)}
    writers = {}
    if "saved_model" in dest:
        from .._model_io import write_model

        writers[dest["saved_model"]] = ("wb", functools.partial(write_model, model))
    if "output" in dest:
        writers[dest["output"]] = table_writer(with_results(data, labels, mask, scores),
                                               dest["output"])
    if "plot" in dest:
        writers[dest["plot"]] = figure_writer(_fit_figure(data, model, labels, scores),
                                              dest["plot"])
    write_outputs(force, writers)
    _finish(summary, session, as_json, quiet)


def _is_dataset(input, output, workers, scheduler):
    """Whether INPUT is fitted as a Dask dataset (see fit's help)."""
    from ._dataset import is_pattern

    if is_pattern(input) or os.path.isdir(input):
        return True
    suffix = Path(input).suffix.lower()
    if suffix not in (".parquet", ".pq"):
        return False
    directory_output = output is not None and Path(output).suffix.lower() not in TABLE_OUTPUTS
    return workers is not None or scheduler is not None or directory_output


def _fit_dataset(session, input, outliers, lam, columns, drop_missing, output, plot,
                 save_model, workers, scheduler, as_json, quiet, force, unrefined,
                 model_kwargs):
    """fit on a dataset (see :mod:`._dask_run`)."""
    from .._files import UnsafeWriteError, check_directory_destination
    from ._dask_run import (
        batch_size,
        check_method,
        cluster_sizes,
        dask_scheduler,
        dataset_writer,
        fit_dataset,
        is_earlier_output,
        summary,
    )
    from ._dataset import open_source

    options = _fit_options({**model_kwargs, "unrefined": unrefined}, graph=False, lam=lam,
                           save_model=save_model)
    check_method(options)
    for given, name, why in (
            (options.kernel, "--kernel", "kernel fits need the whole kernel matrix in memory"),
            (options.standardize, "--standardize", "scale the columns first"),
            (plot, "--plot", "it draws every row")):
        if given:
            raise click.UsageError(f"{name} does not apply to a Dask dataset: {why}")
    if output is not None and Path(output).suffix.lower() in TABLE_OUTPUTS:
        raise click.UsageError(f"with a dataset INPUT, -o names a directory, written as a "
                               f"Parquet dataset (one part file per partition), not a "
                               f"{Path(output).suffix.lower()} file: e.g. -o out/")
    source = open_source(input)
    dest = destinations(source.files, force, saved_model=save_model)
    if output is not None:
        try:
            dest["output"] = check_directory_destination(output, inputs=source.files,
                                                         force=force,
                                                         replaceable=is_earlier_output)
        except UnsafeWriteError as exc:
            raise DataError(str(exc)) from None
        if save_model is not None and os.path.abspath(save_model) == \
                os.path.abspath(dest["output"]):
            raise click.UsageError(f"-o/--output and --save-model name the same file {output}")
    notes = []
    if options.refine and outliers is not None and (  # the fits refined in memory
            options.method == "gmm" or (options.method == "kmeans" and not options.weighted)):
        notes.append("Dask fits are not refined: no concentration steps after the count "
                     "search (as --unrefined in memory)")
    with dask_scheduler(workers, scheduler) as where:
        fit = fit_dataset(source, options, outliers, columns=columns,
                          drop_missing=drop_missing, quiet=quiet,
                          floating_point=_FLOATING_POINT)
        result = summary(fit, options, outliers, where, notes)
        writers = {}
        if "saved_model" in dest:
            from .._model_io import write_model

            writers[dest["saved_model"]] = ("wb", functools.partial(write_model, fit.model))
        sizes = None
        if "output" in dest:
            write, sizes = dataset_writer(fit, batch_size(where))
            writers[dest["output"]] = ("dir", write)
        write_outputs(force, writers, replaceable=is_earlier_output)
        result["cluster_sizes"] = (sizes[1:].tolist() if sizes is not None
                                   else cluster_sizes(fit))
    result.update({**_written(dest, "output", "plot", "saved_model"),
                   "output_parts": source.n_partitions if "output" in dest else None})
    _finish(result, session, as_json, quiet)


def _fit_figure(data, model, labels, scores):
    """The --plot of fit: the graph with its outliers, or the rows in 2-D."""
    from ._figures import cluster_figure, graph_figure

    title = f"{describe(model)}: {count(final_estimator(model).n_outliers_, 'outlier')}"
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
@run_options
@click.pass_obj
@_guarded
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
    dest = destinations([input, model_path], force, output=output)
    if not Path(model_path).exists():
        raise DataError(f"no such model file: {model_path}")
    try:
        model = load_model(model_path)
    except (ValueError, OSError) as exc:
        raise DataError(str(exc)) from None
    data = read_input(input, columns=feature_names(model), drop_missing=drop_missing,
                      raw="output" in dest)
    expected = final_estimator(model).n_features_in_ if feature_names(model) is None else None
    if expected is not None and len(data.columns) != expected:
        raise DataError(f"the model was fitted on {count(expected, 'column')} but {input} "
                        f"has {count(len(data.columns), 'numeric column')} to use")
    X = data.X if feature_names(model) is not None else data.X.to_numpy()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", _FLOATING_POINT, RuntimeWarning)
        labels, mask, scores = run_estimator(predict_rows, model, X)
    elapsed = time.perf_counter() - start
    if scores is not None and not np.all(np.isfinite(scores)):
        raise DataError(f"the outlier scores of {input} under {model_path} are not finite "
                        "numbers (values too large for the model?): rescale the columns as "
                        "the model's training data were")
    if scores is not None and not np.array_equal(mask, scores > 0):
        labels = data.used_labels
        bad = [labels[i] for i in np.flatnonzero(mask != (scores > 0))]
        raise DataError(f"the model {model_path} labels {rows_phrase(bad)} of {input} "
                        "inconsistently (flag and score disagree), so nothing was written")

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
    if "output" in dest:
        write_outputs(force, {dest["output"]: table_writer(
            with_results(data, labels, mask, scores), dest["output"])})
    _finish(summary, session, as_json, quiet)


@cli.command()
@click.argument("input", metavar="INPUT")
@model_options
@click.option("--n-lambdas", type=click.IntRange(1, MAX_N_LAMBDAS), default=100,
              show_default=True,
              help="Number of lambda values, spaced geometrically from lambda_max (or "
                   "--lam-max) down to lambda_max / 1000 (or --lam-min); more are added "
                   "where the number of outliers jumps (see --no-refine).")
@click.option("--lam-min", type=PositiveLambda(), metavar="L",
              help="Smallest lambda of the grid (default: lambda_max / 1000).")
@click.option("--lam-max", type=PositiveLambda(), metavar="L",
              help="Largest lambda of the grid (default: lambda_max, where nothing is "
                   "flagged).")
@click.option("--refine/--no-refine", default=True, show_default=True,
              help="Add lambda values where the count of outliers jumps by more than "
                   "rows / n-lambdas between two grid values.")
@data_options
@click.option("-o", "--output", metavar="FILE.csv",
              help="Write the table: lambda, n_outliers, objective, n_iter.")
@click.option("--table", "whole_table", is_flag=True,
              help="Print every lambda value (by default a dozen rows at most: where the "
                   "count first reaches 1%, 2%, 5%, ... of the rows).")
@click.option("--plot", metavar="FILE.png",
              help="Outlier norms and the number of outliers versus lambda (the "
                   "paper's Figs. 2-3).")
@run_options
@click.pass_obj
@_guarded
def path(session, input, n_lambdas, lam_min, lam_max, refine, columns, drop_missing, output,
         whole_table, plot, as_json, quiet, force, **model_kwargs):
    """Number of outliers of INPUT along the warm-started lambda path.

    Solves from lambda_max (the smallest lambda that flags nothing) down a
    decreasing grid, each solution started from the previous one, and
    prints how many rows each lambda flags.
    """
    import pandas as pd

    from ._lambda_path import refined_path

    graph = _is_graph(input)
    options = model_options_from(model_kwargs, graph=graph)
    if lam_min is not None and lam_max is not None and not lam_min < lam_max:
        raise click.UsageError(f"--lam-min {lam_min:g} must be smaller than --lam-max "
                               f"{lam_max:g}")
    dest = destinations([input], force, output=output, plot=plot)
    data = read_input(input, columns=columns, drop_missing=drop_missing,
                      order="F" if options.standardize else "C")
    n_rows = check_rows(data, options, _noun(data))
    approximation, note = choose_approximation(options, n_rows, saving=False)
    options = dataclasses.replace(options, approximation=approximation)
    model = build_estimator(options, graph=graph)
    X = _model_input(data)
    if not graph:
        check_fit_memory(X, options, data.path)
    if options.standardize:
        check_standardizable(X, data.path)
        X = run_estimator(model[:-1].fit_transform, X)
    kernel = graph or options.kernel is not None
    start = time.perf_counter()
    with progress_bar("path", quiet), warnings.catch_warnings():
        warnings.filterwarnings("ignore", _FLOATING_POINT, RuntimeWarning)
        result, at_max = run_estimator(functools.partial(
            refined_path, final_estimator(model), X, n_lambdas=n_lambdas, lam_min=lam_min,
            lam_max=lam_max, refine=refine), kernel=kernel)
    elapsed = time.perf_counter() - start  # every round of refinement included
    table = pd.DataFrame({"lambda": result.lambdas, "n_outliers": result.n_outliers,
                          "objective": result.objectives, "n_iter": result.n_iter})

    summary = _summary_head("path", data, model, [note] if note else [])
    summary.update({
        "lambda_max": result.lambda_max,
        "lambda_max_flags": at_max,
        "lambda_max_given": lam_max is not None,
        "lambdas": result.lambdas.tolist(),
        "n_outliers": result.n_outliers.tolist(),
        "objectives": result.objectives.tolist(),
        "n_iter": result.n_iter.tolist(),
        "whole_table": whole_table,
        "time_s": elapsed,
        **_written(dest, "output", "plot"),
    })
    writers = {}
    if "output" in dest:
        writers[dest["output"]] = table_writer(table, dest["output"])
    if "plot" in dest:
        from ._figures import path_figure

        figure = path_figure(result, title=f"{describe(model)}, {input}",
                             labels=data.used_labels, noun=_noun(data))
        writers[dest["plot"]] = figure_writer(figure, dest["plot"])
    write_outputs(force, writers)
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
              help="Folder of the report. A folder holding files that an earlier "
                   "reproduce did not write is refused (see --force); the report's own "
                   "README.md and figures are replaced.")
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
@click.option("--force", is_flag=True,
              help="Write into DIR even if it holds other files (files of the report's "
                   "names are replaced, the others left alone).")
@_guarded
def reproduce(out_dir, quick, data_home, download, only, force):
    """Reproduce Section VI of the paper into DIR (tables, figures, README.md).

    Every table puts the paper's number beside ours. Experiments whose data
    cannot be found are listed as not run. The headline claims (robust beats
    K-means in Table I, exactly s outliers, football ARI >= 0.88) are checked
    and printed; with --quick a failed claim makes the exit status 1.
    """
    from .._files import UnsafeWriteError
    from .._reproduce import EXPERIMENTS, run_reproduction

    unknown = [name for name in only if name not in EXPERIMENTS]
    if unknown:
        raise click.BadParameter(f"unknown experiment {unknown[0]!r}; choose from "
                                 f"{', '.join(EXPERIMENTS)}", param_hint="--only")
    try:
        sections = run_reproduction(out_dir, quick=quick, data_home=data_home,
                                    experiments=list(only) or None, download=download,
                                    force=force)
    except UnsafeWriteError as exc:
        raise DataError(str(exc)) from None
    except OSError as exc:  # a read-only or full --out folder
        where = exc.filename or out_dir
        raise DataError(f"cannot write the report into {where}: "
                        f"{exc.strerror or one_line(exc)}") from None
    failed = []
    for section in sections:
        if section.skipped:
            click.echo(f"not run  {section.key}: {one_line(section.skipped)}")
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
        interrupted, 128 + N when terminated by signal N.  Every error is one
        line on stderr.  With no arguments the help is printed and 0
        returned.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        click.echo(cli.get_help(click.Context(cli, info_name=PROG)))
        return 0
    command = next((a for a in args if a in cli.commands), None)
    prefix = f"{PROG} {command}" if command else PROG
    failed = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _signals.handling(prefix, error_reported):
            try:
                status = cli.main(args, prog_name=PROG, standalone_mode=False,
                                  obj=_Session(caught))
                failed = False
            except BaseException as exc:  # one path: _outcome
                status, message = _outcome(exc)
                report_error(prefix, message)
    if not failed:
        for message in _Session(caught).warning_messages():
            click.echo(f"{prefix}: warning: {one_line(message)}", err=True)
    return status if isinstance(status, int) else 0


def _outcome(exc):
    """(exit status, error line) of a command that raised ``exc``.

    A signal received during the command decides first, whatever the
    exception looks like by the time it reaches here (see :mod:`._signals`):
    130 "interrupted" after SIGINT, 128 + N "terminated by ..." after signal
    N.  Then usage and data errors (2, 1), running out of memory (1), and
    anything else, a bug: 1 and "internal error" (re-raised with
    ROBUSTCLUST_DEBUG set).
    """
    signum = _signals.received() or _signals.in_chain(exc)
    if signum is None and isinstance(exc, click.exceptions.Abort):
        signum = signal.SIGINT
    if signum is not None:
        return _signals.status_of(signum), _signals.message_of(signum)
    if isinstance(exc, click.ClickException):
        return exc.exit_code, exc.format_message()
    from ._dataset import worker_died

    died = worker_died(exc, "running the command")
    if died is not None:
        return 1, died
    memory = _memory_error(exc)
    if memory is not None:
        return 1, out_of_memory(memory)
    if not isinstance(exc, Exception):
        raise exc  # SystemExit and the like
    if os.environ.get("ROBUSTCLUST_DEBUG"):
        raise exc
    return 1, (f"internal error ({type(exc).__name__}: {exc}); please report it "
               "(ROBUSTCLUST_DEBUG=1 shows the traceback)")


def _memory_error(exc):
    """The MemoryError in ``exc``'s chain, or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, MemoryError):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


