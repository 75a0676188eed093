"""Summaries of the command line: one dict per run, shown as text or as JSON.

The commands build a summary dict (the ``--json`` output) and
:func:`format_summary` renders the same dict for people, so the two never
disagree.  The JSON lists every column; the text names as many as fit in a
line of :data:`LINE_WIDTH` characters, so that a table of 100,000 columns
still gives short lines.
"""

import json
import math

import numpy as np

from ._errors import count, short_listing, some_rows

#: Outliers listed in a summary, highest score first.
TOP_OUTLIERS = 10
#: Width of the lines that name columns: longer lists are cut in the middle.
LINE_WIDTH = 100


def cluster_sizes(labels, n_clusters):
    """Number of rows in each cluster 0..n_clusters-1 (outliers not counted)."""
    labels = np.asarray(labels)
    return np.bincount(labels[labels >= 0], minlength=n_clusters).tolist()


def top_outliers(row_labels, outlier_mask, scores, key, degrees=None):
    """The flagged rows with the highest scores.

    Returns ``[{key: label, "score": s}, ...]``, highest score first, with a
    ``"degree"`` entry before the score when ``degrees`` (one per row) is
    given, as for the nodes of a graph.
    """
    index = np.flatnonzero(outlier_mask)
    order = index[np.argsort(-scores[index], kind="stable")][:TOP_OUTLIERS]
    if degrees is None:
        return [{key: row_labels[i], "score": float(scores[i])} for i in order]
    return [{key: row_labels[i], "degree": int(degrees[i]), "score": float(scores[i])}
            for i in order]


def to_json(summary):
    """The summary as JSON text; infinite numbers become the strings "inf"/"-inf"."""
    return json.dumps(_finite(summary), indent=2)


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _num(x):
    return f"{x:.4g}"


def format_summary(summary):
    """The human-readable text of a ``fit``, ``predict`` or ``path`` summary."""
    lines = [f"{summary['command']}: {summary['method']}, "
             f"{count(summary['n_clusters'], 'cluster')}"]
    if "model" in summary and summary["command"] == "predict":
        lines.append(f"model: {summary['model']}")
    lines += _input_lines(summary)
    lines += [f"note: {note}" for note in summary.get("notes", [])]
    if summary["command"] == "path":
        lines += _path_lines(summary)
    else:
        lines += _result_lines(summary)
    for key, what in (("output", "wrote"), ("plot", "plotted"), ("saved_model", "saved model")):
        if summary.get(key):
            parts = summary.get("output_parts") if key == "output" else None
            detail = "" if parts is None else f" (Parquet dataset, {count(parts, 'part file')})"
            lines.append(f"{what} {summary[key]}{detail}")
    return "\n".join(lines) + "\n"


def _input_lines(summary):
    if summary["graph"]:
        return [f"input: {summary['input']}, {count(summary['n_rows'], 'node')}, "
                f"{count(summary['n_edges'], 'edge')}"]
    dataset = summary.get("dataset")
    files = ""
    if dataset:
        kind = {"parquet": "Parquet", "csv": "CSV", "tsv": "TSV"}[dataset["format"]]
        files = (f" ({count(dataset['n_files'], kind + ' file')}, "
                 f"{count(dataset['n_partitions'], 'partition')})")
    lines = [f"input: {summary['input']}{files}, {count(summary['n_rows'], 'row')}, "
             f"{count(summary['n_input_columns'], 'column')}",
             f"features: {short_listing(summary['columns'], LINE_WIDTH - 10)}"]
    skipped = summary.get("skipped_columns")
    if skipped:
        described = [f"{name} ({why})" for name, why in skipped.items()]
        lines.append(f"skipped columns: {short_listing(described, LINE_WIDTH - 17)}")
    dropped = summary.get("dropped_rows")
    if dropped:
        total = summary.get("n_dropped_rows", len(dropped))  # datasets: the first rows only
        lines.append(f"left out {count(total, 'row')} with missing values: "
                     f"{some_rows(dropped, total)}")
    if summary.get("scheduler"):
        lines.append(f"dask: {_scheduler_text(summary['scheduler'])}")
    return lines


def _scheduler_text(where):
    """How the summary names where a dataset fit ran."""
    if where["kind"] == "threads":
        return "threaded scheduler (in this process; --workers N starts a local cluster)"
    if where["kind"] == "local":
        return (f"local cluster (LocalCluster) of {count(where['n_workers'], 'worker')} x 1 "
                f"thread at {where['address']}, closed at the end")
    return (f"scheduler at {where['address']}, {count(where['n_workers'], 'worker')}, "
            f"{count(where['n_threads'], 'thread')}")


