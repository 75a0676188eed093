"""The first hour of a new user: a short path summary, labelled projections, readable
graph paths, legends in words."""

import contextlib
import io

import networkx as nx
import numpy as np
import pytest
from sklearn.datasets import load_wine

from robustclust import KernelRobustKMeans, regularization_path
from robustclust.cli import main
from robustclust.cli._summary import PATH_SHARES, summary_rows
from robustclust.graph import normalized_adjacency_kernel


def _run(args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(args)
    return status, out.getvalue().splitlines()


def test_path_prints_a_short_summary_and_the_whole_table_on_request(tmp_path):
    load_wine(as_frame=True).data.to_csv(tmp_path / "wine.csv", index=False)
    status, short = _run(["path", str(tmp_path / "wine.csv"), "-k", "3", "--standardize"])
    assert status == 0 and len(short) <= 30
    assert "--table prints every value" in short[-1]
    status, whole = _run(["path", str(tmp_path / "wine.csv"), "-k", "3", "--standardize",
                          "--table"])
    n_values = int(short[3].split("; ")[1].split()[0])  # "...; 224 values down to ..."

    def table_of(lines):
        start = next(i for i, line in enumerate(lines) if line.split() == ["lambda", "outliers"])
        return [line for line in lines[start + 1:] if len(line.split()) == 2
                and line.split()[1].isdigit()]

    whole_rows, short_rows = table_of(whole), table_of(short)
    assert len(whole_rows) == n_values > 30
    assert 3 <= len(short_rows) <= 12
    assert set(short_rows) <= set(whole_rows)  # rows of the whole table

def test_summary_rows_mark_where_the_count_reaches_each_share():
    counts = [0, 0, 1, 1, 3, 6, 12, 30, 60, 100, 100]
    rows = summary_rows(counts)
    assert rows[0] == 0 and rows[-1] == len(counts) - 1
    assert 2 in rows  # the first value that flags anything
    for share in PATH_SHARES:
        first = next(i for i, c in enumerate(counts) if c >= max(1, np.ceil(share * 100)))
        assert first in rows
    assert len(rows) <= len(PATH_SHARES) + 3


def test_graph_path_figure_ranks_the_nodes_flagged_first():
    pytest.importorskip("matplotlib")
    from robustclust.cli._figures import entry_lambdas, path_figure

    G = nx.karate_club_graph()
    K = normalized_adjacency_kernel(G)
    path = regularization_path(KernelRobustKMeans(2, kernel="precomputed", init="spectral",
                                                  random_state=0), K, n_lambdas=30)
    names = [f"n{v}" for v in G.nodes]
    fig = path_figure(path, labels=names, noun="node")
    ranking = fig.axes[0]
    dots = next(c for c in ranking.collections if c.get_gid() == "entry-lambdas")
    entry = entry_lambdas(path)
    shown = dots.get_offsets()[:, 0]
    assert np.all(np.diff(shown) <= 0)  # largest lambda first
    np.testing.assert_allclose(shown, np.sort(entry)[::-1][:len(shown)])
    ticks = [t.get_text() for t in ranking.get_yticklabels()][::-1]  # top to bottom
    assert [entry[names.index(t)] for t in ticks] == list(shown)


def test_count_path_legend_in_plain_words():
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from robustclust import RobustKMeans
    from robustclust.datasets import make_blobs_with_outliers
    from robustclust.plotting import plot_outlier_count_path

    X = make_blobs_with_outliers(n_outliers=40, random_state=0).X
    path = regularization_path(RobustKMeans(4, random_state=0), X, n_lambdas=15)
    missing = next(t for t in range(1, 60) if path.lambda_range(t) is None
                   and t < path.n_outliers.max())
    ax = plot_outlier_count_path(path, Figure().subplots(), target=missing)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith(f"the count passes {missing} between λ = ") for t in texts)


def test_the_top_level_help_is_the_groups_own_without_loading_the_commands():
    import subprocess
    import sys

    from robustclust.cli import COMMANDS
    from robustclust.cli._commands import cli

    def run(code):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**__import__("os").environ, "COLUMNS": "80"})
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    full = run("import click; from robustclust.cli._commands import PROG, cli; "
               "print(cli.get_help(click.Context(cli, info_name=PROG)))")
    for args in ([], ["--help"], ["-h"]):
        light = run("import sys; from robustclust.cli import main; "
                    f"main({args!r}); print('sklearn' in sys.modules, "
                    "'robustclust._estimators' in sys.modules)").splitlines()
        # nothing of scikit-learn or the estimators was imported to print it
        assert light[-1] == "False False"
        assert "\n".join(light[:-1]).split() == full.split()
    assert set(COMMANDS) == set(cli.commands)
