"""Signals end every command with 130 (128 + N) and one line (issue 44).

One handler path (robustclust/cli/_signals.py): inside compiled code, during
the import, for the workers of a local Dask cluster, through whatever a
library made of the KeyboardInterrupt; reproduce resumes after one.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

from cli_session import COMMAND, invoke


def write_rows(folder, n=300):
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal(size=(n, 2)), columns=["x", "y"]).to_csv(folder / "rows.csv",
                                                                      index=False)


def test_an_interruption_that_numba_turned_into_a_system_error_is_an_interruption(
        tmp_path, monkeypatch):
    # Ctrl-C inside compiled code: numba's dispatcher returns with the
    # KeyboardInterrupt set, which Python reports as a SystemError
    write_rows(tmp_path)

    def compiled(func, *args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt as exc:
            raise SystemError("CPUDispatcher(<function _steps at 0x7f>) returned a result "
                              "with an exception set") from exc

    monkeypatch.setattr("robustclust.cli._commands.run_estimator", compiled)
    # the handler in place before the command (Python's default, or SIG_IGN
    # when the suite runs as a background job) is put back after it
    before = signal.getsignal(signal.SIGINT)
    status, out, err = invoke(["fit", "rows.csv", "-k", "2", "-o", "out.csv"], tmp_path)
    assert (status, out, err) == (130, "", "robustclust fit: error: interrupted\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]
    assert signal.getsignal(signal.SIGINT) is before


def test_a_read_interrupted_by_ctrl_c_exits_130_not_1(tmp_path, monkeypatch):
    # pyarrow turns Ctrl-C into ArrowCancelled ("Operation cancelled"), an
    # Exception the Parquet reader made a data error (exit 1)
    pytest.importorskip("pyarrow")
    pd.DataFrame({"x": np.arange(10.0), "y": np.arange(10.0)}).to_parquet(tmp_path / "t.parquet")

    def cancelled(*args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            raise RuntimeError("Operation cancelled") from None

    monkeypatch.setattr(pd, "read_parquet", cancelled)
    status, out, err = invoke(["fit", "t.parquet", "-k", "2"], tmp_path)
    assert (status, out, err) == (130, "", "robustclust fit: error: interrupted\n")


@pytest.mark.slow
def test_sigterm_inside_compiled_code_that_never_returns_ends_the_command(tmp_path):
    # a nogil numba loop that does not return (as the BLAS allocator that spun
    # near a memory limit, ignoring SIGTERM for ten minutes): the watcher
    # thread ends the command STUCK_S seconds later, with the line and 143
    write_rows(tmp_path)
    script = textwrap.dedent("""
        import sys, numba
        @numba.njit(nogil=True)
        def spin(n):
            x = 0.0
            while n > 0:
                x += 1e-9
                if x < -1.0:
                    return x
            return x
        spin(0)
        import robustclust.cli._commands as commands
        commands.run_estimator = lambda *args, **kwargs: spin(1)
        print("ready", flush=True)
        sys.exit(commands.main(["fit", "rows.csv", "-k", "2"]))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == "ready\n"
    time.sleep(0.5)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (143, "",
                                           "robustclust fit: error: terminated by SIGTERM\n")
    assert time.monotonic() - start < 15


def test_the_watcher_leaves_no_temporary_file(tmp_path):
    from robustclust._files import StagedFiles, discard_all

    with StagedFiles() as staged:
        with staged.open(tmp_path / "a.csv", "w") as fh:
            fh.write("x\n")
        assert len(list(tmp_path.iterdir())) == 1  # the hidden temporary
        discard_all()
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("signum, status, line", [
    (signal.SIGINT, 130, "robustclust: error: interrupted"),
    (signal.SIGTERM, 143, "robustclust: error: terminated by SIGTERM"),
])
def test_a_signal_during_the_import_is_one_line(tmp_path, signum, status, line):
    # a table whose fit outlasts the sleep: with a warm page cache the imports can
    # end before it, and a missing file then ended the command first (exit 1)
    write_rows(tmp_path, n=200_000)
    proc = subprocess.Popen(COMMAND + ["fit", "rows.csv", "-k", "2", "--quiet"], cwd=tmp_path,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.4)  # NumPy, scikit-learn and numba take about a second
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out) == (status, "")
    assert err.strip().splitlines() in ([line], [line.replace(": error", " fit: error")])


@pytest.mark.parametrize("limit_kb", [400_000, 450_000])
def test_a_memory_limit_during_the_import_is_one_line(tmp_path, limit_kb):
    # the libraries need about 0.7 GB of address space, and an OpenBLAS that
    # cannot map its buffers while it loads spins for ever (in the loader,
    # where no signal handler runs: at 450 MB on a 2-core machine, and at 400
    # MB late in the suite): the command is refused before it loads anything
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", f"ulimit -v {limit_kb}; exec {' '.join(COMMAND)} "
                                         "fit rows.csv -k 2"],
                          cwd=tmp_path, text=True, capture_output=True, timeout=120)
    assert time.monotonic() - start < 30
    assert (proc.returncode, proc.stdout) == (1, "")
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("robustclust: error: out of memory")


