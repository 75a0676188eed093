"""Record the characterization fits of one version of the library.

Usage (run against the version to record, e.g. a worktree of an older commit)::

    PYTHONPATH=/path/to/that/checkout python tests/characterization/record.py OUT.npz

Each array is stored as ``<case>/<attribute>``.  Warnings raised by a fit are
recorded as ``<case>/warnings`` (their categories and messages).
"""

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import cases  # noqa: E402


def main(out):
    arrays = {}
    start = time.perf_counter()
    for name in cases.ALL:
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = cases.run(name)
        for key, value in result.items():
            arrays[f"{name}/{key}"] = value
        arrays[f"{name}/warnings"] = np.array(
            sorted({f"{w.category.__name__}: {w.message}" for w in caught}), dtype=str)
        print(f"{name:28s} {time.perf_counter() - t0:6.2f} s", flush=True)
    np.savez_compressed(out, **arrays)
    print(f"{len(cases.ALL)} cases in {time.perf_counter() - start:.1f} s -> {out}")


if __name__ == "__main__":
    main(sys.argv[1])
