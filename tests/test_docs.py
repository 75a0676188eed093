"""The documentation's sources cover the package (without building the site).

``make docs`` builds the site; these checks read its sources only, so that a
new public name, command or benchmark result that the site would miss fails
``make test``, which has no Sphinx installed.
"""

import ast
import importlib
import json
import re
from pathlib import Path

import click
import pytest

import robustclust
from robustclust.cli import cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
API = DOCS / "api"
CLI_PAGES = DOCS / "cli"
EXAMPLES = ROOT / "examples"
RESULTS = DOCS / "benchmarks" / "results"
PUBLIC_MODULES = ["robustclust.datasets", "robustclust.graph", "robustclust.metrics",
                  "robustclust.plotting"]

DIRECTIVE = re.compile(r"^\.\. (?:py:)?(\w+)::\s*(\S*)")


def documented_names():
    """{module: names} listed in the API pages' autosummary tables and object directives."""
    found = {}
    for page in sorted(API.glob("*.rst")):
        module = None
        in_autosummary = False
        for line in page.read_text(encoding="utf-8").splitlines():
            match = DIRECTIVE.match(line)
            if match:
                kind, argument = match.groups()
                in_autosummary = kind == "autosummary"
                if kind in ("currentmodule", "module", "automodule"):
                    module = argument
                elif kind in ("data", "autodata", "autofunction", "autoclass", "function",
                              "class", "exception", "autoexception"):
                    found.setdefault(module, set()).add(argument.split(".")[-1])
                continue
            if in_autosummary:
                stripped = line.strip()
                if not stripped or stripped.startswith(":"):
                    continue
                if not line.startswith("   "):
                    in_autosummary = False
                    continue
                found.setdefault(module, set()).add(stripped.split(".")[-1])
    return found


def public_names(module_name):
    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        return set(module.__all__)
    return {name for name, value in vars(module).items()
            if not name.startswith("_") and callable(value)
            and getattr(value, "__module__", None) == module_name}


def test_every_name_of_robustclust_all_is_in_the_api_reference():
    missing = set(robustclust.__all__) - documented_names().get("robustclust", set())
    assert not missing, f"add {sorted(missing)} to docs/api/index.rst"


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_name_of_the_public_modules_is_in_the_api_reference(module_name):
    names = public_names(module_name)
    assert names, module_name
    missing = names - documented_names().get(module_name, set())
    assert not missing, f"add {sorted(missing)} of {module_name} to docs/api/"


def test_the_api_reference_names_only_what_exists():
    for module_name, names in documented_names().items():
        module = importlib.import_module(module_name)
        for name in names:
            assert hasattr(module, name), f"docs/api/ names {module_name}.{name}"


def commands(group, prefix=()):
    """(path of names, command) of every command under a click group."""
    for name, command in sorted(group.commands.items()):
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from commands(command, (*prefix, name))


CLICK = re.compile(r"^\.\. click:: (\S+):(\S+)\s*$", re.M)


def click_pages():
    """{page: [(module, attribute, :commands: option or None)]} of the CLI pages."""
    pages = {}
    for page in sorted(CLI_PAGES.glob("*.rst")):
        text = page.read_text(encoding="utf-8")
        for match in CLICK.finditer(text):
            rest = text[match.end():].split("\n\n", 1)[0]
            listed = re.search(r":commands:\s*(.+)", rest)
            pages.setdefault(page.stem, []).append(
                (match.group(1), match.group(2),
                 [c.strip() for c in listed.group(1).split(",")] if listed else None))
    return pages


def test_every_command_has_a_reference_page():
    referenced = set()
    for entries in click_pages().values():
        for module_name, attribute, listed in entries:
            obj = importlib.import_module(module_name)
            for part in attribute.split("."):
                obj = getattr(obj, part)
            assert isinstance(obj, click.Command), f"{module_name}:{attribute}"
            if obj is cli:
                continue  # the group's own page lists its commands, it documents none
            referenced.add(obj)
    missing = [" ".join(path) for path, command in commands(cli) if command not in referenced]
    assert not missing, f"add a page to docs/cli/ for: {missing}"


def test_every_command_page_is_in_the_cli_index():
    index = (CLI_PAGES / "index.rst").read_text(encoding="utf-8")
    listed = set(re.findall(r"^   (\w[\w-]*)\s*$", index, re.M))
    pages = {page.stem for page in CLI_PAGES.glob("*.rst")} - {"index"}
    assert pages <= listed, f"add {sorted(pages - listed)} to docs/cli/index.rst"


def test_the_gallery_has_at_least_six_examples_each_with_a_title():
    examples = sorted(EXAMPLES.glob("plot_*.py"))
    assert len(examples) >= 6, [e.name for e in examples]
    assert (EXAMPLES / "README.txt").is_file()
    for example in examples:
        docstring = ast.get_docstring(ast.parse(example.read_text(encoding="utf-8")))
        assert docstring, f"{example.name} needs a module docstring (its gallery title)"
        title, underline = docstring.splitlines()[:2]
        assert set(underline) == {"="} and len(underline) >= len(title), example.name


def test_the_gallery_examples_need_no_data_files():
    for example in EXAMPLES.glob("plot_*.py"):
        text = example.read_text(encoding="utf-8")
        for loader in ("load_usps", "load_dolphins", "load_football", "shared/data"):
            assert loader not in text, f"{example.name} uses {loader}"


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.name)
def test_benchmark_result_files_say_where_and_when(path):
    result = json.loads(path.read_text(encoding="utf-8"))
    assert result["format"] == "robustclust-benchmark-results/1"
    assert path.stem == result["benchmark"]
    env = result["environment"]
    for key in ("started", "cpu", "cores", "load_average_start", "load_average_end"):
        assert env.get(key) is not None, key
    assert result["tables"], path.name
    for table in result["tables"]:
        keys = [c["key"] for c in table["columns"]]
        assert table["rows"] and all(set(row) == set(keys) for row in table["rows"])


def test_the_benchmark_page_renders_the_result_files():
    page = (DOCS / "benchmarks" / "index.rst").read_text(encoding="utf-8")
    assert ".. benchmark-results::" in page
    assert list(RESULTS.glob("*.json")), "no benchmark result files"


def test_the_build_needs_no_network():
    conf = (DOCS / "conf.py").read_text(encoding="utf-8")
    assert "sphinx.ext.intersphinx" not in conf and "intersphinx_mapping" not in conf
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "sphinx-build -W --keep-going -b html docs build/docs" in makefile
