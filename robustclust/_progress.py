"""Progress reports from inside the solvers, for whoever listens (the command line).

The solvers call :func:`iteration` once per BCD/EM iteration.  Nothing
listens by default, and the call then costs one context-variable lookup.
The command line installs a listener with :func:`listen` to drive a
progress bar over a whole fit or path (every restart, lambda search step
and grid point runs iterations), without the estimators knowing about it.
"""

from contextlib import contextmanager
from contextvars import ContextVar

_listener = ContextVar("robustclust_progress_listener", default=None)


def iteration():
    """Report one finished solver iteration to the current listener, if any."""
    listener = _listener.get()
    if listener is not None:
        listener()


@contextmanager
def listen(callback):
    """Call ``callback()`` after every solver iteration inside the ``with`` block.

    Parameters
    ----------
    callback : callable
        Called with no arguments; its return value is ignored.
    """
    token = _listener.set(callback)
    try:
        yield
    finally:
        _listener.reset(token)
