"""Pieces of the reproduction report: sections, comparison tables, figure files.

Every experiment of :mod:`robustclust._reproduce` returns one
:class:`Section`; :func:`write_report` puts them together into
``README.md`` in the output folder.  Tables that compare with the paper are
built by :func:`comparison_table` so that every number of ours stands beside
the paper's and the difference, in the same format everywhere.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._files import atomic_write
from ._manifest import record

__all__ = [
    "DataNotFound",
    "Section",
    "comparison_table",
    "markdown_table",
    "save_figure",
    "write_report",
]


class DataNotFound(RuntimeError):
    """A real data set is neither in the data folder nor downloadable."""


@dataclass
class Section:
    """One experiment's part of the report.

    Attributes
    ----------
    key : str
        Short name (``"table1"``, ``"usps"``, ...), also the stem of its figures.
    title : str
        Heading of the section.
    body : str
        Markdown: tables, explanations, links to figures (relative to the
        report folder).
    seconds : float
        Wall-clock time of the experiment.
    checks : dict of str to bool
        Headline claims of the paper and whether this run meets them; the
        quick reproduction fails when one is False.
    values : dict
        The measured numbers behind the tables, for tests and for the
        summary (plain floats, ints and lists).
    figures : list of str
        File names of the figures written (inside the report folder).
    skipped : str or None
        Why the experiment did not run (e.g. data not found), else None.
    """

    key: str
    title: str
    body: str = ""
    seconds: float = 0.0
    checks: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)
    figures: list = field(default_factory=list)
    skipped: str | None = None


def _cell(value, digits):
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{value:.{digits}f}"


def markdown_table(header, rows, *, digits=4, align=None):
    """A GitHub markdown table.

    Parameters
    ----------
    header : sequence of str
    rows : sequence of sequences
        Cells: str as is, int as is, float with ``digits`` decimals, None or
        NaN as an en dash.
    digits : int, default=4
    align : str, default=None
        One character per column, ``"l"`` or ``"r"``; default: first column
        left, the others right.
    """
    if align is None:
        align = "l" + "r" * (len(header) - 1)
    rule = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(_cell(v, digits) for v in row) + " |")
    return "\n".join(lines) + "\n"


def comparison_table(row_names, columns, ours, paper, *, digits=4, first="method"):
    """Markdown table with, for every column, our number, the paper's and the difference.

    Parameters
    ----------
    row_names : sequence of str
    columns : sequence of str
        Column group names (e.g. ``["40/240", "80/280"]``).
    ours, paper : dict
        ``ours[row][column]`` and ``paper[row][column]``: floats, or None where
        there is no number (a row the paper lacks, a method that did not run).
    digits : int, default=4
    first : str, default="method"
        Header of the first column.
    """
    header = [first]
    for col in columns:
        header += [f"{col} ours", f"{col} paper", f"{col} diff"]
    rows = []
    for name in row_names:
        row = [name]
        for col in columns:
            a = ours.get(name, {}).get(col)
            b = paper.get(name, {}).get(col)
            diff = None if a is None or b is None else a - b
            row += [a, b, None if diff is None else f"{diff:+.{digits}f}"]
        rows.append(row)
    return markdown_table(header, rows, digits=digits)


def save_figure(fig, out_dir, name):
    """Write ``fig`` as ``out_dir/name`` (PNG, 110 dpi) and return ``name``.

    The file is written to a temporary name and renamed, so an interrupted
    run never leaves half a figure; PNG metadata carry no software version,
    so regenerating unchanged figures gives byte-identical files.
    """
    with atomic_write(Path(out_dir) / name, "wb") as handle:
        fig.savefig(handle, format="png", dpi=110, bbox_inches="tight",
                    metadata={"Software": None})
    # in the folder's manifest at once: a run interrupted later (Ctrl-C) leaves
    # figures that its rerun takes for its own, where it refused the folder
    record(Path(out_dir), [name])
    return name


def write_report(out_dir, sections, *, header, footer=""):
    """Write ``out_dir/README.md`` from the sections (atomically) and return its path."""
    out_dir = Path(out_dir)
    parts = [header.rstrip() + "\n"]
    for section in sections:
        parts.append(f"\n## {section.title}\n")
        if section.skipped:
            parts.append(f"\n*Not run: {section.skipped}*\n")
            continue
        parts.append("\n" + section.body.strip() + "\n")
        parts.append(f"\n*Time: {section.seconds:.1f} s.*\n")
    if footer:
        parts.append("\n" + footer.strip() + "\n")
    text = "".join(parts)
    path = out_dir / "README.md"
    with atomic_write(path, "wb") as handle:
        handle.write(text.encode("utf-8"))
    return path
