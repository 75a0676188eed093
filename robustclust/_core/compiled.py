"""When the compiled (numba) kernels run, and how they are loaded.

The compiled modules of the core (``_fused``, ``_passes``, ``_soft``,
``_estep``, ``_concentration``, ``_dense``) and the two compiled helpers of
``starts`` and ``covariance`` cost twice before they pay: importing numba
(about 0.5 s) and compiling each kernel the first time it runs on a machine
(about 30 s for a first K-means fit; numba's cache keeps the result for
every later process).  So:

* nothing imports numba when ``robustclust`` is imported: the compiled
  modules are reached through :func:`lazy_module` proxies and the helpers
  through :func:`lazy_njit`, loaded on first use;
* a problem of fewer than ``COMPILED_MIN_ROWS`` rows runs the NumPy
  iteration (the same steps, tested against each other), so a first fit of
  a small file compiles nothing; :func:`worth` is the one test every
  dispatch point asks;
* :data:`loaded` says whether a compiled module has been loaded in this
  process (the command line's progress line says "compiling, first run
  only" until the first iteration after that).
"""

import importlib
import threading

from .. import _progress

#: Fewest rows from which the compiled kernels run.  Below it a fit's whole
#: NumPy run takes well under a second, far less than a first compile: a
#: 200-row CSV fitted by a fresh install came back in 27-65 s, all of it
#: compiling.  The test suite sets it to 0, so that every kernel runs on its
#: small data (``tests/conftest.py``).
COMPILED_MIN_ROWS = 5000

#: What the progress line says while the kernels load (and compile on a first run).
COMPILING = "compiling the fast kernels (first run only)"
#: Whether a compiled module has been loaded in this process.
loaded = threading.Event()


def worth(n_rows):
    """Whether a problem of ``n_rows`` rows runs the compiled kernels."""
    return n_rows >= COMPILED_MIN_ROWS


class _LazyModule:
    """A module imported at its first attribute access."""

    def __init__(self, name, compiled):
        self._name = name
        self._compiled = compiled
        self._module = None

    def _load(self):
        if self._module is None:
            if self._compiled and not loaded.is_set():
                _progress.notice(COMPILING)
            self._module = importlib.import_module(self._name)
            if self._compiled:
                loaded.set()
        return self._module

    def __getattr__(self, attr):
        return getattr(self._load(), attr)


def lazy_module(name, compiled=True):
    """A proxy of module ``name`` (absolute) that imports it on first use.

    ``compiled``: a module of numba kernels (its loading sets :data:`loaded`);
    False for other modules that are slow to import (``scipy.stats``).
    """
    return _LazyModule(name, compiled)


class _LazyDispatcher:
    """A numba-compiled function made at its first call (numba imported then)."""

    def __init__(self, func, options):
        self.py_func = func
        self._options = options
        self._dispatcher = None
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__

    def __call__(self, *args):
        if self._dispatcher is None:
            from numba import njit

            _progress.notice(COMPILING)
            self._dispatcher = njit(**self._options)(self.py_func)
            loaded.set()
        return self._dispatcher(*args)


def lazy_njit(**options):
    """``numba.njit(**options)`` applied when the function is first called.

    For standalone kernels only: a compiled function cannot call one of
    these (numba would see a Python object); the kernels that call each
    other live in the compiled modules, loaded whole by :func:`lazy_module`.
    """
    def decorate(func):
        return _LazyDispatcher(func, options)
    return decorate