def _result_lines(summary):
    lines = []
    if summary["command"] == "fit":
        lines.append(f"lambda: {_num(summary['lambda'])} ({summary['lambda_rule']})")
        refined = summary.get("refined")
        what = "trimmed cost" if refined else "objective"
        lines.append(f"result: {count(summary['n_outliers'], 'outlier')}, {what} "
                     f"{_num(summary['objective'])}, {count(summary['n_iter'], 'iteration')}, "
                     f"{summary['time_s']:.2f} s")
        kmeans = summary.get("estimator") == "RobustKMeans"
        if refined and refined["unrefined_lambda"] is None:
            clusters = "K-means" if kmeans else "the mixture"
            lines.append("outliers: the points the noise model calls noise; the clusters: "
                         f"{clusters} of the others ({count(refined['steps'], 'step')})")
        elif refined:
            fit = "robust K-means fit" if kmeans else "penalized fit"
            hint = " (--unrefined for that fit)" if kmeans else ""
            lines.append(f"refined: {count(refined['steps'], 'concentration step')} from "
                         f"the {fit} at lambda {_num(refined['unrefined_lambda'])}{hint}")
    else:
        lines.append(f"result: {count(summary['n_outliers'], 'outlier')}, "
                     f"{summary['time_s']:.2f} s")
    sizes = summary["cluster_sizes"]
    what = "nodes" if summary["graph"] else "rows"
    width = max(len(what), len(str(max(sizes + [summary["n_outliers"]]))))
    lines += ["", f"cluster   {what:>{width}}"]
    lines += [f"{c:<9} {size:>{width}}" for c, size in enumerate(sizes)]
    lines.append(f"{'outliers':<9} {summary['n_outliers']:>{width}}")
    top = summary.get("top_outliers")
    if top:
        key = "node" if summary["graph"] else "row"
        width = max(len(key), *(len(str(t[key])) for t in top))
        if "degree" in top[0]:
            lines += ["", "top outliers by score", f"{key:<{width}}  degree  score"]
            lines += [f"{str(t[key]):<{width}}  {t['degree']:>6}  {_num(t['score'])}"
                      for t in top]
        else:
            lines += ["", "top outliers by score", f"{key:<{width}}  score"]
            lines += [f"{str(t[key]):<{width}}  {_num(t['score'])}" for t in top]
    return lines


def _path_lines(summary):
    lams, counts = summary["lambdas"], summary["n_outliers"]
    noun = "node" if summary["graph"] else "row"
    values = f"{count(len(lams), 'value')} down to {_num(lams[-1])}"
    if summary["lambda_max_given"]:
        head = f"lambda: {count(len(lams), 'value')} from {_num(lams[0])} down to " \
               f"{_num(lams[-1])}"
    elif summary["lambda_max_flags"] == 0:
        head = f"lambda_max: {_num(summary['lambda_max'])} (nothing is flagged above it); " \
               f"{values}"
    else:
        flagged = summary["lambda_max_flags"]
        start = ("which flags none" if counts[0] == 0
                 else f"which still flags {count(counts[0], noun)}")
        head = (f"lambda_max: {_num(summary['lambda_max'])} flags "
                f"{count(flagged, noun)}, so the grid starts higher, at {_num(lams[0])}, "
                f"{start}; {values}")
    digits = _distinguishing_digits(lams)
    shown = [f"{lam:.{digits}g}" for lam in lams]
    rows = range(len(lams)) if summary.get("whole_table") else summary_rows(counts)
    width = max(9, *(len(shown[i]) for i in rows))
    lines = [f"{head}; {summary['time_s']:.2f} s", "", f"{'lambda':>{width}}  outliers"]
    lines += [f"{shown[i]:>{width}}  {counts[i]:>8}" for i in rows]
    if len(rows) < len(lams):
        lines += ["", f"{len(rows)} of the {len(lams)} values: where the count first reaches "
                      "a share of the rows; --table prints every value, -o FILE.csv writes "
                      "them"]
    return lines


#: The shares of the rows at which the short path table shows the count reached.
PATH_SHARES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def summary_rows(counts):
    """Rows of the short path table: the first and the last value, the first that
    flags anything, and the first that reaches each share of ``PATH_SHARES`` of the
    largest count (the grid runs from lambda_max down)."""
    counts = [int(c) for c in counts]
    rows = {0, len(counts) - 1}
    top = max(counts)
    marks = [1] + [max(1, math.ceil(share * top)) for share in PATH_SHARES]
    for mark in marks:
        reached = [i for i, c in enumerate(counts) if c >= mark]
        if reached:
            rows.add(reached[0])
    return sorted(rows)


def _distinguishing_digits(values, least=4, most=12):
    """Significant digits (at least ``least``) that tell neighbouring values apart."""
    for digits in range(least, most + 1):
        shown = [f"{v:.{digits}g}" for v in values]
        if all(a != b for a, b in zip(shown, shown[1:])):
            return digits
    return most
