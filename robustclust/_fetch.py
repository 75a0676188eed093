"""Find a data file locally, or download it once into a cache, atomically.

The public loaders of :mod:`robustclust.datasets` describe *what* they read;
this module only knows *where* files are and how to get them:

1. the folder given as ``data_home`` (or the environment variable
   ``ROBUSTCLUST_DATA``), searched first and never written to;
2. the download cache, the ``robustclust`` subfolder of scikit-learn's data
   home (``~/scikit_learn_data/robustclust``, or
   ``$SCIKIT_LEARN_DATA/robustclust``);
3. the public download location, written into the cache.

A download is streamed into a temporary file in the cache folder, checked,
and only then renamed onto its final name with :func:`os.replace` (atomic on
POSIX and Windows), so the cache never holds a half-written file: a failed,
truncated, corrupted or interrupted download (``KeyboardInterrupt``
included) deletes the temporary file and leaves the cache as it was.

Checks: the sha256 of the downloaded bytes when it is known
(:attr:`RemoteFile.sha256`), and in every case a ``validate`` callable given
by the loader, which reads the whole file (the ``.gz`` and ``.zip``
originals carry CRC-32 checksums of their content, so a truncated or
corrupted archive fails there even when no sha256 is recorded).
"""

import hashlib
import http.client
import os
import socket
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

DATA_ENV = "ROBUSTCLUST_DATA"
CACHE_SUBFOLDER = "robustclust"
_CHUNK = 1 << 16
_TIMEOUT = 60.0
_USER_AGENT = "robustclust-data-loader (Python urllib)"

# Errors that mean "could not reach the file", reported as "not found".
_NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException,
                   socket.timeout, TimeoutError, ConnectionError)


class ChecksumError(OSError):
    """A downloaded file failed its sha256 or content check (nothing was cached)."""


@dataclass(frozen=True)
class RemoteFile:
    """A file at a public location and how to recognise it.

    Attributes
    ----------
    filename : str
        Name of the file in the cache.
    url : str
        Public download location.
    sha256 : str or None
        Hex digest of the exact bytes served at ``url``; None when it is not
        known (the file is then checked by the loader's ``validate`` only).
    """

    filename: str
    url: str
    sha256: str | None = None


def cache_dir():
    """The download cache: ``<scikit-learn data home>/robustclust`` (not created)."""
    # Imported here: sklearn.datasets is slow to import and only needed when
    # the data home was not enough.
    from sklearn.datasets import get_data_home

    return Path(get_data_home()) / CACHE_SUBFOLDER


def search_folders(data_home):
    """Folders to search, in order: ``data_home`` (or ``$ROBUSTCLUST_DATA``), the cache."""
    if data_home is None:
        data_home = os.environ.get(DATA_ENV) or None
    folders = [] if data_home is None else [Path(data_home).expanduser()]
    folders.append(cache_dir())
    return folders


