"""Every third-party package the library imports is declared in pyproject.toml.

The imports are read from the source (inside functions too: an optional
import is still an import), mapped to the distributions that provide them,
and looked up among ``[project] dependencies`` and the optional extras.
"""

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import robustclust

PACKAGE = Path(robustclust.__file__).resolve().parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"


def _normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_top_levels():
    """{top-level module: a file importing it} for the non-standard imports."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "robustclust":
                    found.setdefault(top, path.relative_to(PACKAGE.parent))
    return found


def declared_distributions():
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    return {_normal(re.match(r"[A-Za-z0-9_.-]+", r).group(0)) for r in requirements}


def test_every_imported_package_is_declared():
    providers = metadata.packages_distributions()
    declared = declared_distributions()
    missing = {}
    for top, where in imported_top_levels().items():
        # a package not installed here is named as it is imported
        distributions = providers.get(top) or [top]
        if not any(_normal(d) in declared for d in distributions):
            missing[top] = str(where)
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_the_scan_sees_the_imports_it_must():
    # the scan itself: numpy at module level, zstandard inside a function
    found = imported_top_levels()
    assert {"numpy", "scipy", "sklearn", "numba", "zstandard"} <= set(found)
    assert "os" not in found and "robustclust" not in found
