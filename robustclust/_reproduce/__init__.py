"""Reproduction of the experiments of Section VI of the robust clustering paper.

:func:`run_reproduction` runs every experiment, writes its figures and a
``README.md`` with the paper's numbers beside ours into one folder
(``reports/paper/`` in the repository), and returns the sections.  Each
experiment lives in its own module with one function
``run(out_dir, *, quick, data_home) -> Section``:

=============  ===============================================================
``table1``     Table I (centre RMSE, outlier precision/recall), four blobs
``path``       Figs. 2-3 (outlier norms and counts against lambda), the
               lambda range that flags exactly 80, and the path's cost
``rings``      Figs. 4-5, kernel RKM and RPC on two rings
``usps``       Table II and Fig. 6, USPS digits 0-5
``dolphins``   Fig. 7, the dolphins network
``football``   Figs. 8-9 and the ARI of the football network
=============  ===============================================================

``quick=True`` runs a subset small enough for the test suite (under two
minutes) whose :attr:`Section.checks` hold the paper's headline claims.

The folder's files are listed with their sha256 in
``.robustclust-reproduce.json`` (:data:`MANIFEST`); a later run refuses a
folder holding any other file (notes, another project's README.md, or a
report file edited since) unless ``force=True``, so that it never replaces
what it did not write.
"""

import errno
import importlib
import os
import platform
import sys
import time
from pathlib import Path

from ._manifest import MANIFEST, check_out_dir, record
from ._report import DataNotFound, Section, write_report

__all__ = ["EXPERIMENTS", "MANIFEST", "QUICK_EXPERIMENTS", "check_out_dir", "run_reproduction"]

#: Every experiment, in report order.
EXPERIMENTS = ("table1", "path", "rings", "usps", "dolphins", "football")

#: The subset run by ``quick=True``.
QUICK_EXPERIMENTS = ("table1", "path", "football")


_HEADER = """\
# Reproduction of the paper's experiments

Forero, Kekatos and Giannakis, *Robust Clustering Using Outlier-Sparsity
Regularization*, Section VI. This file and every figure beside it are written
by `make reproduce` (`robustclust reproduce`); do not edit them by hand.
Each table gives our number, the paper's and the difference (ours − paper);
where they differ, the text says why as far as we know.
"""


#: Experiments that read a real data set -> the loader's name in robustclust.datasets.
_LOADERS = {"usps": "load_usps", "dolphins": "load_dolphins", "football": "load_football"}


def _prefetch(experiments, data_home, stream):
    """Download the real data sets the experiments need into the cache, if missing.

    Failures are only reported: the experiment then says that its data was
    not found (the report shows it as not run).
    """
    from .. import datasets

    for name in experiments:
        if name not in _LOADERS:
            continue
        try:
            getattr(datasets, _LOADERS[name])(data_home, download_if_missing=True)
        except (OSError, ValueError) as exc:
            stream.write(f"reproduce: {name}: data not available ({exc})\n")


def run_reproduction(out_dir, *, quick=False, data_home=None, experiments=None,
                     download=False, stream=None, force=False):
    """Run the experiments and write ``out_dir/README.md`` and the figures.

    Parameters
    ----------
    out_dir : str or path-like
        Folder for the report; created if missing.  A folder holding files
        that no earlier reproduction wrote (see :data:`MANIFEST`) is
        refused unless ``force``; the report's own files are replaced (the
        report is generated, never edited).
    quick : bool, default=False
        Run the quick subset (:data:`QUICK_EXPERIMENTS`) with fewer
        initialisations, for the test suite.
    data_home : str or path-like, default=None
        Where the real data sets are looked for first (see
        :mod:`robustclust.datasets`).
    experiments : sequence of str, default=None
        Names from :data:`EXPERIMENTS`; default: all (or the quick subset).
    download : bool, default=False
        Download missing real data sets into the cache first (see
        :mod:`robustclust.datasets`); otherwise experiments whose data is
        not found locally are reported as not run.
    stream : file-like, default=None
        Progress lines (one per experiment); None means :data:`sys.stderr`.
    force : bool, default=False
        Write into a folder that holds other files too.

    Returns
    -------
    sections : list of Section
        One per experiment; ``section.skipped`` says why one did not run.

    Raises
    ------
    UnsafeWriteError
        ``out_dir`` holds files a reproduction did not write (and not
        ``force``), or is a file; checked before anything runs.
    """
    if experiments is None:
        experiments = QUICK_EXPERIMENTS if quick else EXPERIMENTS
    unknown = [name for name in experiments if name not in EXPERIMENTS]
    if unknown:
        raise ValueError(f"unknown experiment(s) {', '.join(map(repr, unknown))}; "
                         f"choose from {', '.join(EXPERIMENTS)}.")
    stream = sys.stderr if stream is None else stream
    out_dir = Path(out_dir)
    check_out_dir(out_dir, force=force)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "the folder is not writable", str(out_dir))
    if download:
        _prefetch(experiments, data_home, stream)
    sections = []
    start = time.perf_counter()
    for name in experiments:
        module = importlib.import_module(f"{__name__}.{name}")
        stream.write(f"reproduce: {name} ...\n")
        stream.flush()
        began = time.perf_counter()
        try:
            section = module.run(out_dir, quick=quick, data_home=data_home)
        except DataNotFound as exc:
            section = Section(key=name, title=module.TITLE, skipped=str(exc))
        section.seconds = time.perf_counter() - began
        stream.write(f"reproduce: {name} done in {section.seconds:.1f} s\n")
        sections.append(section)
    total = time.perf_counter() - start
    report = write_report(out_dir, sections, header=_HEADER,
                          footer=_footer(sections, total, quick))
    record(out_dir, [report.name] + [name for s in sections for name in s.figures])
    return sections


def _footer(sections, total, quick):
    from .. import __version__
    import numpy
    import sklearn

    rows = "\n".join(
        f"| {s.title} | {'not run' if s.skipped else f'{s.seconds:.1f}'} |" for s in sections
    )
    mode = "quick subset" if quick else "full run"
    return f"""\
## Timing

| experiment | seconds |
| --- | ---: |
{rows}
| **total** | **{total:.1f}** |

{mode}; robustclust {__version__}, numpy {numpy.__version__}, scikit-learn
{sklearn.__version__}, Python {platform.python_version()}, {platform.machine()}.
"""
