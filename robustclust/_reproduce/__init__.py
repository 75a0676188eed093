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
import hashlib
import importlib
import json
import os
import platform
import sys
import time
from pathlib import Path

from .._files import UnsafeWriteError, atomic_write
from ._report import DataNotFound, Section, write_report

__all__ = ["EXPERIMENTS", "MANIFEST", "QUICK_EXPERIMENTS", "check_out_dir", "run_reproduction"]

#: Every experiment, in report order.
EXPERIMENTS = ("table1", "path", "rings", "usps", "dolphins", "football")

#: The subset run by ``quick=True``.
QUICK_EXPERIMENTS = ("table1", "path", "football")

#: The list of the files a reproduction wrote, in its folder.
MANIFEST = ".robustclust-reproduce.json"

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


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _manifest(out_dir):
    """{file name: sha256} of the files an earlier reproduction wrote into ``out_dir``."""
    try:
        files = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return files if isinstance(files, dict) else {}


def _foreign_files(out_dir):
    """Names of the entries of ``out_dir`` that no earlier reproduction wrote as they are."""
    ours = _manifest(out_dir)
    foreign = []
    for entry in sorted(out_dir.iterdir()):
        if entry.name == MANIFEST:
            continue
        if (entry.is_file() and not entry.is_symlink() and entry.name in ours
                and ours[entry.name] == _sha256(entry)):
            continue
        foreign.append(entry.name)
    return foreign


def check_out_dir(out_dir, *, force=False):
    """Refuse an output folder holding files a reproduction did not write.

    Raises
    ------
    UnsafeWriteError
        ``out_dir`` is a file, or (unless ``force``) holds an entry that is
        not in its :data:`MANIFEST` with the same content.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UnsafeWriteError(f"{out_dir} is not a directory")
    if force or not out_dir.exists():
        return
    foreign = _foreign_files(out_dir)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more"
                                          if len(foreign) > 5 else "")
        raise UnsafeWriteError(
            f"{out_dir} holds files that reproduce did not write ({shown}): choose a new or "
            "empty --out folder, or use --force to write beside them (files with the "
            "report's names are then replaced)")


def _record(out_dir, written):
    """Add the files just written to the folder's manifest (dropping stale entries)."""
    files = {name: digest for name, digest in _manifest(out_dir).items()
             if (out_dir / name).is_file() and _sha256(out_dir / name) == digest}
    files.update({name: _sha256(out_dir / name) for name in written})
    text = json.dumps({"written_by": "robustclust reproduce", "files": dict(sorted(
        files.items()))}, indent=1) + "\n"
    with atomic_write(out_dir / MANIFEST, "wb") as handle:
        handle.write(text.encode("utf-8"))


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
    _record(out_dir, [report.name] + [name for s in sections for name in s.figures])
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
