"""``fit`` on a dataset: the Dask scheduler, the fit, its summary and its Parquet output.

Schedulers (:func:`dask_scheduler`): ``--scheduler ADDRESS`` connects to a
running ``distributed`` scheduler (within :data:`CONNECT_TIMEOUT_S`
seconds, and it must have a worker within as long); ``--workers N`` starts
a ``distributed.LocalCluster`` of N worker processes x 1 thread, closed when
the command ends, whatever way it ends; without either, Dask's threaded
scheduler runs the fit in this process (no cluster to start: the quickest
for data on one machine).  The files must be readable by the workers under the same
paths; the output is written by this process.

The output (``-o DIR``) is a Parquet dataset: one part file
``part.NNNNN.parquet`` per partition of the input, in row order, each with
the columns ``row`` (the global row number, from 1), the feature columns
(float64, as the fit read them) and ``cluster``, ``is_outlier``,
``outlier_score`` (as the in-memory ``-o``, empty for rows left out by
``--drop-missing``).  It is written into a hidden temporary directory
beside DIR and renamed into place at the end (:mod:`robustclust._files`).
"""

import logging
import math
import signal
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import click
import numpy as np

from ._dataset import (
    compute,
    feature_array,
    partitions,
    result_frame,
    row_numbers,
    scan,
    select_dataset_columns,
    used_rows,
)
from ._errors import DataError, count, first_line
from ._models import build_estimator, describe, lambda_rule
from ._run import progress_bar, run_estimator

#: Seconds to reach a --scheduler, and then for it to have a worker.
CONNECT_TIMEOUT_S = 10
#: Seconds the local cluster may take to close after Ctrl-C or SIGTERM before
#: its processes are killed and the command exits without waiting for it.
CLOSE_GRACE_S = 30
#: Largest --workers.
MAX_WORKERS = 512
#: --method values that fit Dask input (every estimator with lazy labels_,
#: outlier_mask_ and outlier_norms_ or outlier_scores_ on Dask input).
DASK_METHODS = ("kmeans", "soft", "gmm")
#: Name of the part files of the output: part.00000.parquet, ...
PART_NAME = "part.{:0{width}d}.parquet"


@dataclass
class Scheduler:
    """Where a dataset fit runs, as the summary reports it."""

    kind: str  # "threads", "local" (--workers) or "external" (--scheduler)
    address: str | None
    n_workers: int
    n_threads: int

    def as_dict(self):
        return {"kind": self.kind, "address": self.address, "n_workers": self.n_workers,
                "n_threads": self.n_threads}


def _cluster_size(client):
    workers = client.scheduler_info().get("workers", {})
    return len(workers), sum(int(w.get("nthreads", 0)) for w in workers.values())


class _AbandonedGathers(logging.Filter):
    """Drops asyncio's "Task exception was never retrieved" for the gathers a
    ``distributed.Client`` abandons when the command is interrupted (they end
    with ``AllExit`` as the client closes): the command reports the interruption."""

    def filter(self, record):
        exc = record.exc_info[1] if record.exc_info else None
        return exc is None or type(exc).__name__ != "AllExit"


_ABANDONED_GATHERS = _AbandonedGathers()


@contextmanager
def _quiet_distributed():
    """distributed's log lines off stderr while the command runs (errors are ours to tell)."""
    # stays: the abandoned tasks are collected when the event loop closes, at exit
    logging.getLogger("asyncio").addFilter(_ABANDONED_GATHERS)
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


@contextmanager
def dask_scheduler(workers=None, address=None):
    """Run the block on the scheduler the options name; yields a :class:`Scheduler`."""
    import dask

    if workers is None and address is None:
        from dask.system import CPU_COUNT

        with dask.config.set(scheduler="threads"):
            yield Scheduler("threads", None, 1, CPU_COUNT)
        return
    try:
        import distributed
    except ImportError:
        raise DataError("--workers and --scheduler need distributed: pip install "
                        "'robustclust[dask]'") from None
    with _quiet_distributed(), warnings.catch_warnings():
        # distributed's own sockets, not the user's data
        warnings.simplefilter("ignore", ResourceWarning)
        if address is not None:
            with _connect(distributed, address) as client:
                n_workers, n_threads = _cluster_size(client)
                yield Scheduler("external", client.scheduler.address, n_workers, n_threads)
            return
        with _exit_after_signal(CLOSE_GRACE_S):
            yield from _local_cluster(distributed, workers)


