"""The default calls against scikit-learn's default calls: time, flagged rows, agreement.

What a user types, against what they would type instead, on the same data in
the same process, each with ``random_state=0`` and otherwise default
parameters:

======================================================  ===================================
ours                                                    the peer (scikit-learn)
======================================================  ===================================
``RobustKMeans(k)``                                     ``KMeans(k)``
``RobustKMeans(k, n_outliers=s)``                       ``KMeans(k)``
``RobustGaussianMixture(k)`` (``tied_spherical``)       ``GaussianMixture(k,
                                                        covariance_type="spherical")``
``RobustGaussianMixture(k, covariance_type="full")``    ``GaussianMixture(k)`` (full)
======================================================  ===================================

scikit-learn has no ``tied_spherical`` covariance (one variance common to all
components, our default); ``spherical`` (one variance per component) is the
nearest.

Data: scikit-learn's iris (k=3), wine (k=3), breast cancer (k=2) and digits
(k=10), each raw and standardised (``StandardScaler``), s = 5% of N rounded;
and ``make_blobs(N, n_features=32, centers=16, random_state=0)`` with 1% of
its rows (s of them) replaced by planted far points, uniform in a box three
times the data's extent (same centre) and at least three times the largest
distance of a blob point to its centre from every centre, at N = 10^3, 10^4,
10^5, 10^6 (``--sizes``).

Each case (a data set and a call) is timed ``--runs`` times, ours then the
peer's within each repetition; the table gives the medians of the process
CPU seconds (``time.process_time``, all threads) and wall seconds and the
ratios of the medians (ours / the peer's; below 1 ours is faster).  A
repetition in which a fit takes longer than ``--budget`` seconds is the last
of its case, and the case is not run at the larger sizes; the mixtures at
N = 10^6 run only with ``--mixtures-1e6``.  Before the first case each call
is fitted once on a small set, untimed, so that the cases do not include
Numba's compilation or the loading of its cache (that first fit is reported,
and the cold-start table measures it from a fresh process).

Quality, from the last repetition: the number of rows flagged
(``n_outliers_``) and its share of N; on the planted sets, the precision
and recall of the flagged rows against the planted ones and the count's
ratio to the planted count; the adjusted Rand index of our labels against
the peer's labels and against the true classes, on the rows we keep (and
the peer's against the true classes on the same rows); for
``n_outliers=s`` the l0 (trimmed) cost of eq. (3) of the paper at our
centres and at KMeans' centres (the sum of the N - s smallest squared
distances to the nearest centre).

Cold start (``--no-cold`` to skip), each command in a fresh process of the
same interpreter with ``NUMBA_CACHE_DIR`` set to a new empty folder:
``python -c "import robustclust"`` against ``import sklearn.cluster``,
``robustclust --help``, and ``robustclust fit data.csv -k 3 -o out.csv`` on
200 rows, first with the empty cache and then again with the cache that run
filled; wall seconds (medians of ``--runs``), CPU seconds and peak resident
memory of the child.

Targets checked (the "targets" column says which a row misses):

* ``RobustKMeans(k)`` and ``RobustKMeans(k, n_outliers=s)``: at most 3x the CPU
  seconds of ``KMeans(k)``, at every N;
* the mixtures: at most 2x the CPU seconds of ``GaussianMixture`` of the same
  (for the default, the nearest) covariance type;
* the default count (no ``n_outliers``) flags at most 2% of the standardised
  real sets, and on the planted sets has precision >= 0.9 and flags the
  planted count within +-20%;
* cold ``robustclust fit`` on 200 rows at most 5 s wall, ``robustclust --help``
  at most 1 s, ``import robustclust`` at most ``import sklearn.cluster`` + 0.2 s.

    python benchmarks/bench_defaults.py [--runs 3] [--sizes 1000,10000,100000,1000000]
        [--quick] [--budget 300] [--only kmeans,count,rgm,full] [--mixtures-1e6]
        [--no-real] [--no-cold] [--output FILE.json]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import (load_breast_cancer, load_digits, load_iris, load_wine,
                              make_blobs)
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.mixture import GaussianMixture
from sklearn.preprocessing import StandardScaler

from _results import Results, add_output_option
from bench_trimmed import l0_cost

from robustclust import RobustGaussianMixture, RobustKMeans

TITLE = __doc__.splitlines()[0]
SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000)
REAL = (("iris", load_iris, 3), ("wine", load_wine, 3),
        ("breast cancer", load_breast_cancer, 2), ("digits", load_digits, 10))

# The calls: key -> (ours as text, the peer's as text, ours(k, s), the peer's(k), CPU target).
CALLS = {
    "kmeans": ("RobustKMeans(k)", "KMeans(k)",
               lambda k, s: RobustKMeans(k, random_state=0),
               lambda k: KMeans(k, random_state=0), 3.0),
    "count": ("RobustKMeans(k, n_outliers=s)", "KMeans(k)",
              lambda k, s: RobustKMeans(k, n_outliers=s, random_state=0),
              lambda k: KMeans(k, random_state=0), 3.0),
    "rgm": ("RobustGaussianMixture(k)", 'GaussianMixture(k, covariance_type="spherical")',
            lambda k, s: RobustGaussianMixture(k, random_state=0),
            lambda k: GaussianMixture(k, covariance_type="spherical", random_state=0), 2.0),
    "full": ('RobustGaussianMixture(k, covariance_type="full")', "GaussianMixture(k)",
             lambda k, s: RobustGaussianMixture(k, covariance_type="full", random_state=0),
             lambda k: GaussianMixture(k, random_state=0), 2.0),
}
MIXTURES = ("rgm", "full")
DEFAULT_COUNT = ("kmeans", "rgm", "full")  # the calls whose count is the default rule
SHARE_TARGET, PRECISION_TARGET, COUNT_TOLERANCE = 0.02, 0.9, 0.2
COLD_FIT_TARGET, HELP_TARGET, IMPORT_MARGIN = 5.0, 1.0, 0.2
SLOW_REPETITION = 5.0  # seconds: a repetition this long gets a progress line on stderr


# -- data --------------------------------------------------------------------------------

class Data:
    """One data set: X, the true classes y (or None), k, s and the planted rows (or None)."""

    def __init__(self, name, X, y, k, s, planted=None, kind="real", **facts):
        self.name, self.X, self.y, self.k, self.s = name, X, y, k, s
        self.planted, self.kind, self.facts = planted, kind, facts
        self.n, self.p = X.shape


def real_sets():
    for name, loader, k in REAL:
        X, y = loader(return_X_y=True)
        X = np.ascontiguousarray(X, dtype=np.float64)
        s = int(round(0.05 * X.shape[0]))
        yield Data(f"{name}, raw", X, y, k, s)
        yield Data(f"{name}, standardised", StandardScaler().fit_transform(X), y, k, s)


def planted_blobs(n, p=32, centres=16, share=0.01, seed=0):
    """make_blobs(n, p, centres) with ``share`` of its rows replaced by far points.

    The planted rows (chosen with ``default_rng(seed)``) are uniform in the box
    of three times the data's extent around its centre, drawn again until each
    is at least three times the largest blob point's distance to its own
    centre away from every centre.  Their true class is -1.
    """
    X, y, C = make_blobs(n, n_features=p, centers=centres, random_state=0,
                         return_centers=True)
    radius = float(np.sqrt(((X - C[y]) ** 2).sum(axis=1)).max())
    lo, hi = X.min(axis=0), X.max(axis=0)
    middle, half = (lo + hi) / 2, 1.5 * (hi - lo)
    rng = np.random.default_rng(seed)
    s = int(round(share * n))
    rows = np.sort(rng.choice(n, s, replace=False))
    far, tries = np.empty((0, p)), 0
    while far.shape[0] < s:
        cand = rng.uniform(middle - half, middle + half, size=(2 * s, p))
        d = euclidean_distances(cand, C).min(axis=1)
        far = np.vstack([far, cand[d >= 3 * radius]])
        tries += 1
        if tries > 1000:
            raise RuntimeError("could not draw far points")
    far = far[:s]
    X[rows] = far
    y = y.copy()
    y[rows] = -1
    nearest = float(euclidean_distances(far, C).min())
    planted = np.zeros(n, dtype=bool)
    planted[rows] = True
    return Data(f"blobs 1e{round(math.log10(n))}" if n == 10 ** round(math.log10(n))
                else f"blobs {n}", X, y, centres, s, planted, kind="blobs",
                radius=radius, nearest=nearest)


# -- timing ------------------------------------------------------------------------------

def timed(make, X):
    """(wall s, CPU s, fitted model or None, error text or None, warning names)."""
    model = make()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            model.fit(X)
            error = None
        except Exception as exc:  # noqa: BLE001 - a benchmark reports, it does not stop
            model, error = None, f"{type(exc).__name__}: {exc}"[:120]
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    names = sorted({w.category.__name__ for w in caught})
    return wall, cpu, model, error, names


def load1():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def load_text():
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1 / 5 / 15 min)"
    except OSError:
        return "not available"


def thread_counts():
    """The thread pools the fits use, in words ('openblas 2, openmp 2, numba 2')."""
    from threadpoolctl import threadpool_info
    found = {}
    for pool in threadpool_info():
        found.setdefault(pool.get("internal_api", "?"), pool.get("num_threads"))
    try:
        import numba
        found["numba"] = numba.get_num_threads()
    except ImportError:
        pass
    return ", ".join(f"{name} {n}" for name, n in found.items())


def median(values):
    return float(np.median(values)) if values else None


def ratio(a, b):
    return a / b if a is not None and b else None


# -- quality -----------------------------------------------------------------------------

def labels_of_peer(peer, X):
    return peer.labels_ if hasattr(peer, "labels_") else peer.predict(X)


def quality(data, key, ours, peer):
    """The quality columns of a case from the last fits (ours, the peer's)."""
    q = {}
    if ours is None:
        return q
    flagged = np.asarray(ours.outlier_mask_, dtype=bool)
    q["flagged"] = int(ours.n_outliers_)
    q["share"] = q["flagged"] / data.n
    kept = ~flagged
    if data.planted is not None:
        hit = int((flagged & data.planted).sum())
        q["precision"] = hit / q["flagged"] if q["flagged"] else None
        q["recall"] = hit / int(data.planted.sum())
        q["count_ratio"] = q["flagged"] / int(data.planted.sum())
    if kept.any():
        if peer is not None:
            q["ari_peer"] = adjusted_rand_score(labels_of_peer(peer, data.X)[kept],
                                                ours.labels_[kept])
        if data.y is not None:
            truth = kept if data.planted is None else kept & ~data.planted
            q["ari_truth"] = adjusted_rand_score(data.y[truth], ours.labels_[truth])
            if peer is not None:
                q["peer_ari_truth"] = adjusted_rand_score(
                    data.y[truth], labels_of_peer(peer, data.X)[truth])
    if key == "count":
        q["ours_l0"] = l0_cost(data.X, ours.cluster_centers_, data.s)
        if peer is not None:
            q["peer_l0"] = l0_cost(data.X, peer.cluster_centers_, data.s)
            q["l0_ratio"] = ratio(q["ours_l0"], q["peer_l0"])
    return q


def misses(data, key, row):
    """The targets this row misses, in words ('' when it misses none)."""
    out = []
    target = CALLS[key][4]
    if row.get("cpu_ratio") is not None and row["cpu_ratio"] > target:
        out.append(f"CPU {row['cpu_ratio']:.1f}x > {target:g}x")
    if key in DEFAULT_COUNT and row.get("flagged") is not None:
        if data.name.endswith("standardised") and row["share"] > SHARE_TARGET:
            out.append(f"flags {row['share']:.1%} > {SHARE_TARGET:.0%}")
        if data.planted is not None:
            if row.get("precision") is None:
                out.append("precision undefined (none flagged)")
            elif row["precision"] < PRECISION_TARGET:
                out.append(f"precision {row['precision']:.2f} < {PRECISION_TARGET}")
            if abs(row["count_ratio"] - 1) > COUNT_TOLERANCE:
                out.append(f"count {row['count_ratio']:.2f}x planted")
    return "; ".join(out) if out else "met"


# -- one case ----------------------------------------------------------------------------

def run_case(data, key, args, skip_reason=None):
    """Time ``key`` on ``data`` (ours, the peer's alternately); the row's values."""
    _, _, make_ours, make_peer, _ = CALLS[key]
    row = dict(call=key, data=data.name, n=data.n, k=data.k, load_start=load1())
    if key == "count":
        row["s"] = data.s
    if skip_reason:
        row.update(runs=0, note=skip_reason, load_end=load1(), targets=None)
        return row, False
    times = {"ow": [], "oc": [], "pw": [], "pc": []}
    ours = peer = None
    notes, over = [], False
    for rep in range(args.runs):
        ow, oc, ours, o_err, o_warn = timed(lambda: make_ours(data.k, data.s), data.X)
        pw, pc, peer, p_err, p_warn = timed(lambda: make_peer(data.k), data.X)
        for name, err, warn in (("ours", o_err, o_warn), ("peer", p_err, p_warn)):
            if err and f"{name}: {err}" not in notes:
                notes.append(f"{name}: {err}")
            for w in warn:
                if f"{name}: {w}" not in notes:
                    notes.append(f"{name}: {w}")
        if not o_err:
            times["ow"].append(ow)
            times["oc"].append(oc)
        if not p_err:
            times["pw"].append(pw)
            times["pc"].append(pc)
        if ow + pw > SLOW_REPETITION:
            print(f"    {data.name} {key}: repetition {rep + 1}/{args.runs}: ours {ow:.1f} s "
                  f"wall ({oc:.1f} CPU), peer {pw:.1f} s wall ({pc:.1f} CPU)",
                  file=sys.stderr, flush=True)
        if max(ow, pw) > args.budget:
            over = True
            who = "ours" if ow > args.budget else "peer"
            notes.append(f"over budget: {who} {max(ow, pw):.3g} s > {args.budget:g} s "
                         f"({rep + 1} of {args.runs} runs; not run at larger N)")
            break
        if o_err or p_err:
            break
    row.update(runs=max(len(times["ow"]), len(times["pw"])),
               ours_cpu=median(times["oc"]), peer_cpu=median(times["pc"]),
               ours_wall=median(times["ow"]), peer_wall=median(times["pw"]))
    row["cpu_ratio"] = ratio(row["ours_cpu"], row["peer_cpu"])
    row["wall_ratio"] = ratio(row["ours_wall"], row["peer_wall"])
    row.update(quality(data, key, ours, peer))
    row["load_end"] = load1()
    row["targets"] = misses(data, key, row)
    row["note"] = "; ".join(notes) or None
    return row, over


def fmt(value, spec, width):
    if value is None:
        return f"{'-':>{width}s}"
    return f"{format(value, spec):>{width}s}"


LINE = [("call", "call", "s", 6, "<"), ("data", "data", "s", 27, "<"), ("n", "N", "d", 8), ("k", "k", "d", 3),
        ("runs", "runs", "d", 4), ("ours_cpu", "CPU s", ".3f", 9),
        ("peer_cpu", "peer CPU", ".3f", 9), ("cpu_ratio", "CPU x", ".2f", 7),
        ("ours_wall", "wall s", ".3f", 9), ("peer_wall", "peer wall", ".3f", 9),
        ("wall_ratio", "wall x", ".2f", 7), ("flagged", "flagged", "d", 7),
        ("share", "share", ".1%", 6), ("precision", "prec", ".3f", 5),
        ("recall", "recall", ".3f", 6), ("count_ratio", "cnt/pl", ".2f", 6),
        ("ari_peer", "ARI peer", ".3f", 8), ("ari_truth", "ARI y", ".3f", 6), ("peer_ari_truth", "peer y", ".3f", 6),
        ("l0_ratio", "l0 x", ".4f", 7), ("load_start", "load", ".2f", 5),
        ("load_end", "->", ".2f", 5)]


def header():
    return " ".join(f"{label:{c[4] if len(c) > 4 else '>'}{c[3]}s}" for c in LINE
                    for label in [c[1]]) + "  targets / notes"


def line(row):
    cells = []
    for key, _, spec, width, *align in LINE:
        value = row.get(key)
        if align:
            cells.append(f"{str(value):{align[0]}{width}s}")
        else:
            cells.append(fmt(value, spec, width))
    tail = "  ".join(x for x in (row.get("targets"), row.get("note")) if x)
    return " ".join(cells) + "  " + tail


def case_columns(key):
    cols = [("data", "data"), ("n", "N"), ("k", "k")]
    if key == "count":
        cols.append(("s", "s"))
    cols += [("runs", "runs"),
             ("ours_cpu", "ours CPU s", ".3f"), ("peer_cpu", "peer CPU s", ".3f"),
             ("cpu_ratio", "CPU ratio", ".2f"),
             ("ours_wall", "ours wall s", ".3f"), ("peer_wall", "peer wall s", ".3f"),
             ("wall_ratio", "wall ratio", ".2f"),
             ("flagged", "flagged"), ("share", "flagged share", ".2%"),
             ("precision", "precision", ".3f"), ("recall", "recall", ".3f"),
             ("count_ratio", "flagged / planted", ".2f"),
             ("ari_peer", "ARI vs peer", ".3f"), ("ari_truth", "ARI vs truth", ".3f"),
             ("peer_ari_truth", "peer ARI vs truth", ".3f")]
    if key == "count":
        cols += [("ours_l0", "ours l0 cost", ".6g"), ("peer_l0", "KMeans l0 cost", ".6g"),
                 ("l0_ratio", "l0 ratio", ".5f")]
    cols += [("load_start", "load at start", ".2f"), ("load_end", "load at end", ".2f"),
             ("targets", "targets"), ("note", "note")]
    return cols


def case_note(key, args):
    ours, peer, *_ = CALLS[key]
    target = CALLS[key][4]
    text = (f"{ours} against {peer}, both random_state=0 and otherwise default. "
            f"Medians of up to {args.runs} repetitions (ours, then the peer, in each); "
            f"ratios are of the medians, ours / the peer's. ")
    if key == "rgm":
        text += ("Our default covariance_type is 'tied_spherical' (one variance common to "
                 "all components), which scikit-learn does not have; its 'spherical' (one "
                 "variance per component) is the nearest. ")
    text += (f"Target: CPU ratio at most {target:g}. ")
    if key in DEFAULT_COUNT:
        text += ("The count is the default rule: target at most 2% flagged on the "
                 "standardised real sets, precision at least 0.9 and the flagged count "
                 "within 20% of the planted count on the blobs. ")
    else:
        text += ("s is 5% of N (rounded) on the real sets and the planted count on the "
                 "blobs; the l0 cost is eq. (3), the sum of the N - s smallest squared "
                 "distances to the nearest centre, at each fit's centres. ")
    text += ("Quality columns are from the last repetition; ARI is on the rows we keep "
             "(against the true classes: the kept rows that are not planted; 'peer ARI vs truth' is the peer's labels on the same rows). "
             f"The machine has {os.cpu_count()} cores and is shared with other jobs "
             "(noisy): the load average (1 min) at the start and end of each case is in "
             "the table; CPU seconds (all threads of the process) are less affected than "
             "wall seconds.")
    return text


# -- cold start --------------------------------------------------------------------------

# Started by the benchmark, this small process starts the command and waits for it, so
# that the command's peak resident memory is its own: a process's ru_maxrss counts the
# memory of the process that forked it, up to the exec, and the benchmark's is large.
LAUNCHER = """
import json, os, sys, time
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, usage = os.wait4(pid, 0)
print(json.dumps([time.perf_counter() - start, usage.ru_utime + usage.ru_stime,
                  usage.ru_maxrss, os.waitstatus_to_exitcode(status)]))
"""


def child(cmd, env, cwd):
    """(wall s, CPU s, peak RSS MiB, exit code, last line of stderr) of one fresh process.

    The times and the memory are the command's alone (started and measured by
    LAUNCHER, whose own start-up is not counted).
    """
    with tempfile.TemporaryFile() as err:
        out = subprocess.run([sys.executable, "-c", LAUNCHER, *cmd], env=env, cwd=cwd,
                             stdout=subprocess.PIPE, stderr=err, check=True)
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
    wall, cpu, rss_kb, code = json.loads(out.stdout.decode().strip().splitlines()[-1])
    return wall, cpu, rss_kb / 1024, code, tail[0][:120]


def cold_start(results, args):
    exe = sys.executable
    script = Path(exe).parent / "robustclust"
    table = results.table("Cold start: fresh processes", [
        ("what", "command"), ("cache", "Numba cache"), ("runs", "runs"),
        ("wall", "wall s", ".3f"), ("cpu", "CPU s", ".3f"), ("rss", "peak RSS MiB", ".0f"),
        ("target", "target"), ("met", "met")],
        note=(f"Each command in a fresh process of the benchmark's interpreter ({exe}), "
              "interpreter start-up included, with NUMBA_CACHE_DIR "
              "set to a new empty folder ('empty'), or to the folder that the previous "
              "'empty' run of the same command filled ('filled'); Python's own bytecode "
              "caches (.pyc) are those of the installed package. Medians of "
              f"{args.runs} runs; CPU seconds and peak resident memory are the command's own "
              "(os.wait4 in a small launcher process, whose start-up is not counted). data.csv: make_blobs(200, n_features=2, centers=3, "
              "random_state=0), columns x,y."))
    print(f"\nCold start ({args.runs} runs each, fresh processes, NUMBA_CACHE_DIR empty "
          f"unless 'filled'):", flush=True)
    print(f"{'command':46s} {'cache':7s} {'wall s':>7s} {'CPU s':>7s} {'RSS MiB':>8s}  "
          f"target", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        X, _ = make_blobs(200, n_features=2, centers=3, random_state=0)
        csv = tmp / "data.csv"
        np.savetxt(csv, X, delimiter=",", header="x,y", comments="", fmt="%.10g")
        sk_script = ("import numpy as np; from sklearn.cluster import KMeans; "
                     "X = np.loadtxt('data.csv', delimiter=',', skiprows=1); "
                     "np.savetxt('out_sk.csv', KMeans(3, random_state=0).fit_predict(X), "
                     "fmt='%d')")
        commands = [
            ("python -c pass", [exe, "-c", "pass"], False),
            ('python -c "import sklearn.cluster"', [exe, "-c", "import sklearn.cluster"],
             False),
            ('python -c "import robustclust"', [exe, "-c", "import robustclust"], False),
            ("robustclust --help", [str(script), "--help"], False),
            ("robustclust fit data.csv -k 3 -o out.csv",
             [str(script), "fit", "data.csv", "-k", "3", "-o", "out.csv"], True),
            ("python: KMeans(3) on data.csv (reference)", [exe, "-c", sk_script], False),
        ]
        measured = {}
        counter = 0
        for what, cmd, warm_too in commands:
            if not Path(cmd[0]).exists():
                table.add(what=what, cache="empty", runs=0, met="console script not found")
                print(f"{what:46s} (no {cmd[0]})", flush=True)
                continue
            samples = {"empty": [], "filled": []}
            failure = {}
            for _ in range(args.runs):
                counter += 1
                cache = tmp / f"numba-cache-{counter}"
                cache.mkdir()
                env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
                for state in (("empty", "filled") if warm_too else ("empty",)):
                    for name in ("out.csv", "out_sk.csv"):
                        (tmp / name).unlink(missing_ok=True)
                    wall, cpu, rss, code, tail = child(cmd, env, tmp)
                    if code != 0:
                        failure[state] = f"exit {code}: {tail}"
                    samples[state].append((wall, cpu, rss))
            for state, values in samples.items():
                if not values:
                    continue
                wall, cpu, rss = (float(np.median([v[i] for v in values])) for i in range(3))
                measured[(what, state)] = wall
                target, met = targets_of(what, state, wall, measured)
                if state in failure:
                    met = failure[state]
                table.add(what=what, cache=state, runs=len(values), wall=wall, cpu=cpu,
                          rss=rss, target=target, met=met)
                print(f"{what:46s} {state:7s} {wall:7.3f} {cpu:7.3f} {rss:8.0f}  "
                      f"{target or ''} {met if met not in (None, 'yes') else ''}".rstrip(),
                      flush=True)


def targets_of(what, state, wall, measured):
    if what == "robustclust fit data.csv -k 3 -o out.csv" and state == "empty":
        return f"<= {COLD_FIT_TARGET:g} s", "yes" if wall <= COLD_FIT_TARGET else "no"
    if what == "robustclust --help":
        return f"<= {HELP_TARGET:g} s", "yes" if wall <= HELP_TARGET else "no"
    if what == 'python -c "import robustclust"':
        base = measured.get(('python -c "import sklearn.cluster"', "empty"))
        if base is not None:
            limit = base + IMPORT_MARGIN
            return (f"<= import sklearn.cluster + {IMPORT_MARGIN:g} s ({limit:.3f} s)",
                    "yes" if wall <= limit else "no")
    return None, None


# -- main --------------------------------------------------------------------------------

def parse_sizes(text):
    return [int(float(x)) for x in text.split(",") if x.strip()]


def parse_only(text):
    keys = [x.strip() for x in text.split(",") if x.strip()]
    unknown = set(keys) - set(CALLS)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown call {sorted(unknown)}; "
                                         f"choose from {','.join(CALLS)}")
    return keys


def warm_up(keys):
    """Fit each call once on standardised iris (untimed in the tables); its seconds."""
    X = StandardScaler().fit_transform(load_iris().data)
    first = {}
    for key in keys:
        wall, cpu, *_ = timed(lambda: CALLS[key][2](3, 8), X)
        timed(lambda: CALLS[key][3](3), X)
        first[key] = (wall, cpu)
    return first


def main():
    parser = argparse.ArgumentParser(description=TITLE)
    parser.add_argument("--runs", type=int, default=3,
                        help="repetitions of each case and of each cold-start command "
                             "(default 3)")
    parser.add_argument("--sizes", type=parse_sizes, default=None,
                        help="N of the planted blobs, e.g. 1000,10000 "
                             "(default 1000,10000,100000,1000000)")
    parser.add_argument("--quick", action="store_true", help="--sizes 1000,10000")
    parser.add_argument("--budget", type=float, default=300.0, metavar="SECONDS",
                        help="a fit longer than this ends its case's repetitions and "
                             "skips the call at larger N (default 300)")
    parser.add_argument("--only", type=parse_only, default=list(CALLS),
                        help="which calls, of kmeans,count,rgm,full (default all)")
    parser.add_argument("--mixtures-1e6", dest="mixtures_1e6", action="store_true",
                        help="also run the mixtures at N >= 10^6")
    parser.add_argument("--no-real", action="store_true", help="skip the real data sets")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold-start table")
    add_output_option(parser)
    args = parser.parse_args()
    if args.sizes is None:
        args.sizes = list(QUICK_SIZES if args.quick else SIZES)
    results = Results(
        "bench_defaults", TITLE,
        "The call a user makes, against the scikit-learn call they would make instead: "
        "each of our estimators with random_state=0 and otherwise its defaults, against "
        "KMeans or GaussianMixture with random_state=0 and otherwise theirs, on the same "
        "data in the same process (scikit-learn's iris, wine, breast cancer and digits, "
        "raw and standardised, and make_blobs in 32 dimensions with 16 centres and 1% "
        "planted far points). Process CPU and wall seconds, their ratios (ours / "
        "scikit-learn's; below 1 ours is faster), the rows flagged and the agreement of "
        "the labels; then the cold-start figures of the command line. The targets are "
        "in the script's docstring; the 'targets' column names those a row misses.", args)

    threads = thread_counts()
    print(f"{os.cpu_count()} cores, load average {load_text()}; threads: {threads}; "
          f"runs {args.runs}, blob sizes {args.sizes}, budget {args.budget:g} s, "
          f"calls {','.join(args.only)}", flush=True)
    results.note(f"Threads (library defaults, not limited by the script): {threads}. On a "
                 "loaded 2-core machine a threaded call can be slowed far more than its "
                 "share of the cores (threads waiting on one another); compare the load "
                 "columns, and rerun a cell that stands out.")
    first = warm_up(args.only)
    for key, (wall, cpu) in first.items():
        print(f"first fit in the process of {CALLS[key][0]} (standardised iris, untimed in "
              f"the tables): {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    results.note("The first fit of each call in the process (standardised iris, before the "
                 "cases, not in the tables; Numba's compilation or the loading of its "
                 "cache): " + "; ".join(f"{CALLS[k][0]} {w:.2f} s wall, {c:.2f} s CPU"
                                        for k, (w, c) in first.items()) + ".")

    data_table = results.table("Data", [
        ("data", "data"), ("n", "N"), ("p", "p"), ("k", "k"), ("s", "s"),
        ("planted", "planted rows"), ("radius", "largest blob radius", ".3g"),
        ("nearest", "nearest planted row to a centre", ".3g")],
        note=("s is 5% of N (rounded) on the real sets and the number of planted rows on "
              "the blobs (1% of N, rows chosen by numpy.random.default_rng(0), uniform in "
              "the box of 3x the data's extent, at least 3x the largest blob radius (the "
              "largest distance of a blob point to its centre) from every centre)."))
    tables = {key: results.table(f"{CALLS[key][0]} against {CALLS[key][1]}",
                                 case_columns(key), note=case_note(key, args))
              for key in args.only}

    def sets():
        if not args.no_real:
            yield from real_sets()
        for n in args.sizes:
            yield planted_blobs(n)

    over_at = {}  # key -> the N at which it went over the budget
    print("\ncall: " + "; ".join(f"{key} = {CALLS[key][0]} against {CALLS[key][1]}"
                                  for key in args.only), flush=True)
    print(header(), flush=True)
    for data in sets():
        data_table.add(data=data.name, n=data.n, p=data.p, k=data.k, s=data.s,
                       planted=int(data.planted.sum()) if data.planted is not None else None,
                       radius=data.facts.get("radius"), nearest=data.facts.get("nearest"))
        for key in args.only:
            reason = None
            if key in MIXTURES and data.n >= 1_000_000 and not args.mixtures_1e6:
                reason = "skipped: mixtures at 10^6 run with --mixtures-1e6"
            elif data.kind == "blobs" and key in over_at:
                reason = f"skipped: over budget at N = {over_at[key]}"
            row, over = run_case(data, key, args, reason)
            if over and data.kind == "blobs":
                over_at.setdefault(key, data.n)
            print(line(row), flush=True)
            del row["call"]
            tables[key].add(**row)

    if not args.no_cold:
        cold_start(results, args)
    print(f"\nload average at the end {load_text()}", flush=True)
    results.write(args.output)


if __name__ == "__main__":
    main()
