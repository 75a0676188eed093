"""Readers and fits near a memory limit end with one line, never a kill or a spin.

Each run is the console script in a subprocess under ``ulimit -v`` (the
address space, which also bounds what BLAS and numba map), at limits around
what the started program takes: it either succeeds, or exits 1 with one line
on stderr, within a minute (the fit spun in the BLAS allocator for ten
minutes at such a limit, ignoring SIGTERM, and a 2 GB file took the machine's
23 GB).  Issue 44.
"""

import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

_SCRIPT = Path(sys.executable).parent / "robustclust"
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "robustclust"]


def _started_size():
    """kB of address space the program takes once it has imported its libraries."""
    probe = ("import robustclust.cli, numpy, threadpoolctl\n"
             "print(open('/proc/self/status').read().split('VmSize:')[1].split()[0])")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120)
    return int(out.stdout.strip())


def _under_limit(limit_kb, args, cwd, timeout=90):
    command = " ".join(COMMAND + [str(a) for a in args])
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", f"ulimit -v {limit_kb}; exec {command}"], cwd=cwd,
                          text=True, capture_output=True, timeout=timeout)
    return proc, time.monotonic() - start


def _tables(folder):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(100_000, 4)) * 10, columns=list("abcd"))
    frame.to_csv(folder / "t.csv", index=False)
    np.save(folder / "t.npy", frame.to_numpy())
    paths = ["t.csv", "t.npy"]
    try:
        frame.to_parquet(folder / "t.parquet")
        paths.append("t.parquet")
    except ImportError:
        pass
    return paths


@pytest.mark.slow
def test_readers_and_fits_near_a_memory_limit_end_with_one_line(tmp_path):
    base = _started_size()
    cases = [(path, extra) for path in _tables(tmp_path)
             for extra in ((-150, 30, 150) if path.endswith(".csv") else (30,))]
    for path, extra_mb in cases:
        limit = base + extra_mb * 1024
        proc, seconds = _under_limit(limit, ["fit", path, "-k", "4", "-s", "100",
                                             "--quiet"], tmp_path)
        where = f"{path} under ulimit -v {limit} ({extra_mb:+d} MB)"
        assert proc.returncode in (0, 1), (where, proc.returncode, proc.stderr[-500:])
        assert seconds < 60, where
        if proc.returncode == 1:
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1, (where, proc.stderr[-800:])
            assert lines[0].startswith(("robustclust fit: error: ",
                                        "robustclust: error: ")), (where, lines)
            assert "Traceback" not in proc.stderr and "internal error" not in lines[0]


@pytest.mark.slow
def test_a_2_gb_file_of_nul_bytes_is_refused_at_once(tmp_path):
    big = tmp_path / "big.csv"
    big.write_bytes(b"x,y\n1,2\n")
    with open(big, "r+b") as fh:  # sparse: no disk used
        fh.truncate(2 << 30)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.monotonic()
    proc = subprocess.run(COMMAND + ["fit", "big.csv", "-k", "2"], cwd=tmp_path, text=True,
                          capture_output=True, timeout=120)
    seconds = time.monotonic() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("robustclust fit: error: line 3 of big.csv holds a NUL byte: it is "
                           "binary data, not a text table\n")
    assert seconds < 10
    assert max(before, peak_kb) < 1 << 20  # kB: under 1 GB (the largest child so far)


def test_a_table_too_large_for_the_memory_is_refused_before_it_is_read(tmp_path,
                                                                        monkeypatch):
    from robustclust.cli import _memory, main

    (tmp_path / "t.csv").write_text("a,b\n" + "1,2\n" * 1000)
    np.save(tmp_path / "t.npy", np.zeros((1000, 2)))
    monkeypatch.setattr(_memory, "available_memory", lambda: 10_000)
    monkeypatch.chdir(tmp_path)
    for name in ("t.csv", "t.npy"):
        assert main(["fit", name, "-k", "2", "--quiet"]) == 1


def test_a_header_that_declares_more_rows_than_the_file_holds(tmp_path, capsys):
    import io

    from robustclust.cli import main

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False,
                                               "shape": (10**9, 4)})
    (tmp_path / "big.npy").write_bytes(buf.getvalue() + b"\0" * 64)
    assert main(["fit", str(tmp_path / "big.npy"), "-k", "2"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cannot read" in err