def _local_cluster(distributed, workers):
    """The body of :func:`dask_scheduler` for ``--workers``: start, yield, close."""
    cluster = client = None
    try:
        # a signal in the middle of the start would leave a half-made cluster that
        # distributed fails to close at exit (a traceback): held until it is made
        with _signals_held():
            cluster = distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True,
                dashboard_address="127.0.0.1:0",  # a free port (None tries 8787, warns)
                silence_logs=logging.CRITICAL)
            client = distributed.Client(cluster)
    except BaseException as exc:
        _close(client, cluster)
        if not isinstance(exc, Exception) or isinstance(exc, MemoryError):
            raise  # Ctrl-C, SIGTERM (Terminated)
        raise DataError(f"cannot start a local Dask cluster of "
                        f"{count(workers, 'worker')}: {first_line(exc)}") from None
    with cluster, client:
        n_workers, n_threads = _cluster_size(client)
        yield Scheduler("local", cluster.scheduler_address, n_workers, n_threads)


@contextmanager
def _exit_after_signal(seconds):
    """After SIGINT or SIGTERM, the command ends within ``seconds`` whatever happens.

    The signal is handled as every command's (:mod:`._signals`): if closing
    the local cluster hangs (it did once in about ten runs of the Ctrl-C
    test), the signals' watcher kills the worker processes, reports the
    interruption and exits with 128 + signal.
    """
    from ._signals import cleanup_within

    with cleanup_within(seconds):
        yield


def _close(client, cluster):
    for thing in (client, cluster):
        if thing is not None:
            try:
                thing.close()
            except Exception:  # already broken: nothing more to free
                pass


