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

:func:`main` first checks that ``ulimit -v`` leaves room to load the
libraries (an OpenBLAS that cannot map its buffers while it loads retries
for ever), then imports the command line (NumPy, scikit-learn, numba: about
a second) under the statuses of its commands: Ctrl-C meanwhile ends the
program with 130 and "robustclust: error: interrupted", SIGTERM / SIGHUP
with 128 + N, and running out of memory with 1 and one line, never a
traceback.  This module and the package's ``__init__`` import nothing heavy
before that.
"""

import os
import signal
import sys

__all__ = ["main"]


def _spawned_worker():
    """Whether this import runs in a process that multiprocessing's spawn is
    starting (it imports the parent's main module first, under ``__mp_main__``,
    while the process object is ``_inheriting``: multiprocessing's own test
    for "importing main in a child")."""
    if __name__ == "__mp_main__":
        return True
    process = sys.modules.get("multiprocessing.process")
    return bool(process is not None
                and getattr(process.current_process(), "_inheriting", False))


if _spawned_worker():
    # a worker process of a command (the local Dask cluster of --workers):
    # multiprocessing's spawn runs the command's main module in it first.  A
    # Ctrl-C reaches every process of the terminal's foreground group, and
    # each worker printed its KeyboardInterrupt traceback (67 lines) before
    # the command's "interrupted": the command closes its workers, so they
    # ignore it (Python and asyncio then install no handler of their own).
    signal.signal(signal.SIGINT, signal.SIG_IGN)

_PROG = "robustclust"


class _Signalled(BaseException):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise(signum, frame):
    raise _Signalled(signum)


def _import_cli(args):
    """The command line's ``main``, imported with SIGINT, SIGTERM and SIGHUP raising
    (its commands too, unless ``args`` ask for the group's help or version,
    which :mod:`robustclust.cli` answers without them)."""
    names = [name for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)]
    previous = {}
    try:
        for name in names:
            previous[name] = signal.signal(getattr(signal, name), _raise)
        from . import cli

        if args not in cli.LIGHT_ARGS:
            import importlib

            importlib.import_module(".cli._commands", __package__)
        run = cli.main
    finally:
        for name, handler in previous.items():
            signal.signal(getattr(signal, name), handler)
    return run


def _error(message):
    sys.stderr.write(f"{_PROG}: error: {message}\n")
    sys.stderr.flush()


#: Address space the command line takes once its libraries are loaded: about
#: this much plus ``_START_BYTES_PER_THREAD`` per BLAS thread (measured on a
#: 2-core machine: 635 MB with one OpenBLAS thread, 715 MB with two; NumPy
#: and SciPy each bring an OpenBLAS that maps a 32 MB buffer per thread).
_START_BYTES = 600 << 20
_START_BYTES_PER_THREAD = 80 << 20


def _blas_threads():
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _room_to_start():
    """None, or (limit, need) in bytes when ``ulimit -v`` leaves too little address
    space to load the libraries.

    An OpenBLAS that cannot map its buffers while it loads retries for ever
    (a spin in the dynamic loader that no signal handler can end), so the
    address space is reserved once, and released, before anything is loaded.
    """
    limit = _address_space_limit()
    if limit is None:
        return None
    need = _START_BYTES + _START_BYTES_PER_THREAD * _blas_threads()
    try:
        with open("/proc/self/status") as status:
            used = next(int(line.split()[1]) << 10 for line in status
                        if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        used = 0
    import mmap

    try:
        mmap.mmap(-1, max(need - used, 1 << 20)).close()
    except (OSError, ValueError, OverflowError):
        return limit, need
    return None


def main(argv=None):
    """Run the ``robustclust`` command line (see :func:`robustclust.cli.main`)."""
    from .cli import LIGHT_ARGS  # (robustclust.cli itself loads nothing heavy)

    args = sys.argv[1:] if argv is None else list(argv)
    short = _room_to_start() if args not in LIGHT_ARGS else None
    if short is not None:
        limit, need = short
        one = _START_BYTES + _START_BYTES_PER_THREAD
        _error(f"out of memory while starting: ulimit -v allows {limit >> 20} MB of address "
               f"space, and loading the libraries takes about {need >> 20} MB with "
               f"{_blas_threads()} BLAS threads ({one >> 20} MB with OPENBLAS_NUM_THREADS=1)")
        return 1
    try:
        run = _import_cli(args)
    except (_Signalled, KeyboardInterrupt) as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        _error("interrupted" if signum == signal.SIGINT
               else f"terminated by {signal.Signals(signum).name}")
        return 128 + int(signum)
    except MemoryError:
        _error("out of memory while starting (importing NumPy, scikit-learn and numba)")
        return 1
    except (ImportError, OSError) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        limit = _address_space_limit()
        if limit is not None:  # a library that could not map itself under ulimit -v
            _error(f"out of memory while starting: ulimit -v allows {limit >> 20} MB of "
                   f"address space, too little to load the libraries ({text})")
        elif any(word in text.lower() for word in ("memory", "failed to map")) \
                or getattr(exc, "errno", None) == 12:
            _error(f"out of memory while starting ({text})")
        else:
            _error(f"cannot start: {text}")
        return 1
    return run(args)


def _address_space_limit():
    """The ``ulimit -v`` (RLIMIT_AS) of this process in bytes, or None."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, ValueError, OSError):
        return None
    return None if soft in (resource.RLIM_INFINITY, -1) else soft


if __name__ == "__main__":
    sys.exit(main())