def test_help_needs_no_room_for_the_libraries(tmp_path):
    proc = subprocess.run(["bash", "-c", f"ulimit -v 400000; exec {' '.join(COMMAND)} --help"],
                          cwd=tmp_path, text=True, capture_output=True, timeout=60)
    assert proc.returncode == 0 and "Commands:" in proc.stdout, proc.stderr


@pytest.mark.slow
def test_ctrl_c_to_the_terminal_group_of_a_workers_fit_is_one_line(tmp_path):
    # the terminal sends Ctrl-C to every process of its foreground group: the
    # worker processes printed 67 lines of KeyboardInterrupt tracebacks
    psutil = pytest.importorskip("psutil")
    pytest.importorskip("distributed")
    rng = np.random.default_rng(1)
    (tmp_path / "data").mkdir()
    for i in range(4):
        pd.DataFrame(rng.normal(size=(200_000, 4)), columns=list("abcd")).to_parquet(
            tmp_path / "data" / f"p{i}.parquet")
    proc = subprocess.Popen(COMMAND + ["fit", "data", "-k", "3", "-s", "100", "-o", "out",
                                       "--workers", "2"],
                            cwd=tmp_path, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    workers = {}
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            children = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            break
        spawned = [c for c in children if "--multiprocessing-fork" in " ".join(c.cmdline())]
        workers.update({c.pid: c for c in children})
        if len(spawned) >= 2:
            break
        time.sleep(0.05)
    time.sleep(4)  # the workers run the fit
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, out) == (130, "")
    assert err.strip().splitlines() == ["robustclust fit: error: interrupted"]
    time.sleep(1)
    alive = [p for p in workers.values() if p.is_running()
             and p.status() != psutil.STATUS_ZOMBIE]
    assert alive == []


def _interrupted_experiment(out_dir, quick, data_home):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from robustclust._reproduce._report import save_figure

    save_figure(Figure(figsize=(2, 2)), out_dir, "table1_first.png")
    raise KeyboardInterrupt


def test_a_ctrl_c_raised_inside_a_garbage_collection_callback_still_interrupts(capfd):
    # a signal whose KeyboardInterrupt arrives in a callback that cannot raise
    # (distributed's gc callback during a --workers fit) was printed as
    # "Exception ignored in ..." with a traceback and then lost
    import gc

    from robustclust.cli._signals import handling

    def callback(phase, info):
        if phase == "start":
            gc.callbacks.remove(callback)
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        with handling("robustclust fit"):
            gc.callbacks.append(callback)
            gc.collect()
            for _ in range(1000):  # the re-raised interrupt arrives at the next check
                time.sleep(0.001)
    assert callback not in gc.callbacks
    assert capfd.readouterr().err == ""


def test_reproduce_resumes_after_an_interruption(tmp_path, monkeypatch):
    import robustclust._reproduce.table1 as table1
    from robustclust._reproduce._report import Section

    monkeypatch.setattr(table1, "run", _interrupted_experiment)
    status, out, err = invoke(["reproduce", "--out", "report", "--only", "table1",
                               "--no-download"], tmp_path)
    assert (status, err.splitlines()[-1]) == (130, "robustclust reproduce: error: interrupted")
    assert (tmp_path / "report" / "table1_first.png").exists()
    # the rerun takes the figure for its own (it refused the folder before)
    monkeypatch.setattr(table1, "run", lambda out_dir, quick, data_home: Section(
        key="table1", title="Table I", body="done\n"))
    status, out, err = invoke(["reproduce", "--out", "report", "--only", "table1",
                               "--no-download"], tmp_path)
    assert status == 0, err
    assert "holds files that reproduce did not write" not in err


def test_reproduce_into_a_folder_it_cannot_write_is_one_line(tmp_path, monkeypatch):
    import robustclust._reproduce as reproduce

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "ro" / "README.md"))

    monkeypatch.setattr(reproduce, "run_reproduction", refused)
    status, out, err = invoke(["reproduce", "--out", "ro", "--only", "table1"], tmp_path)
    assert (status, out) == (1, "")
    assert err == (f"robustclust reproduce: error: cannot write the report into "
                   f"{tmp_path / 'ro' / 'README.md'}: Permission denied\n")


def test_a_dask_worker_that_died_is_not_an_unreadable_file():
    from robustclust.cli._dataset import worker_died

    class KilledWorker(Exception):
        pass

    line = worker_died(KilledWorker("Attempted to run task ('read', 0) on 4 different "
                                    "workers, but all those workers died"), "reading ds")
    assert line.startswith("a Dask worker process died while reading ds (killed by its "
                           "memory limit")
    assert worker_died(ValueError("x"), "reading ds") is None
