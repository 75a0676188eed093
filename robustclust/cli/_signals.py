"""Signals of the command line: one path from a signal to the exit status.

Every command runs inside :func:`handling` (see ``robustclust.cli.main``):

* SIGINT (Ctrl-C), SIGTERM and SIGHUP are recorded (:func:`received`) and
  raise KeyboardInterrupt or :class:`Terminated` in the main thread, which
  unwinds the command (temporary files are removed on the way);
* whatever exception then reaches ``main`` -- KeyboardInterrupt itself, or
  what a library made of it: a ``SystemError`` of numba's dispatcher ("returned
  a result with an exception set") when the signal arrived inside compiled
  code, pyarrow's "Operation cancelled", a reader's DataError -- the command
  ends with 130 (128 + N for signal N) and one line, "interrupted" or
  "terminated by SIGTERM";
* a watcher thread learns of the signal at once (``signal.set_wakeup_fd``),
  also while the main thread runs compiled code that releases the GIL and
  does not return (a BLAS allocator that spins near a memory limit ignored
  SIGTERM for ten minutes): if the main thread has not reached Python after
  :data:`STUCK_S` seconds, or has not finished its cleanup after
  :data:`CLEANUP_S` (closing a Dask cluster that hangs), the watcher removes
  the temporary files, kills the child processes, writes the line and exits
  with the same status.

The start of the program (importing NumPy, scikit-learn, numba) is covered by
``robustclust.__main__``, which imports the command line under the same
statuses.
"""

import _thread
import multiprocessing
import os
import signal
import sys
import threading
from contextlib import contextmanager

#: The signals a command handles.
SIGNAL_NAMES = ("SIGINT", "SIGTERM", "SIGHUP")
#: Seconds the main thread has to get back to Python after a signal.
STUCK_S = 5.0
#: Seconds an interrupted command has to finish unwinding once it has.
CLEANUP_S = 30.0
#: Seconds after a signal's exception was lost in a callback that cannot raise
#: until it is raised again in the main thread.
RERAISE_S = 0.01


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds the command (temporary files are removed)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def status_of(signum):
    """The exit status of a command ended by signal ``signum``: 130, 143, 129."""
    return 128 + int(signum)


def message_of(signum):
    """'interrupted' (SIGINT) or 'terminated by SIGTERM'."""
    if signum == signal.SIGINT:
        return "interrupted"
    return f"terminated by {signal.Signals(signum).name}"


class _State:
    def __init__(self, prefix, reported, cleanup_s):
        self.prefix = prefix
        self.reported = reported
        self.cleanup_s = cleanup_s
        self.received = []
        self.handled = threading.Event()
        self.finished = threading.Event()


_STATE = None


def received():
    """The first signal the running command received, or None."""
    state = _STATE
    return state.received[0] if state is not None and state.received else None


def record(signum):
    """Note a signal that another handler took (the command still ends by it)."""
    state = _STATE
    if state is not None:
        state.received.append(signum)
        state.handled.set()


