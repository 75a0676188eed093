"""Running a command: output files, estimator calls, checks of the results.

Outputs are checked before any work (:func:`destinations`), written to
temporary files once every result is known, and published together at the
end (:func:`write_outputs`), so a command that fails writes nothing and a
file that appeared while it ran is never replaced (see
:mod:`robustclust._files`).
"""

import os
import sys
from contextlib import contextmanager
from pathlib import Path

import click
import numpy as np
import pandas as pd

from .. import _progress
from .._files import StagedFiles, UnsafeWriteError, check_destination
from ._errors import DataError, count, one_line
from ._memory import (
    BLAS_BUFFER_BYTES,
    KERNEL_MEMORY_SHARE,
    address_space_left,
    available_memory,
    fit_bytes,
    human_bytes,
    kernel_bytes,
)

TABLE_OUTPUTS = {".csv": ",", ".tsv": "\t"}
PLOT_FORMATS = (".png", ".pdf", ".svg")
_OPTION_NAMES = {"output": "-o/--output", "plot": "--plot", "saved_model": "--save-model"}
_HINT_NYSTROEM = "with --kernel, --approximation nystroem (--n-landmarks M) needs far less"


# -- files ---------------------------------------------------------------------------
def destinations(inputs, force, **paths):
    """Check every output path before any work; {name: Path} of those given."""
    given = {name: Path(p) for name, p in paths.items() if p is not None}
    resolved = {}
    for name, path in given.items():
        key = os.path.abspath(path)
        if key in resolved:
            raise click.UsageError(f"{_OPTION_NAMES[resolved[key]]} and {_OPTION_NAMES[name]} "
                                   f"name the same file {path}")
        resolved[key] = name
    if "output" in given and given["output"].suffix.lower() not in TABLE_OUTPUTS:
        raise click.BadParameter("the output file name must end in .csv or .tsv",
                                 param_hint="'-o' / '--output'")
    if "plot" in given:
        if given["plot"].suffix.lower() not in PLOT_FORMATS:
            raise click.BadParameter("the plot file name must end in "
                                     f"{', '.join(PLOT_FORMATS)}", param_hint="'--plot'")
        require_matplotlib()
    try:
        return {name: check_destination(path, inputs=inputs, force=force)
                for name, path in given.items()}
    except UnsafeWriteError as exc:
        raise DataError(str(exc)) from None


def require_matplotlib():
    """DataError with the installation hint unless matplotlib can be imported."""
    from ._figures import check_available

    try:
        check_available()
    except ImportError as exc:
        raise DataError(str(exc)) from None


def write_outputs(force, writers, replaceable=None):
    """Write ``{path: (mode, writer)}`` to temporary files, then publish them all.

    ``writer(file)`` writes a file opened in ``mode``; with mode ``"dir"``,
    ``writer(directory)`` fills a temporary directory published as ``path``
    (``replaceable`` says which existing directories ``force`` replaces, see
    :meth:`robustclust._files.StagedFiles.directory`).  Nothing is left
    behind when a writer fails, the file system refuses, or a destination
    appeared meanwhile (without ``force``): a DataError names the file.
    """
    current = None
    try:
        with StagedFiles(replace=force) as staged:
            for path, (mode, writer) in writers.items():
                current = path
                if mode == "dir":
                    with staged.directory(path, replaceable=replaceable) as directory:
                        writer(directory)
                    continue
                with staged.open(path, mode) as fh:
                    writer(fh)
            current = None
            staged.publish()
    except UnsafeWriteError as exc:
        raise DataError(str(exc)) from None
    except OSError as exc:  # publishing errors name their destination
        where = current if current is not None else (exc.filename or "the output")
        reason = exc.strerror or one_line(exc)
        raise DataError(f"cannot write {where}: {reason}; nothing was written") from None


def table_writer(frame, path):
    """(mode, writer) writing ``frame`` as CSV, or TSV for a .tsv name."""
    return "w", lambda fh: frame.to_csv(fh, index=False, sep=TABLE_OUTPUTS[path.suffix.lower()])


def figure_writer(figure, path):
    """(mode, writer) saving a matplotlib figure in the format of its suffix."""
    return "wb", lambda fh: figure.savefig(fh, format=path.suffix[1:].lower(), dpi=120)


