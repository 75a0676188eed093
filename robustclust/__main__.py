"""Command-line entry point: ``python -m robustclust`` or ``robustclust``.

Commands (see :mod:`robustclust.cli`)
--------------------------------------
fit
    Cluster a table (CSV, TSV, Parquet, .npy) or the nodes of a graph (GML,
    edge list) and flag its outliers; --kernel for kernel robust clustering.
predict
    Label new rows with a model saved by ``fit --save-model``.
path
    Number of outliers along the warm-started lambda path.
demo
    Reproduce Table I of the paper (see :func:`robustclust._reproduce.demo.run_demo`).
reproduce
    Reproduce Section VI of the paper into reports/paper/ (see
    :func:`robustclust._reproduce.run_reproduction`).
"""

import sys

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
