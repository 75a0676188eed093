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

Directories (a Parquet dataset of part files) are staged the same way
(:meth:`StagedFiles.directory`): written into a hidden temporary directory
beside the destination (``.NAME.XXXXXXXX.tmp``) and published by one
:func:`os.rename`, which gives the name only when the destination does not
exist or is an *empty* directory (POSIX renames a directory onto an empty
one and fails on a non-empty directory or a file), so no data are ever
replaced; an empty directory that was there is made again if the
publication is rolled back.  With replacement, an existing destination is
first moved aside under a hidden name, the new directory renamed into
place and the old one removed (put back if the publication fails);
``replaceable`` decides which directories may be replaced at all.
"""

import errno
import os
import secrets
import shutil
import weakref
from contextlib import contextmanager
from pathlib import Path

__all__ = ["StagedFiles", "UnsafeWriteError", "atomic_write", "check_destination",
           "check_directory_destination"]

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


def check_directory_destination(path, *, inputs=(), force=False, replaceable=None):
    """Refuse a destination directory that would lose data; return it as a Path.

    The directory is free when it does not exist or is an empty directory
    (publishing replaces an empty directory: nothing is lost).

    Parameters
    ----------
    path : str or path-like
        Where a directory is about to be published.
    inputs : iterable of str or path-like, default=()
        Files the command reads: neither they nor a directory holding them
        are ever replaced, even with ``force``.
    force : bool, default=False
        Allow replacing an existing file, or a non-empty directory that
        ``replaceable`` accepts.
    replaceable : callable, default=None
        ``replaceable(directory) -> reason or None``: None when ``force`` may
        replace the directory, else the reason it may not (what it holds).
        None refuses every non-empty directory.

    Returns
    -------
    path : Path

    Raises
    ------
    UnsafeWriteError
        ``path`` is an input, or holds one; an existing file or symbolic
        link, or a non-empty directory, without ``force``; a non-empty
        directory that ``replaceable`` refuses (whatever ``force``); its
        parent directory does not exist.
    """
    path = Path(path)
    if path.exists() or path.is_symlink():
        here = os.path.realpath(path)
        for source in inputs:
            source = os.path.realpath(source)
            if source == here or source.startswith(here.rstrip(os.sep) + os.sep):
                raise UnsafeWriteError(f"refusing to write over the input: {path} is or holds "
                                       "an input file")
        if path.is_dir() and not path.is_symlink():
            entries = sorted(os.listdir(path))
            if entries:
                why = (f"it holds {_some(entries)}" if replaceable is None
                       else replaceable(path))
                if why is not None:
                    raise UnsafeWriteError(f"{path} is a directory that is not empty and not "
                                           f"an earlier output ({why}): refusing to replace "
                                           "it, even with --force")
                if not force:
                    raise UnsafeWriteError(f"{path} already exists (use --force to replace "
                                           "it)")
        elif not force:
            raise UnsafeWriteError(f"{path} already exists (use --force to replace it)")
    parent = path.absolute().parent
    if not parent.is_dir():
        raise UnsafeWriteError(f"cannot write {path}: directory {parent} does not exist")
    return path


def _some(names, limit=3):
    """'a, b, c' or 'a, b, c and 4 more'."""
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} and {len(names) - limit} more"


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


#: The StagedFiles of this process that are open (see :func:`discard_all`).
_LIVE = weakref.WeakSet()


def discard_all():
    """Remove the temporary files of every open :class:`StagedFiles`: the last
    act of a process that must end at once (a signal whose command cannot
    unwind, see ``robustclust.cli._signals``)."""
    for staged in list(_LIVE):
        # the temporaries only: a destination moved aside while publishing is
        # the user's until its replacement has its name
        for tmp in [tmp for tmp, _ in staged._staged] + staged._writing:
            _remove(tmp)
        for tmp in [d[0] for d in staged._dirs] + staged._making:
            _remove_tree(tmp)


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
        _LIVE.add(self)
        self.replace = replace
        self._staged = []  # [(temporary path, destination)]
        self._writing = []  # temporary files being written
        self._dirs = []  # [(temporary directory, destination, its (device, inode), replaceable)]
        self._making = []  # temporary directories being written
        self._aside = []  # replaced destinations moved aside, removed once all is published

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.discard()
        _LIVE.discard(self)
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
        _check_file_destination(path)
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

    @contextmanager
    def directory(self, path, *, replaceable=None):
        """A temporary directory for ``path``; kept for :meth:`publish` on success.

        Parameters
        ----------
        path : str or path-like
            The destination directory.
        replaceable : callable, default=None
            With ``replace``: ``replaceable(directory) -> reason or None``,
            asked again about an existing destination once it has been moved
            aside (None: it may be replaced); None replaces nothing but an
            empty directory, a file or a link.

        Yields
        ------
        directory : Path
            The temporary directory (created empty), to write the files into.
        """
        path = Path(path)
        tmp = None
        for _ in range(100):
            tmp = str(path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp")
            self._making.append(tmp)  # recorded before it exists (see _create)
            try:
                _make_private_directory(tmp)
                break
            except FileExistsError:
                self._making.remove(tmp)
                tmp = None
        if tmp is None:
            raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))
        try:
            identity = _identity(tmp)
            yield Path(tmp)
            os.chmod(tmp, 0o777 & ~_umask())
        except BaseException:
            _remove_tree(tmp)
            self._forget_directory(tmp)
            raise
        self._dirs.append((tmp, path, identity, replaceable))
        self._forget_directory(tmp)

    def _forget_directory(self, tmp):
        if tmp in self._making:
            self._making.remove(tmp)

    def publish(self):
        """Give every staged file and directory its name; all or none of them.

        Raises
        ------
        UnsafeWriteError
            A destination exists (``replace=False``): it is left as it is, the
            files this call already published are removed again and nothing
            is left behind.
        OSError
            The file system refused (read-only, full, ...); as above.
        """
        published, moved = [], []
        try:
            for tmp, path, identity, replaceable in self._dirs:
                self._publish_directory(tmp, path, identity, replaceable, published, moved)
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
            for tmp, path in reversed(published):
                if isinstance(tmp, tuple):  # a directory: (device, inode), was empty
                    identity, was_empty = tmp
                    if _identity(path) == identity:
                        _remove_tree(path)
                        if was_empty:
                            _make_directory(path)
                elif not self.replace and _same_file(tmp, path):
                    _remove(path)
            for aside, path in reversed(moved):  # what --force moved aside goes back
                self._aside.remove(aside)  # first: never removed by discard() now
                _put_back(aside, path)
            raise
        for tmp, _ in published:
            if not isinstance(tmp, tuple):
                _remove(tmp)  # the linked ones; replaced ones are gone already
        self._staged, self._dirs = [], []
        for old in list(self._aside):  # the replaced destinations, now that all is published
            _remove_tree(old)
            self._aside.remove(old)

    def _publish_directory(self, tmp, path, identity, replaceable, published, moved):
        """Rename the temporary directory ``tmp`` to ``path`` (see the module's notes)."""
        was_empty = _is_empty_directory(path)
        if self.replace and (path.exists() or path.is_symlink()) and not was_empty:
            aside = str(path.parent / f".{path.name}.{secrets.token_hex(4)}.old")
            moved.append((aside, path))  # recorded first: a signal after the rename finds it
            self._aside.append(aside)
            os.rename(path, aside)
            if os.path.isdir(aside) and not os.path.islink(aside):
                why = (f"it holds {_some(sorted(os.listdir(aside)))}" if replaceable is None
                       else replaceable(Path(aside)))
                if why is not None and os.listdir(aside):
                    raise UnsafeWriteError(f"{path} changed while this command ran ({why}); "
                                           "it was left as it is and nothing was written")
        published.append(((identity, was_empty), path))  # recorded before the rename
        try:
            _rename_directory(tmp, path)
        except OSError as exc:
            published.pop()
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                raise _appeared(path) from None
            raise OSError(exc.errno, exc.strerror, str(path)) from exc

    def discard(self):
        """Remove every temporary file and directory not published yet."""
        for tmp in [tmp for tmp, _ in self._staged] + self._writing:
            _remove(tmp)
        for tmp in [d[0] for d in self._dirs] + self._making:
            _remove_tree(tmp)
        for old in self._aside:  # only left when the publication completed
            _remove_tree(old)
        self._staged, self._writing, self._dirs, self._making, self._aside = [], [], [], [], []


def _create_exclusive(name):
    """Create the file ``name`` (it must not exist), open for writing; its descriptor."""
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                   0o600)


