# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The docs extra (Sphinx and its extensions), installed only for `make docs`.
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: demo test test-fast docs bench reproduce reproduce-quick clean

# The real data sets: a local copy beside the project when there is one
# (never committed), else the loaders' cache or a download.
DATA_HOME ?= $(wildcard ../shared/data)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test]"
	touch $(STAMP)

$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[docs]"
	touch $(DOCS_STAMP)

demo: $(STAMP)
	$(PY) -m robustclust demo

test: $(STAMP)
	$(PY) -m pytest -q

# The unit tests only (no reproduction or console-script sessions): the quick loop.
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow"

# The documentation site into build/docs (warnings are errors; no network at build time).
docs: $(DOCS_STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs build/docs

# Section VI of the paper into reports/paper/ (README.md + figures), < 15 min.
reproduce: $(STAMP)
	$(VENV)/bin/robustclust reproduce --out reports/paper $(if $(DATA_HOME),--data-home $(DATA_HOME))

# The quick subset (< 2 min); fails if a headline claim of the paper fails.
reproduce-quick: $(STAMP)
	$(VENV)/bin/robustclust reproduce --quick --out build/reproduce-quick $(if $(DATA_HOME),--data-home $(DATA_HOME))

bench: $(STAMP)
	$(PY) benchmarks/bench_kmeans.py
	$(PY) benchmarks/bench_mixture.py
	$(PY) benchmarks/bench_path.py
	$(PY) benchmarks/bench_kernel.py

clean:
	rm -rf $(VENV) build *.egg-info robustclust.egg-info .pytest_cache
	rm -rf docs/api/generated docs/auto_examples docs/sg_execution_times.rst