def sha256sum(path):
    """Hex sha256 digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def download(remote, folder, *, validate=None, timeout=_TIMEOUT):
    """Download ``remote`` into ``folder`` atomically and return its path.

    Parameters
    ----------
    remote : RemoteFile
    folder : path-like
        Created if missing.
    validate : callable or None, default=None
        Called with the path of the complete temporary file; raises
        (any exception) if the content is not what the loader can read.
    timeout : float, default=60
        Seconds to wait for the server at each network operation.

    Returns
    -------
    path : pathlib.Path
        ``folder / remote.filename``.

    Raises
    ------
    ChecksumError
        The bytes do not have the recorded sha256, the transfer was shorter
        than announced, or ``validate`` rejected them. The temporary file is
        deleted; nothing is written under the final name.
    urllib.error.URLError, OSError
        Network errors, as raised by :func:`urllib.request.urlopen`, after
        the temporary file has been deleted.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / remote.filename
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{remote.filename}.", suffix=".part")
    try:
        digest = hashlib.sha256()
        received = 0
        # Some hosts refuse urllib's default "Python-urllib" agent.
        request = urllib.request.Request(remote.url, headers={"User-Agent": _USER_AGENT})
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(request, timeout=timeout) as response:
            announced = response.headers.get("Content-Length")
            for chunk in iter(lambda: response.read(_CHUNK), b""):
                out.write(chunk)
                digest.update(chunk)
                received += len(chunk)
        if announced is not None and received != int(announced):
            raise ChecksumError(
                f"Download of {remote.url} stopped after {received} of {announced} bytes; "
                "nothing was cached. Try again.")
        actual = digest.hexdigest()
        if remote.sha256 is not None and actual != remote.sha256:
            raise ChecksumError(
                f"Checksum mismatch for {remote.url}: sha256 {actual}, expected "
                f"{remote.sha256}. The file was deleted, nothing was cached. The "
                "download was corrupted, or the server now serves a different file.")
        if validate is not None:
            try:
                validate(tmp)
            except Exception as exc:
                raise ChecksumError(
                    f"The file downloaded from {remote.url} (sha256 {actual}) is not "
                    f"readable as {remote.filename}: {exc}. It was deleted, nothing "
                    "was cached.") from exc
        os.replace(tmp, final)
    except BaseException:
        _remove(tmp)
        raise
    return final


def _describe(folders, names):
    wanted = " or ".join(" + ".join(layout) for layout in names)
    where = "".join(f"\n  - {folder}" for folder in folders)
    return wanted, where


def find_or_download(what, layouts, remotes, *, data_home=None,
                     download_if_missing=True, validate=None):
    """Paths of the first complete layout found locally, else of fresh downloads.

    Parameters
    ----------
    what : str
        Human name of the data set, for messages.
    layouts : list of tuple of str
        Alternative sets of file names, in order of preference (e.g.
        ``[("usps.mat",), ("zip.train.gz", "zip.test.gz")]``). The first
        folder holding every file of some layout wins.
    remotes : tuple of RemoteFile
        The files to download when nothing is found; their file names must
        form one of ``layouts``. Files of it already in the cache are kept.
    data_home : path-like or None
        Folder searched first; None reads ``$ROBUSTCLUST_DATA``.
    download_if_missing : bool
    validate : dict of str to callable, or None
        Content check for each downloaded file name (see :func:`download`).

    Returns
    -------
    paths : list of pathlib.Path
        One path per file of the layout found.

    Raises
    ------
    FileNotFoundError
        Nothing found locally and downloading is disabled or failed (offline,
        server unreachable); the message names the folders searched, the
        network's reason and the files to download by hand.  It is raised
        alone (``from None``), so the traceback is one short block ending in
        that message rather than the network error's chain.
    ChecksumError
        A download arrived but failed its checks.
    """
    folders = search_folders(data_home)
    for folder in folders:
        for layout in layouts:
            paths = [folder / name for name in layout]
            if all(path.is_file() for path in paths):
                return paths
    wanted, where = _describe(folders, layouts)
    urls = "".join(f"\n  - {remote.url}" for remote in remotes)
    advice = (f"Download{urls}\ninto one of these folders, or pass "
              f"data_home=<folder holding the files> (or set {DATA_ENV}).")
    if not download_if_missing:
        raise FileNotFoundError(
            f"{what}: no local copy ({wanted}) in{where}\n"
            f"and download_if_missing=False. {advice}")
    cache = folders[-1]
    try:
        for remote in remotes:
            if not (cache / remote.filename).is_file():
                download(remote, cache, validate=(validate or {}).get(remote.filename))
    except ChecksumError:
        raise
    except _NETWORK_ERRORS as exc:
        # One error, not a chain: the network exception's own traceback is
        # long and only its reason helps, so the reason goes into the message.
        reason = getattr(exc, "reason", None) or exc
        raise FileNotFoundError(
            f"{what}: no local copy ({wanted}) in{where}\n"
            f"and the download failed ({reason}); offline? {advice}"
        ) from None
    return [cache / remote.filename for remote in remotes]
