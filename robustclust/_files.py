"""Writing files without losing data: no-clobber publishing and atomic replacement.

Every file is first written to a hidden temporary file in its destination's
directory (``.NAME.XXXXXXXX.tmp``), flushed to disk, and only then
*published* under its name:

* without replacement (the default of the command line), by a hard link
  (:func:`os.link`), which fails when the name exists at that moment, so a
  file that appeared while the data were being computed (another run, a
  user's notes) is never replaced; the temporary name is then removed;
* with replacement (``--force``, and the library's own report and model
  files), by :func:`os.replace`, atomic on POSIX and Windows.

:class:`StagedFiles` publishes several files together: when one of them
cannot be published, those already published by it are removed again, so a
command leaves all of its files or none.  On any exception (Ctrl-C and
SIGTERM included, which the command line turns into exceptions) the
temporary files are removed, so an interrupted write leaves nothing behind.
"""

import errno
import os
import secrets
from contextlib import contextmanager
from pathlib import Path

__all__ = ["StagedFiles", "UnsafeWriteError", "atomic_write", "check_destination"]

#: errno values of file systems that cannot make hard links.
_NO_HARD_LINKS = {errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOSYS,
                  getattr(errno, "ENOTSUP", errno.EPERM),
                  getattr(errno, "EOPNOTSUPP", errno.EPERM)}


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
        an existing directory, an existing file (or a symbolic link, even a
        broken one) while ``force`` is False, or its directory does not exist.
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
    elif path.is_symlink() and not force:
        raise UnsafeWriteError(f"{path} already exists as a broken symbolic link (use --force "
                               "to replace it)")
    parent = path.parent
    if not parent.is_dir():
        raise UnsafeWriteError(f"cannot write {path}: directory {parent} does not exist")
    return path


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class StagedFiles:
    """Files written to temporary names first and published together.

    Use as a context manager: write each file with :meth:`open`, then call
    :meth:`publish`.  Leaving the ``with`` block without publishing (an
    exception, an interruption) removes every temporary file.

    Parameters
    ----------
    replace : bool, default=False
        Replace existing files (:func:`os.replace`).  False publishes a file
        only if its name is free at that moment, and raises
        :class:`UnsafeWriteError` naming it otherwise.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with StagedFiles() as staged:
    ...     with staged.open(folder / "a.txt", "w") as fh:
    ...         _ = fh.write("hello")
    ...     staged.publish()
    >>> (folder / "a.txt").read_text()
    'hello'
    """

    def __init__(self, *, replace=False):
        self.replace = replace
        self._staged = []  # [(temporary path, destination)]
        self._writing = []  # temporary files being written

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.discard()
        return False

    @contextmanager
    def open(self, path, mode="wb"):
        """Open a temporary file for ``path``; it is kept for :meth:`publish` on success.

        Parameters
        ----------
        path : str or path-like
            The destination.
        mode : {"wb", "w"}, default="wb"
            Text mode writes newlines as given (no translation).

        Yields
        ------
        file : file object
        """
        path = Path(path)
        fd, tmp = self._create(path)
        try:
            with os.fdopen(fd, mode, **({} if "b" in mode else {"newline": ""})) as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
        except BaseException:
            _remove(tmp)
            self._forget(tmp)
            raise
        # staged before it is forgotten: an exception (a signal) between the two
        # leaves it in a list that discard() empties
        self._staged.append((tmp, path))
        self._forget(tmp)

    def _create(self, path):
        """(fd, name) of a new hidden file beside ``path``; the name is recorded
        before the file exists, so an exception at any moment (a signal turned
        into one) leaves nothing that :meth:`discard` does not remove."""
        for _ in range(100):
            tmp = str(path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp")
            self._writing.append(tmp)
            try:
                return _create_exclusive(tmp), tmp
            except FileExistsError:  # not ours: forget the name, draw another
                self._forget(tmp)
        raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))

    def _forget(self, tmp):
        # discard() may have run first (the generator closed after the staging)
        if tmp in self._writing:
            self._writing.remove(tmp)

    def publish(self):
        """Give every staged file its name; all or none of them.

        Raises
        ------
        UnsafeWriteError
            A destination exists (``replace=False``): it is left as it is, the
            files this call already published are removed again and nothing
            is left behind.
        OSError
            The file system refused (read-only, full, ...); as above.
        """
        published = []
        try:
            for tmp, path in self._staged:
                # recorded before the name is given: an exception (a signal) right
                # after the link still finds it, and the rollback removes ``path``
                # only where it is this file (same inode as the temporary name)
                published.append((tmp, path))
                try:
                    if self.replace:
                        os.replace(tmp, path)
                    else:
                        _link(tmp, path)
                except OSError as exc:  # name the destination, not the temporary file
                    published.pop()
                    raise OSError(exc.errno, exc.strerror, str(path)) from exc
        except BaseException:
            if not self.replace:
                for tmp, path in published:
                    if _same_file(tmp, path):
                        _remove(path)
            raise
        for tmp, _ in published:
            _remove(tmp)  # the linked ones; replaced ones are gone already
        self._staged = []

    def discard(self):
        """Remove every temporary file not published yet."""
        for tmp in [tmp for tmp, _ in self._staged] + self._writing:
            _remove(tmp)
        self._staged, self._writing = [], []


def _create_exclusive(name):
    """Create the file ``name`` (it must not exist), open for writing; its descriptor."""
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                   0o600)


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _appeared(path):
    return UnsafeWriteError(f"{path} was created by another program while this command ran "
                            "(another run?); it was left as it is and nothing was written (use "
                            "--force to overwrite it)")


def _link(tmp, path):
    """Give the file ``tmp`` the name ``path`` too, failing if ``path`` exists."""
    try:
        os.link(tmp, path)
        return
    except FileExistsError:
        raise _appeared(path) from None
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
    # No hard links here (some network and FAT file systems): claim the name
    # with O_EXCL, then move the data onto the empty file just created.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise _appeared(path) from None
    os.close(fd)
    os.replace(tmp, path)


@contextmanager
def atomic_write(path, mode="wb", *, replace=True):
    """Write ``path`` through a temporary file that gets its name only when complete.

    The data go to a hidden temporary file in the same directory, flushed
    to disk and published when the ``with`` block ends without an
    exception (see :class:`StagedFiles`).  On an exception the temporary
    file is removed and ``path`` is left as it was, so an interrupted write
    never leaves a truncated file.  The new file gets the permissions an
    ordinary ``open`` would give it (umask applied).

    Parameters
    ----------
    path : str or path-like
    mode : {"wb", "w"}, default="wb"
    replace : bool, default=True
        Replace an existing file atomically.  False never replaces one: if
        ``path`` exists when the data are complete, :class:`UnsafeWriteError`
        is raised and nothing is written.

    Yields
    ------
    file : file object
        The temporary file, open in ``mode``.
    """
    with StagedFiles(replace=replace) as staged:
        with staged.open(path, mode) as fh:
            yield fh
        staged.publish()
