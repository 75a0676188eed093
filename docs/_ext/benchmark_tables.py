"""Sphinx extension: the benchmark scripts' result files as tables.

``.. benchmark-results::`` renders every ``*.json`` file in the folder named
by the ``benchmark_results_dir`` setting (relative to the docs' source
folder), in the order of their names; ``.. benchmark-results:: bench_kmeans``
renders one file (``bench_kmeans.json``).  The files are those that the
scripts write with ``--output FILE.json`` (format described in
``benchmarks/_results.py``); nothing in them is typed by hand.

Each file becomes a section: the script's title, what it measures, where
and when it ran (date, CPU, cores, load average before and after, versions,
commit, the command line), then its tables, each value printed with its
column's ``format``.
"""

import json
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

FORMAT = "robustclust-benchmark-results/1"
HEADING = "-"


class BenchmarkResultsError(Exception):
    """A result file that does not follow the format."""


def _cell(value, fmt):
    if value is None:
        return "–"
    if fmt and not isinstance(value, (str, bool)):
        try:
            return format(value, fmt)
        except (TypeError, ValueError):
            pass
    return str(value)


def _escape(text):
    """Plain text in a table cell or paragraph: no reST markup is read from the file."""
    text = str(text)
    for char in ("\\", "*", "`", "|", "_"):
        text = text.replace(char, "\\" + char)
    return text


def _load_text(load):
    if not load:
        return "not recorded"
    return " / ".join(f"{x:.2f}" for x in load) + " (1 / 5 / 15 min)"


def _environment_lines(result):
    env = result.get("environment", {})
    versions = ", ".join(f"{name} {v}" for name, v in env.get("versions", {}).items())
    commit = env.get("git_commit")
    commit_text = "not recorded" if not commit else commit[:10] + (
        " with uncommitted changes" if env.get("git_dirty") else "")
    rows = [
        ("Date", f"{env.get('started', '?')} to {env.get('finished', '?')} (UTC)"),
        ("Machine", f"{env.get('cpu', '?')}, {env.get('cores', '?')} cores, "
                    f"{env.get('platform', '?')}"),
        ("Load average", f"at the start {_load_text(env.get('load_average_start'))}; "
                         f"at the end {_load_text(env.get('load_average_end'))}"),
        ("Run time", f"{env.get('wall_seconds', '?')} s wall, "
                     f"{env.get('cpu_seconds', '?')} s CPU of the script's process"),
        ("Software", f"Python {env.get('python', '?')}; {versions}"),
        ("Code", commit_text),
    ]
    lines = []
    for name, text in rows:
        lines.append(f":{name}: {_escape(text)}")
    lines.append(f":Command: ``{result.get('command', '?')}``")
    return lines


def _table_lines(table):
    columns = table["columns"]
    lines = [f".. list-table:: {_escape(table.get('title', ''))}", "   :header-rows: 1", ""]
    lines.append("   * - " + _escape(columns[0]["label"]))
    lines.extend("     - " + _escape(c["label"]) for c in columns[1:])
    for row in table["rows"]:
        cells = [_escape(_cell(row.get(c["key"]), c.get("format"))) for c in columns]
        lines.append("   * - " + cells[0])
        lines.extend("     - " + cell for cell in cells[1:])
    lines.append("")
    if table.get("note"):
        lines += [_escape(table["note"]), ""]
    return lines


def result_lines(result, source):
    """reST lines of one result file (a section titled by the benchmark's name)."""
    if result.get("format") != FORMAT:
        raise BenchmarkResultsError(f"{source}: format is {result.get('format')!r}, "
                                    f"expected {FORMAT!r}")
    title = f"{result['benchmark']}: {result.get('title', '')}".rstrip(": ")
    lines = [f".. _benchmark-{result['benchmark']}:", "", _escape(title),
             HEADING * len(_escape(title)), ""]
    if result.get("description"):
        lines += [_escape(result["description"]), ""]
    lines += _environment_lines(result) + [""]
    for table in result.get("tables", []):
        lines += _table_lines(table)
    for note in result.get("notes", []):
        lines += [_escape(note), ""]
    lines.append(f"Source: ``{source}`` (written by the script).")
    lines.append("")
    return lines


class BenchmarkResults(SphinxDirective):
    """``.. benchmark-results:: [NAME]``: one result file, or all of them."""

    optional_arguments = 1
    option_spec = {"exclude": directives.unchanged}

    def run(self):
        folder = Path(self.env.srcdir) / self.config.benchmark_results_dir
        if self.arguments:
            files = [folder / f"{self.arguments[0]}.json"]
        else:
            excluded = set((self.options.get("exclude") or "").split())
            files = sorted(f for f in folder.glob("*.json") if f.stem not in excluded)
        if not files:
            return [self.state.document.reporter.warning(
                f"no benchmark result files in {folder}", line=self.lineno)]
        lines = []
        for path in files:
            self.env.note_dependency(str(path))
            try:
                result = json.loads(path.read_text(encoding="utf-8"))
                lines += result_lines(result, path.relative_to(Path(self.env.srcdir).parent))
            except (OSError, ValueError, KeyError, BenchmarkResultsError) as exc:
                return [self.state.document.reporter.error(
                    f"benchmark result file {path}: {exc}", line=self.lineno)]
        self.env.metadata[self.env.docname]["benchmark-results"] = True
        container = nodes.container()
        nested_parse_with_titles(self.state, StringList(lines, source=str(folder)), container)
        return container.children


def _always_reread(app, env, added, changed, removed):
    """Pages that list result files are read again on every build (a file may be new)."""
    return [doc for doc, meta in env.metadata.items() if meta.get("benchmark-results")]


def setup(app):
    app.add_config_value("benchmark_results_dir", "benchmarks/results", "env")
    app.add_directive("benchmark-results", BenchmarkResults)
    app.connect("env-get-outdated", _always_reread)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
