"""Result files of the benchmark scripts: one JSON format, read by the docs.

A script that takes ``--output FILE.json`` (:func:`add_output_option`) keeps
what it prints in a :class:`Results` as well and writes it at the end; the
documentation's benchmark page (``docs/_ext/benchmark_tables.py``) turns every
file in ``docs/benchmarks/results/`` into tables, so a new benchmark needs no
change to the docs, only a file.

The file (``"format": "robustclust-benchmark-results/1"``)::

    {
      "format": "robustclust-benchmark-results/1",
      "benchmark": "bench_kmeans",            # the script's name
      "title": "...",                         # its docstring's first line
      "description": "...",                   # what the tables measure, in words
      "command": "python benchmarks/bench_kmeans.py --runs 3 ...",
      "parameters": {"n": 200000, ...},       # the parsed command-line options
      "environment": {                        # where and when it ran
        "started": "2026-12-01T21:40:00+00:00", "finished": "...",
        "wall_seconds": 41.2, "cpu_seconds": 60.3,
        "cpu": "Intel(R) Xeon(R) ...", "cores": 2, "platform": "Linux-...",
        "load_average_start": [0.9, 0.6, 0.4], "load_average_end": [...],
        "python": "3.11.7", "versions": {"robustclust": "0.1.0", "numpy": ...},
        "git_commit": "46554ed...", "git_dirty": false
      },
      "tables": [
        {"title": "...", "note": "...",
         "columns": [{"key": "dtype", "label": "dtype"},
                     {"key": "ratio", "label": "ratio", "format": ".2f"}],
         "rows": [{"dtype": "float64", "ratio": 0.44}, ...]}
      ],
      "notes": ["..."]
    }

Values are stored as measured (floats unrounded); ``format`` is the format
specification the page uses to print a column (Python's ``format``), and a
missing value (None) prints as a dash.
"""

import datetime
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

FORMAT = "robustclust-benchmark-results/1"
PACKAGES = ("robustclust", "numpy", "scipy", "scikit-learn", "numba", "dask")


def add_output_option(parser):
    """Add ``--output FILE.json`` to an :class:`argparse.ArgumentParser`."""
    parser.add_argument("--output", metavar="FILE.json", default=None,
                        help="also write the results as JSON (benchmarks/_results.py), "
                             "e.g. into docs/benchmarks/results/ for the documentation")
    return parser


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _git(*args):
    try:
        out = subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent.parent,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _versions():
    found = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


class Table:
    """One table of a result file: columns (key, label, format) and rows of values."""

    def __init__(self, title, columns, note=None):
        self.title = title
        self.note = note
        self.columns = []
        for column in columns:
            key, label, *fmt = column
            entry = {"key": key, "label": label}
            if fmt and fmt[0]:
                entry["format"] = fmt[0]
            self.columns.append(entry)
        self.rows = []

    def add(self, **values):
        keys = {c["key"] for c in self.columns}
        unknown = set(values) - keys
        if unknown:
            raise KeyError(f"no column {sorted(unknown)} in table {self.title!r}")
        self.rows.append({c["key"]: _plain(values.get(c["key"])) for c in self.columns})

    def as_dict(self):
        out = {"title": self.title, "columns": self.columns, "rows": self.rows}
        if self.note:
            out["note"] = self.note
        return out


def _plain(value):
    """A JSON value: numpy scalars to Python numbers."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    return value


class Results:
    """What a benchmark run measured, with where and when; :meth:`write` saves it.

    Create it when the run starts (the start time and load average are taken
    then), add tables and rows as the script prints them, call :meth:`write`
    at the end (nothing is written when ``path`` is None).
    """

    def __init__(self, benchmark, title, description, args=None):
        self.benchmark = benchmark
        self.title = title
        self.description = description
        self.parameters = {k: _plain(v) for k, v in vars(args).items()
                           if k != "output"} if args is not None else {}
        self.tables = []
        self.notes = []
        self._started = datetime.datetime.now(datetime.timezone.utc)
        self._wall = time.perf_counter()
        self._cpu = time.process_time()
        self._load_start = _load()

    def table(self, title, columns, note=None):
        """A new :class:`Table`; ``columns`` are (key, label) or (key, label, format)."""
        table = Table(title, columns, note)
        self.tables.append(table)
        return table

    def note(self, text):
        self.notes.append(text)

    def as_dict(self):
        argv = list(sys.argv[1:])
        if "--output" in argv:  # where the file went is not part of what was measured
            i = argv.index("--output")
            del argv[i:i + 2]
        argv = [a for a in argv if not a.startswith("--output=")]
        script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else self.benchmark
        return {
            "format": FORMAT,
            "benchmark": self.benchmark,
            "title": self.title,
            "description": self.description,
            "command": " ".join(["python", f"benchmarks/{script}", *argv]),
            "parameters": self.parameters,
            "environment": {
                "started": self._started.isoformat(timespec="seconds"),
                "finished": datetime.datetime.now(datetime.timezone.utc)
                .isoformat(timespec="seconds"),
                "wall_seconds": round(time.perf_counter() - self._wall, 1),
                "cpu_seconds": round(time.process_time() - self._cpu, 1),
                "cpu": _cpu_model(),
                "cores": os.cpu_count(),
                "platform": platform.platform(),
                "load_average_start": self._load_start,
                "load_average_end": _load(),
                "python": platform.python_version(),
                "versions": _versions(),
                "git_commit": _git("rev-parse", "HEAD"),
                "git_dirty": bool(_git("status", "--porcelain", "--", "robustclust",
                                       "benchmarks")),
            },
            "tables": [t.as_dict() for t in self.tables],
            "notes": self.notes,
        }

    def write(self, path):
        """Write the JSON file (a temporary file renamed into place); None: nothing."""
        if path is None:
            return None
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(self.as_dict(), indent=1, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        os.replace(tmp, path)
        print(f"wrote {path}")
        return path
