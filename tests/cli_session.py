"""Running the command line in tests: the console script as a subprocess
(:data:`COMMAND`) or in-process (:func:`invoke`)."""

import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from robustclust.cli import main

_SCRIPT = Path(sys.executable).with_name("robustclust")
#: The console script of this environment (``python -m robustclust`` without one).
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "robustclust"]


def invoke(args, cwd):
    """The command line in-process in ``cwd``: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            status = main([str(a) for a in args])
    finally:
        os.chdir(old)
    return status, out.getvalue(), err.getvalue()
