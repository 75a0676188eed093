"""BLAS threads: many only where a product is big enough to pay for waking them.

An iteration of a small problem is a few hundred tiny BLAS calls (C x C and
p x p products, Cholesky factors).  Each call wakes the BLAS thread pool,
whose threads spin while they wait; with another process busy on the cores,
the spinning threads fight it and a fit of a few thousand points runs 10-20
times slower than on one thread (measured: ``benchmarks/bench_threads.py``).
So the driver runs a solver on one BLAS thread unless its per-iteration
product (N x dim by dim x C) is large, and the compiled hard pass always
(it splits the rows over its own threads).
"""

import threading
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

#: Flops of the largest product of an iteration (N dim C) from which the BLAS
#: pool may use all its threads.
PARALLEL_WORK = 5e7

_CONTROLLER = None


def controller():
    """The process's threadpoolctl controller (its creation scans the loaded libraries)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


#: this thread's depth of :func:`single_blas` contexts
_LOCAL = threading.local()


@contextmanager
def single_blas():
    """Context: BLAS on one thread.

    Nested in another on the same thread it changes nothing (the limit
    holds already): a fit enters one per solver run, inside the one around
    the whole fit, and each costs about 45 microseconds of threadpoolctl.
    BLAS limits are process-wide: when another thread's outermost context
    ends first it restores the BLAS threads for everyone, and the rest of
    this thread's fit runs with them (a nested context no longer limits
    again); the result is the same, only its speed is not.
    """
    depth = getattr(_LOCAL, "depth", 0)
    _LOCAL.depth = depth + 1
    try:
        if depth:
            yield
        else:
            with controller().limit(limits=1, user_api="blas"):
                yield
    finally:
        _LOCAL.depth = depth


def wants_one_thread(solver):
    """Whether ``solver`` should run with BLAS on one thread."""
    from .compiled import worth

    g = solver.geometry
    if worth(g.n_samples):
        from . import _fused

        if _fused.eligible(solver, solver.penalty):
            return True
    return g.n_samples * g.dim * solver.n_clusters < PARALLEL_WORK


@contextmanager
def blas_limits(solver):
    """Context for a solver's run: one BLAS thread unless its products are large."""
    if not solver.is_numpy_backend or not wants_one_thread(solver):
        yield
        return
    with single_blas():
        yield