def in_chain(exc):
    """The signal an exception stands for: KeyboardInterrupt (SIGINT) or
    :class:`Terminated` anywhere in its chain (``__cause__``/``__context__``),
    or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt):
            return signal.SIGINT
        if isinstance(exc, Terminated):
            return exc.signum
        exc = exc.__cause__ or exc.__context__
    return None


def _raise_again(state, signum):
    """The signal once more in the main thread, unless the command has ended."""
    if not state.finished.is_set():
        _thread.interrupt_main(signum)


def _handler(signum, frame):
    state = _STATE
    if state is None:  # pragma: no cover - restored before the state goes
        raise KeyboardInterrupt
    first = not state.received
    state.received.append(signum)
    state.handled.set()
    if not first:
        return  # the command is unwinding already: let it finish
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


@contextmanager
def handling(prefix, reported=lambda: False, cleanup_s=CLEANUP_S):
    """Run a command under the handlers of this module (main thread only).

    ``prefix`` begins the error line ("robustclust fit"); ``reported()`` says
    whether the command has written its error line already (the watcher then
    writes none).  Nested, the outer handling stays in charge.
    """
    global _STATE
    if threading.current_thread() is not threading.main_thread() or _STATE is not None:
        yield _STATE
        return
    state = _State(prefix, reported, cleanup_s)
    previous_hook = sys.unraisablehook

    def unraisable(args):
        # the signal's exception raised where Python cannot raise (a library's
        # garbage-collection callback: distributed's printed "Exception ignored
        # in ... GCDiagnosis._gc_callback" and a traceback), and lost: raised
        # again in the main thread, silently, once it is out of the callback
        # (from another thread: in this hook the handler would run at once)
        signum = in_chain(args.exc_value)
        if signum is not None and state.received and not state.finished.is_set():
            state.received.clear()  # the handler raises again
            threading.Timer(RERAISE_S, _raise_again, (state, signum)).start()
            return
        previous_hook(args)

    sys.unraisablehook = unraisable
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    names = [name for name in SIGNAL_NAMES if hasattr(signal, name)]
    _STATE = state
    previous = {}
    previous_fd = None
    try:
        previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        for name in names:
            previous[name] = signal.signal(getattr(signal, name), _handler)
        watcher = threading.Thread(target=_watch, args=(read_fd, state), daemon=True,
                                   name="robustclust-signals")
        watcher.start()
        yield state
    finally:
        state.finished.set()
        sys.unraisablehook = previous_hook
        for name, handler in previous.items():
            signal.signal(getattr(signal, name), handler)
        if previous_fd is not None:
            signal.set_wakeup_fd(previous_fd)
        _STATE = None
        os.close(write_fd)  # the watcher reads the end of the pipe and stops


@contextmanager
def cleanup_within(seconds):
    """The block unwinds within ``seconds`` after a signal, or the watcher ends
    the process (see the module docstring); outside :func:`handling` (a
    library call), the block runs under its own."""
    if _STATE is None:
        from ._errors import PROG, error_reported

        with handling(f"{PROG} fit", error_reported, seconds):
            yield
        return
    state = _STATE
    before = state.cleanup_s
    state.cleanup_s = seconds
    try:
        yield
    finally:
        state.cleanup_s = before


def _watch(read_fd, state):
    """Drain the wakeup pipe until the command ends (its write end closed); the
    first signal starts the timer (:func:`_expire`).  The pipe stays open
    while the command runs: a signal written to a closed pipe made Python
    print "Exception ignored when trying to write to the signal wakeup fd"."""
    started = False
    try:
        while True:
            try:
                data = os.read(read_fd, 64)
            except InterruptedError:
                continue
            except OSError:
                return
            if not data:
                return
            if not started and not state.finished.is_set():
                started = True
                threading.Thread(target=_expire, args=(state, data[0]), daemon=True,
                                 name="robustclust-signal-timer").start()
    finally:
        os.close(read_fd)


def _expire(state, signum):
    """After the first signal: the main thread runs the Python handler when it
    gets back to Python (within STUCK_S), then has ``cleanup_s`` to finish."""
    if not state.handled.wait(STUCK_S) and not state.finished.is_set():
        _emergency_exit(state, signum)
    if not state.finished.wait(state.cleanup_s):
        _emergency_exit(state, state.received[0] if state.received else signum)


def _emergency_exit(state, signum):
    """End the process now: temporary files removed, children killed, one line."""
    if state.finished.is_set():
        return
    try:
        from .._files import discard_all

        discard_all()
    except Exception:  # noqa: BLE001 - nothing may stop the exit
        pass
    for child in multiprocessing.active_children():
        try:
            child.kill()
        except Exception:  # noqa: BLE001
            pass
    try:
        if not state.reported():
            sys.stderr.write(f"{state.prefix}: error: {message_of(signum)}\n")
        sys.stderr.flush()
    finally:
        os._exit(status_of(signum))
