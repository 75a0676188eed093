# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m robustclust demo

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/bench_kmeans.py
	$(PY) benchmarks/bench_mixture.py
	$(PY) benchmarks/bench_path.py
	$(PY) benchmarks/bench_kernel.py

clean:
	rm -rf $(VENV) build *.egg-info robustclust.egg-info .pytest_cache