def _make_private_directory(name):
    """Create the directory ``name`` (it must not exist), readable by its owner only."""
    os.mkdir(name, 0o700)


def _rename_directory(tmp, path):
    """Give the directory ``tmp`` the name ``path``: fails unless ``path`` is free or an
    empty directory."""
    os.rename(tmp, path)


def _identity(path):
    """(device, inode) of ``path`` itself, or None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _is_empty_directory(path):
    try:
        return os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path)
    except OSError:
        return False


def _make_directory(path):
    try:
        os.mkdir(path)
    except OSError:
        pass


def _remove_tree(path):
    """Remove a directory and everything in it (or a file); nothing if it is gone."""
    if os.path.islink(path) or os.path.isfile(path):
        _remove(path)
    elif os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)


def _put_back(aside, path):
    """Give a destination moved aside its name again, unless the name is taken."""
    if not os.path.lexists(aside):
        return
    if _is_empty_directory(path):
        try:
            os.rmdir(path)
        except OSError:
            return
    if not os.path.lexists(path):
        os.rename(aside, path)


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


def _check_file_destination(path):
    """OSError naming ``path`` when no file can be written there: a directory
    (renaming onto ``.`` said "Device or resource busy"), or a missing folder
    (the error named the hidden temporary file)."""
    if path.name in ("", ".", "..") or path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file name", str(path))
    parent = path.parent
    if not parent.is_dir():
        why = "no such folder" if not parent.exists() else "not a folder"
        raise FileNotFoundError(errno.ENOENT, f"{why}: {parent}", str(path))


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
