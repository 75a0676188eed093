"""The ``robustclust`` command line (fit, predict, path, demo, reproduce)."""

from ._commands import cli, main

__all__ = ["cli", "main"]