def with_results(data, labels, mask, scores):
    """The input rows plus cluster, is_outlier and outlier_score (empty for rows left out)."""
    frame = data.output_frame()
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
def progress_bar(desc, quiet, file=None):
    """A tqdm bar on a terminal, unless quiet: the phase of the fit by name (the
    noise model, the starts, the lambda search, ...), its steps against its
    total, and the solver's iterations between phases; while the compiled
    kernels load (a first run compiles them) it says so."""
    file = sys.stderr if file is None else file
    if quiet or not file.isatty():
        yield
        return
    from tqdm import tqdm

    with tqdm(desc=desc, unit=" steps", file=file, leave=False, mininterval=0.2) as bar:
        listener = PhaseListener(bar, desc)
        with _progress.listen(listener.step, listener.phase):
            yield


class PhaseListener:
    """Drives a tqdm bar from the progress reports (:mod:`robustclust._progress`)."""

    def __init__(self, bar, desc):
        self.bar = bar
        self.desc = desc
        self.current = None
        self.showing_notice = False

    def phase(self, phase):
        if phase is not None and phase.transient:
            self.bar.set_description(f"{self.desc}: {phase.name}", refresh=True)
            self.showing_notice = True
            return
        self.current = phase
        self.showing_notice = False
        if phase is None:
            self.bar.reset(total=None)
            self.bar.set_description(self.desc)
        else:
            self.bar.reset(total=phase.total)
            self.bar.set_description(f"{self.desc}: {phase.name}")

    def step(self):
        if self.showing_notice:
            self.showing_notice = False
            name = self.current.name if self.current is not None else None
            self.bar.set_description(self.desc if name is None else f"{self.desc}: {name}")
        self.bar.update()


def run_estimator(func, *args, kernel=False):
    """Call a fitting/predicting function; its ValueErrors are data errors.

    Running out of memory is a data error too, with the Nystroem hint for
    kernels.
    """
    try:
        return func(*args)
    except ValueError as exc:
        text = one_line(exc)
        raise DataError(text if text else type(exc).__name__) from None
    except MemoryError as exc:
        raise DataError(out_of_memory(exc, kernel)) from None


def out_of_memory(exc, kernel=False):
    """The message of a MemoryError."""
    detail = one_line(exc) or "MemoryError"
    hint = f"; {_HINT_NYSTROEM}" if kernel else ""
    return f"out of memory ({detail}){hint}"


def check_rows(data, options, noun):
    """The number of rows (nodes) to cluster, at least one per cluster."""
    n_rows = int(data.used.sum())
    if n_rows < options.n_clusters:
        raise DataError(f"{count(n_rows, noun)} of {data.path} for "
                        f"{count(options.n_clusters, 'cluster')}: need at least one {noun} "
                        "per cluster")
    return n_rows


def check_fit_memory(X, options, path):
    """DataError, before the fit, when it would not fit in the memory left.

    A (non-kernel) fit takes about :func:`~._memory.fit_bytes` above its
    input; under ``ulimit -v`` the BLAS work buffers count too.  The
    estimate is the measured peak of a robust K-means fit: a fit that needs
    more still ends with one line (out of memory), but one that cannot start
    is refused before it allocates (near such a limit the BLAS library spun
    in its allocator instead of failing).
    """
    if options.kernel is not None:
        return  # the kernel's N x N matrices: choose_approximation
    n_rows, n_features = X.shape
    need = fit_bytes(n_rows, n_features, options.n_clusters)
    left = address_space_left()
    if left is not None:
        need += 2 * BLAS_BUFFER_BYTES  # NumPy's and SciPy's BLAS, one thread each
    have = available_memory()
    if have is None or need <= have:
        return
    where = " under the address-space limit (ulimit -v)" if left is not None and \
        left <= have else ""
    raise DataError(f"fitting {count(n_rows, 'row')} x {count(n_features, 'column')} of {path} "
                    f"needs about {human_bytes(need)} of memory, but {human_bytes(have)} are "
                    f"left{where}: use fewer rows or columns")


