"""Peak memory of reading and fitting a numeric CSV, against the file's size (issue 44).

Each case runs ``robustclust fit`` in a fresh process (``robustclust.cli.main``
after the libraries are imported and numba has compiled): the peak resident
size of that process (``VmHWM``, reset after the imports) above its size
then, divided by the file's size.  (Not ``ru_maxrss``: a child's starts at the
resident size of the parent that forked it.)  ``read`` is the command line's reader alone (``read_input``); ``lam``
a fit at a given lambda, the one that flags about 1% of the rows (read off a
count fit of 20,000 rows in the parent: a lambda that flags every row makes
the outlier matrix, which the fit returns, as large as X); ``count`` a fit
asked for 1% outliers (the count search and the refinement).  Then a 2 GB file of NUL bytes (``truncate -s 2G``,
sparse: no disk) must be refused within 10 s using under 1 GB.

    python benchmarks/bench_memory.py [--quick]

Measured on this version (2 shared cores, README's figures for the machine):
see the issue-44 report; the reader takes about 3x the file, the fit the rest.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

from _results import Results, add_output_option

#: (rows, columns) of the tables: a wide one, where the values dominate the fit's
#: memory, and a narrow one, where the fit's per-row work arrays (N x clusters
#: products, per-row vectors of the solver) do.
SHAPES = [(100_000, 50), (1_000_000, 4)]
QUICK_SHAPES = [(20_000, 50), (200_000, 4)]
LIMIT_RATIO = 4.0

_CASE = textwrap.dedent("""
    import sys
    def status_mb(field):
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    import numpy as np
    from robustclust import RobustKMeans
    from robustclust.cli import main
    from robustclust.cli._data import read_input
    what, path, lam, p = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    W = np.random.default_rng(0).normal(size=(6000, p))  # compile the kernels of both fits
    RobustKMeans(4, lam=float(lam)).fit(W)
    RobustKMeans(4, n_outliers=60).fit(W)
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # VmHWM := VmRSS: the peak from here on
    base = status_mb("VmRSS")
    if what == "read":
        read_input(path)
        status = 0
    elif what == "lam":
        status = main(["fit", path, "-k", "4", "--lam", lam, "--quiet"])
    else:
        status = main(["fit", path, "-k", "4", "-s", "1%", "--quiet"])
    print(status, status_mb("VmHWM") - base)
""")


def write_table(path, rows, columns, seed=0):
    rng = np.random.default_rng(seed)
    block = 100_000
    with open(path, "w") as fh:
        fh.write(",".join(f"c{j}" for j in range(columns)) + "\n")
        for lo in range(0, rows, block):
            X = rng.normal(size=(min(block, rows - lo), columns)) * 10
            np.savetxt(fh, X, delimiter=",", fmt="%.6f")


def lambda_for_share(path, share=0.01, rows=20_000):
    """A lambda that flags about ``share`` of the table's rows: a count fit's on a sample."""
    import pandas as pd

    from robustclust import RobustKMeans

    X = pd.read_csv(path).to_numpy()
    sample = X[np.random.default_rng(0).choice(len(X), min(rows, len(X)), replace=False)]
    return RobustKMeans(4, n_outliers=share, random_state=0).fit(sample).lambda_


def measure(what, path, lam, columns):
    out = subprocess.run([sys.executable, "-c", _CASE, what, str(path), repr(float(lam)), str(columns)],
                         capture_output=True, text=True, check=True)
    status, above = out.stdout.split()
    return int(status), float(above)


_TIMED = textwrap.dedent("""
    import resource, subprocess, sys, time
    start = time.monotonic()
    proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    seconds = time.monotonic() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(proc.returncode, seconds, peak_kb)
    print(proc.stderr.strip())
""")


def nul_file(folder):
    """(exit status, error line, seconds, peak MB) of a fit of 2 GB of NUL bytes."""
    big = Path(folder) / "big.csv"
    big.write_bytes(b"x,y\n1,2\n")
    with open(big, "r+b") as fh:
        fh.truncate(2 << 30)
    script = Path(sys.executable).parent / "robustclust"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "robustclust"]
    # the peak of that process alone: measured by a parent of its own
    out = subprocess.run([sys.executable, "-c", _TIMED, *command, "fit", str(big), "-k", "2"],
                         capture_output=True, text=True, check=True)
    first, line = out.stdout.split("\n", 1)
    status, seconds, peak_kb = first.split()
    return (int(status), line.strip().replace(f"{folder}/", ""), float(seconds),
            int(peak_kb) / 1024)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller tables")
    add_output_option(parser)
    args = parser.parse_args(argv)
    results = Results(
        "bench_memory", __doc__.splitlines()[0],
        "Peak resident size of one robustclust fit process (VmHWM, reset after the imports "
        "and the kernels' compilation) above its size then, against the CSV file's size: "
        "the reader alone, a fit at the lambda that flags about 1% of the rows, and a fit "
        f"asked for 1% outliers (k = 4). Target: at most {LIMIT_RATIO:g} times the file.", args)
    table = results.table("Peak memory against the file's size",
                          [("rows", "rows"), ("columns", "columns"),
                           ("file_mb", "file MB", ".1f"), ("case", "case"),
                           ("peak_mb", "peak MB", ".0f"), ("ratio", "x file", ".2f"),
                           ("status", "exit")])
    ok = True
    with tempfile.TemporaryDirectory() as folder:
        print(f"{'table':>18} {'file MB':>8} {'case':>6} {'peak MB':>8} {'x file':>7}")
        for rows, columns in (QUICK_SHAPES if args.quick else SHAPES):
            path = Path(folder) / f"t{rows}x{columns}.csv"
            write_table(path, rows, columns)
            size_mb = os.path.getsize(path) / 2**20
            lam = lambda_for_share(path)
            for what in ("read", "lam", "count"):
                status, above = measure(what, path, lam, columns)
                ratio = above / size_mb
                print(f"{rows:>9} x {columns:<6} {size_mb:8.1f} {what:>6} {above:8.0f} "
                      f"{ratio:7.2f}" + ("" if status == 0 else f"  (exit {status})"))
                table.add(rows=rows, columns=columns, file_mb=size_mb, case=what,
                          peak_mb=above, ratio=ratio, status=status)
            path.unlink()
        status, line, seconds, peak_mb = nul_file(folder)
        refused = status == 1 and "NUL byte" in line
        ok = refused and seconds < 10 and peak_mb < 1024
        print(f"2 GB of NUL bytes: exit {status} in {seconds:.1f} s, peak {peak_mb:.0f} MB: "
              f"{line}")
        nul = results.table("A 2 GB file of NUL bytes (must be refused within 10 s, < 1 GB)",
                            [("status", "exit"), ("seconds", "seconds", ".1f"),
                             ("peak_mb", "peak MB", ".0f"), ("message", "message")])
        nul.add(status=status, seconds=seconds, peak_mb=peak_mb, message=line)
    results.write(args.output)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