@contextmanager
def _signals_held():
    """Hold SIGINT, SIGTERM and SIGHUP during the block, then deliver the first one
    that arrived (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from . import _signals

    pending = []

    def hold(signum, frame):
        pending.append(signum)
        _signals.record(signum)  # an error of the start is then the interruption

    names = [name for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)]
    previous = {name: signal.signal(getattr(signal, name), hold) for name in names}
    try:
        yield
    finally:
        for name, handler in previous.items():
            signal.signal(getattr(signal, name), handler)
    if pending:
        signal.raise_signal(pending[0])


@contextmanager
def _connect(distributed, address):
    try:
        client = distributed.Client(address, timeout=CONNECT_TIMEOUT_S)
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as exc:
        raise DataError(f"cannot reach the Dask scheduler at {address} (--scheduler): "
                        f"{first_line(exc)}") from None
    with client:
        try:
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception:
            raise DataError(f"the Dask scheduler at {address} (--scheduler) has no worker "
                            f"(waited {CONNECT_TIMEOUT_S} s)") from None
        yield client


# -- the fit ------------------------------------------------------------------------------------------
@dataclass
class DatasetFit:
    """A dataset fit and what its summary and output need."""

    source: object
    stats: object
    names: list
    skipped: dict
    rows: object
    held: list
    model: object
    n_used: int
    elapsed: float


def check_method(options):
    """Usage error for the models that do not fit Dask input (yet)."""
    if options.method not in DASK_METHODS:
        raise click.UsageError(f"--method {options.method} does not run on a Dask dataset yet: "
                               f"use --method {' or '.join(DASK_METHODS)}, or fit one file in "
                               "memory")
    common = ("tied_spherical", "tied_diag", "tied")
    if options.method == "gmm" and options.covariance not in (None, *common):
        raise click.UsageError(f"--covariance {options.covariance} (one covariance per "
                               "component) does not run on a Dask dataset yet: use --covariance "
                               f"{', '.join(common[:-1])} or {common[-1]}, or fit one file in "
                               "memory")


def fit_dataset(source, options, target, *, columns, drop_missing, quiet, floating_point):
    """Scan, select the columns, fit; a :class:`DatasetFit`.  Runs inside dask_scheduler."""
    stats = scan(source)
    names, skipped = select_dataset_columns(source, stats, columns)
    rows = used_rows(source, stats, names, drop_missing)
    n_used = int(rows.kept.sum())
    if n_used < options.n_clusters:
        raise DataError(f"{count(n_used, 'row')} of {source.input} for "
                        f"{count(options.n_clusters, 'cluster')}: need at least one row per "
                        "cluster")
    s = None if target is None else target.resolve(n_used, options.n_clusters, "row",
                                                   source.input)
    options = replace(options, n_outliers=s)
    model = build_estimator(options)
    if s is None and options.lam is None:
        # a dataset's fit runs on Dask, whose default is the chi^2 lambda (the
        # command line's documented default for datasets)
        model.set_params(lam="chi2")
    X, held = feature_array(source, names, rows)
    start = time.perf_counter()
    with progress_bar("fit", quiet), warnings.catch_warnings():
        warnings.filterwarnings("ignore", floating_point, RuntimeWarning)
        # the summary's notes say that a Dask fit is not refined (the command's
        # caller writes them); the estimator's warning would repeat it
        warnings.filterwarnings("ignore", "this count fit on Dask data is not refined",
                                UserWarning)
        run_estimator(model.fit, X)
    elapsed = time.perf_counter() - start
    # the columns by name, for --save-model and predict (a dask array has none)
    model.feature_names_in_ = np.asarray(names, dtype=object)
    lam, objective = float(model.lambda_), float(model.objective_)
    if math.isnan(lam) or not math.isfinite(objective):
        raise DataError(f"the fit of {source.input} failed numerically: lambda {lam}, "
                        f"objective {objective}; rescale the columns (divide them by a power "
                        "of ten) and run again")
    return DatasetFit(source, stats, names, skipped, rows, held, model, n_used, elapsed)


def top_outliers(fit, limit):
    """[{"row": global row number, "score": s}, ...] of the flagged rows, highest first."""
    import dask

    model = fit.model
    index = np.asarray(model.outlier_indices_, dtype=np.int64)
    if index.size == 0:
        return []
    scores_of = getattr(model, "outlier_scores_", None)
    scores_of = model.outlier_norms_ if scores_of is None else scores_of
    numbers = row_numbers(fit.source, fit.names, fit.rows, fit.stats, fit.held)
    scores, = dask.compute(scores_of[index])
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")[:limit]
    rows, = compute(fit.source, [numbers[index[order]]])
    return [{"row": int(r), "score": float(scores[i])} for r, i in zip(rows, order)]


def n_clusters_of(model):
    """Clusters (mixture components) of a fitted estimator, from its centres."""
    centres = model.means_ if hasattr(model, "means_") else model.cluster_centers_
    return int(centres.shape[0])


def cluster_sizes(fit):
    """Rows per cluster (outliers not counted), from the lazy labels."""
    import dask
    import dask.array as da

    k = n_clusters_of(fit.model)
    counts, = dask.compute(da.bincount(fit.model.labels_ + 1, minlength=k + 1))
    return np.asarray(counts)[1:].tolist()


def summary(fit, options, target, scheduler, notes):
    """The fit's summary dict (the keys of the in-memory fit's, plus dataset and scheduler)."""
    from ._summary import TOP_OUTLIERS

    model, source = fit.model, fit.source
    return {
        "command": "fit",
        "method": describe(model),
        "estimator": type(model).__name__,
        "kernel": None,
        "gamma": None,
        "n_clusters": options.n_clusters,
        "input": source.input,
        "graph": False,
        "dataset": {"format": source.fmt, "n_files": len(source.files),
                    "n_partitions": source.n_partitions},
        "scheduler": scheduler.as_dict(),
        "n_rows": fit.stats.n_rows,
        "n_edges": None,
        "n_rows_used": fit.n_used,
        "n_input_columns": len(source.columns),
        "columns": list(fit.names),
        "skipped_columns": dict(fit.skipped),
        "dropped_rows": list(fit.rows.dropped_first),
        "n_dropped_rows": fit.rows.n_dropped,
        "notes": list(notes),
        "lambda": float(model.lambda_),
        "lambda_rule": lambda_rule(options, target, model.n_outliers, model, "row"),
        "n_outliers": int(model.n_outliers_),
        "top_outliers": top_outliers(fit, TOP_OUTLIERS),
        "objective": float(model.objective_),
        "n_iter": int(model.n_iter_),
        "time_s": fit.elapsed,
    }


# -- the output -----------------------------------------------------------------------------------------
def _blocks(array, chunks):
    """The blocks of a 1-D dask array, as delayed objects, chunked like the features."""
    return list(array.rechunk((chunks,)).to_delayed().ravel())


def part_name(i, n_parts):
    return PART_NAME.format(i, width=max(5, len(str(n_parts - 1))))


def is_earlier_output(directory):
    """None when ``directory`` holds part files only (an earlier output), else what else it holds."""
    other = sorted(p.name for p in Path(directory).iterdir()
                   if not (p.is_file() and p.name.startswith("part.")
                           and p.name.endswith(".parquet")))
    if not other:
        return None
    shown = ", ".join(other[:3]) + (f" and {len(other) - 3} more" if len(other) > 3 else "")
    return f"it holds {shown}"


def dataset_writer(fit, batch):
    """writer(directory): every part file of the output, ``batch`` partitions at a time.

    Returns (writer, sizes) where ``sizes`` (rows per cluster) is filled as the
    parts are written, and checked against the fit's count of outliers.
    """
    import dask

    source, model, rows = fit.source, fit.model, fit.rows
    k = n_clusters_of(model)
    sizes = np.zeros(k + 1, dtype=np.int64)

    def write(directory):
        import pyarrow as pa
        import pyarrow.parquet as pq

        chunks = tuple(int(rows.kept[i]) for i in fit.held)
        scores = getattr(model, "outlier_scores_", None)
        scores = model.outlier_norms_ if scores is None else scores
        labels, mask, norms = (_blocks(a, chunks) for a in (model.labels_, model.outlier_mask_,
                                                            scores))
        block = {i: j for j, i in enumerate(fit.held)}
        text = source.fmt != "parquet"
        task = dask.delayed(result_frame, pure=True)
        tasks = []
        for i, part in enumerate(partitions(source, fit.names)):
            j = block.get(i)
            offset = int(fit.stats.offsets[i])
            if j is None:
                tasks.append(task(part, text, offset, None, None, None))
            else:
                tasks.append(task(part, text, offset, labels[j], mask[j], norms[j]))
        flagged, schema = 0, None
        for first in range(0, len(tasks), batch):
            frames = compute(source, tasks[first:first + batch])
            for i, frame in enumerate(frames, start=first):
                table = pa.Table.from_pandas(frame, preserve_index=False)
                schema = table.schema if schema is None else schema
                with open(Path(directory) / part_name(i, len(tasks)), "xb") as fh:
                    pq.write_table(table.cast(schema), fh)
                    fh.flush()
                    _fsync(fh)
                cluster = frame["cluster"].dropna().to_numpy(dtype=np.int64)
                sizes[:] += np.bincount(cluster + 1, minlength=k + 1)
                flagged += int(frame["is_outlier"].sum())
        if flagged != model.n_outliers_ or sizes[0] != model.n_outliers_:
            raise DataError(f"the fit of {source.input} flags {model.n_outliers_} rows but "
                            f"its labels flag {flagged}: the numbers are beyond what the "
                            "solver handles; rescale the columns and run again")

    return write, sizes


def _fsync(fh):
    import os

    os.fsync(fh.fileno())


def batch_size(scheduler):
    """Partitions computed at once while writing: two per thread."""
    return max(2, 2 * scheduler.n_threads)

