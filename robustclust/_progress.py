"""Progress reports from inside the solvers, for whoever listens (the command line).

The solvers call :func:`iteration` once per BCD/EM iteration.  The longer
stages of a fit announce themselves with :func:`phase` (a name and how many
steps it takes at most: the noise model's EM iterations, the starts, the
evaluations of the lambda search, the refinement's candidates, the path's
lambda values); a phase that counts its own steps (:func:`step`) hides the
solver iterations run inside it.  Nothing listens by default, and a call
then costs one context-variable lookup.  The command line installs a
listener with :func:`listen` to drive a progress bar with the phase's name
and total, without the estimators knowing about it.
"""

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

_listener = ContextVar("robustclust_progress_listener", default=None)
_phases = ContextVar("robustclust_progress_phases", default=None)
_phase = ContextVar("robustclust_progress_phase", default=None)


@dataclass(frozen=True)
class Phase:
    """A named stage of a fit: ``total`` steps at most (None: not known).

    ``transient``: a notice shown until the next step (the compile of the
    compiled kernels on a machine's first run, :func:`notice`)."""

    name: str
    total: int | None = None
    own_steps: bool = False
    transient: bool = False


def iteration():
    """Report one finished solver iteration to the current listener, if any."""
    listener = _listener.get()
    if listener is not None:
        current = _phase.get()
        if current is None or not current.own_steps:
            listener()


def step():
    """Report one step of the current phase (one that counts its own steps)."""
    listener = _listener.get()
    if listener is not None:
        listener()


@contextmanager
def phase(name, total=None, own_steps=False):
    """A named phase of ``total`` steps at most for the listener, inside the block.

    Parameters
    ----------
    name : str
    total : int, default=None
    own_steps : bool, default=False
        The phase counts :func:`step` calls, and the solver iterations inside
        it are not reported; otherwise its steps are those iterations.
    """
    outer = _phase.get()
    token = _phase.set(Phase(name, None if total is None else int(total), own_steps))
    announce = _phases.get()
    if announce is not None:
        announce(_phase.get())
    try:
        yield
    finally:
        _phase.reset(token)
        if announce is not None:
            announce(outer)


def notice(text):
    """Tell the listener, until the next step, what the process is busy with."""
    announce = _phases.get()
    if announce is not None:
        announce(Phase(text, transient=True))


def steps(name, items, total):
    """``items`` (an iterable of ``total``), as a phase whose steps they are."""
    with phase(name, total, own_steps=True):
        for item in items:
            yield item
            step()


@contextmanager
def listen(callback, phases=None):
    """Call ``callback()`` after every solver iteration (or phase step) inside the block.

    Parameters
    ----------
    callback : callable
        Called with no arguments; its return value is ignored.
    phases : callable, default=None
        Called with the :class:`Phase` that begins, and with the outer phase
        (None at the top) when one ends.
    """
    token = _listener.set(callback)
    token_phases = _phases.set(phases)
    try:
        yield
    finally:
        _listener.reset(token)
        _phases.reset(token_phases)