def choose_approximation(options, n_rows, *, saving, memory=None):
    """(approximation, note or None) of a kernel fit of ``n_rows`` rows.

    The approximation is None (no kernel), "exact" or "nystroem".

    Without ``--approximation``, the exact kernel is used when its fit needs
    at most :data:`KERNEL_MEMORY_SHARE` of the available memory, else the
    Nystroem approximation, and the note says why.  ``--approximation
    exact`` that cannot fit in the available memory is refused before any
    allocation.
    """
    if options.kernel is None or options.approximation == "nystroem":
        return options.approximation, None
    explicit_exact = options.approximation == "exact"
    need = kernel_bytes(n_rows, options.method)
    have = available_memory() if memory is None else memory
    if have is None:
        return options.approximation, None
    size = (f"the exact {options.kernel} kernel of {count(n_rows, 'row')} needs about "
            f"{human_bytes(need)}")
    if explicit_exact:
        if need > have:
            raise DataError(f"{size} but {human_bytes(have)} of memory are available: use "
                            "--approximation nystroem (--n-landmarks M)")
        return "exact", None
    if need <= KERNEL_MEMORY_SHARE * have:
        return "exact", None
    if saving:
        raise DataError(f"{size}, more than half the {human_bytes(have)} of memory available, "
                        "and models fitted with --approximation nystroem cannot be saved: "
                        "drop --save-model, or use fewer rows")
    if options.init == "spectral":
        raise DataError(f"{size}, more than half the {human_bytes(have)} of memory available, "
                        "and --init spectral needs the exact kernel: drop --init spectral to "
                        "use the Nystroem approximation")
    landmarks = options.n_landmarks or 100
    return "nystroem", (f"{size}, more than half the {human_bytes(have)} of memory "
                        f"available: using the Nystroem approximation with {landmarks} "
                        "landmarks (--approximation exact insists on the exact kernel)")


def check_standardizable(X, path):
    """Refuse columns whose variance overflows (--standardize would make them NaN)."""
    from sklearn.preprocessing import StandardScaler

    with np.errstate(all="ignore"):
        scaler = StandardScaler().fit(X)
    finite = np.isfinite(scaler.scale_) & np.isfinite(scaler.var_) & np.isfinite(scaler.mean_)
    bad = [str(c) for c, ok in zip(X.columns, finite) if not ok]
    if bad:
        largest = float(np.abs(X[bad[0]].to_numpy()).max())
        raise DataError(f"cannot --standardize {path}: the variance of "
                        f"{'column' if len(bad) == 1 else 'columns'} {', '.join(bad[:5])} "
                        f"overflows (values up to {largest:.3g}); divide "
                        f"{'it' if len(bad) == 1 else 'them'} by a power of ten first")


def _magnitudes(data):
    """' (|values| from 1e-05 to 1e+160, the largest in row 1, column x)'."""
    values = np.abs(data.X.to_numpy(dtype=np.float64))
    nonzero = values[values > 0]
    if nonzero.size == 0:
        return ""
    row, column = np.unravel_index(np.argmax(values), values.shape)
    where = f"row {data.used_labels[row]}, column {data.X.columns[column]}"
    return f" (|values| from {nonzero.min():.3g} to {nonzero.max():.3g}, the largest in {where})"


def check_fit(data, X, est, mask, scores, n_clusters):
    """DataError when the fit's numbers cannot be right (overflow, underflow).

    Checked: lambda is a number, the objective and the scores are finite,
    ``is_outlier`` agrees with ``outlier_score > 0``, and lambda = 0 (which
    flags every row off the centres) did not come out with nothing flagged
    on rows that are not all centres.
    """
    lam = float(est.lambda_)
    problem = None
    if np.isnan(lam):
        problem = "lambda is NaN"
    elif not np.isfinite(float(est.objective_)):
        problem = f"the objective is {float(est.objective_)}"
    elif not np.all(np.isfinite(scores)):
        problem = "some outlier scores are not finite"
    elif np.any(mask != (scores > 0)):
        problem = "the outlier flags and scores disagree"
    elif lam == 0 and not mask.any() and len(np.unique(np.asarray(X), axis=0)) > n_clusters:
        problem = "lambda is 0 yet nothing is flagged"
    if problem is None:
        return
    if data.graph is not None:
        raise DataError(f"the fit of {data.path} failed numerically: {problem}")
    raise DataError(f"the fit of {data.path} failed numerically: {problem}; its numbers"
                    f"{_magnitudes(data)} are beyond what the solver handles: check the "
                    "largest, or rescale the columns (divide them by a power of ten), and "
                    "run again")
