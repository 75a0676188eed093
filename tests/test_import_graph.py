"""The package's modules import one another without cycles.

Every import counts, those inside functions too (a deferred import hides a
cycle from Python, not from a reader): the graph of the package's modules,
from their ``import`` statements, has no strongly connected component of
more than one module.  A module named by a string to the package's deferred
import (``lazy_module("robustclust._core._fused")``) or to
``importlib.import_module`` is imported too.
"""

import ast
from pathlib import Path

import networkx as nx

import robustclust

PACKAGE = Path(robustclust.__file__).resolve().parent
#: Functions that import the module named by their first argument (absolute).
DEFERRED_IMPORTS = {"lazy_module", "import_module"}


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph():
    """{module: the package's modules it imports}, as a directed graph."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                target = (f"{base}.{node.module}" if node.module else base) if node.level \
                    else node.module
                for alias in node.names:
                    imported = f"{target}.{alias.name}"
                    if imported in modules:
                        graph.add_edge(name, imported)
                    elif target in modules:
                        graph.add_edge(name, target)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        graph.add_edge(name, alias.name)
            elif (isinstance(node, ast.Call) and node.args
                  and getattr(node.func, "id", getattr(node.func, "attr", None))
                  in DEFERRED_IMPORTS
                  and isinstance(node.args[0], ast.Constant)
                  and node.args[0].value in modules):
                graph.add_edge(name, node.args[0].value)
    return graph


def test_the_graph_sees_the_imports():
    graph = import_graph()
    assert graph.has_edge("robustclust._core.starts", "robustclust._core.refine")
    assert graph.has_edge("robustclust._estimators.base", "robustclust._estimators.dask_fit")
    # a function-level import counts: cli.main loads the commands when it runs
    assert graph.has_edge("robustclust.cli", "robustclust.cli._commands")
    # and a deferred one: the solver's compiled pass is loaded on first use
    assert graph.has_edge("robustclust._core.solver", "robustclust._core._fused")


def test_no_import_cycles():
    cycles = [sorted(c) for c in nx.strongly_connected_components(import_graph())
              if len(c) > 1]
    assert cycles == []
