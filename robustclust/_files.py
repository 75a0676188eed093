"""Writing files without losing data: atomic replacement and no-clobber checks."""

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


class UnsafeWriteError(ValueError):
    """A destination that must not be written: it exists, or it is an input."""


def check_destination(path, *, inputs=(), force=False):
    """Refuse a destination that would lose data; return it as a Path.

    Parameters
    ----------
    path : str or path-like
        Where a file is about to be written.
    inputs : iterable of str or path-like, default=()
        Files the command reads: never overwritten, even with ``force``.
    force : bool, default=False
        Allow replacing an existing file that is not an input.

    Returns
    -------
    path : Path

    Raises
    ------
    UnsafeWriteError
        ``path`` is one of ``inputs`` (the same file, whatever the spelling),
        an existing directory, an existing file while ``force`` is False, or
        its directory does not exist.
    """
    path = Path(path)
    if path.exists():
        for source in inputs:
            if Path(source).exists() and os.path.samefile(path, source):
                raise UnsafeWriteError(f"refusing to write over the input file {path}")
        if path.is_dir():
            raise UnsafeWriteError(f"{path} is a directory")
        if not force:
            raise UnsafeWriteError(f"{path} already exists (use --force to overwrite it)")
    parent = path.parent
    if not parent.is_dir():
        raise UnsafeWriteError(f"cannot write {path}: directory {parent} does not exist")
    return path


@contextmanager
def atomic_write(path, mode="wb"):
    """Open a temporary file next to ``path``; move it onto ``path`` on success.

    The data goes to a hidden temporary file in the same directory, which is
    flushed to disk and renamed over ``path`` (:func:`os.replace`, atomic on
    POSIX and Windows) when the ``with`` block ends without an exception.
    On an exception the temporary file is removed and ``path`` is left as it
    was, so an interrupted write never leaves a truncated file.  The new file
    gets the permissions an ordinary ``open`` would give it (umask applied).

    Parameters
    ----------
    path : str or path-like
    mode : {"wb", "w"}, default="wb"

    Yields
    ------
    file : file object
        The temporary file, open in ``mode``.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"newline": ""})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
