"""The manifest of a reproduction's folder: which files it wrote, with their digests.

A later run refuses a folder holding anything else (:func:`check_out_dir`),
and every file is recorded as soon as it is written (:func:`record`), so
that a run interrupted half-way is resumed by the next one.
"""

import hashlib
import json
from pathlib import Path

from .._files import UnsafeWriteError, atomic_write

#: The list of the files a reproduction wrote, in its folder.
MANIFEST = ".robustclust-reproduce.json"


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _manifest(out_dir):
    """{file name: sha256} of the files an earlier reproduction wrote into ``out_dir``."""
    try:
        files = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return files if isinstance(files, dict) else {}


def _foreign_files(out_dir):
    """Names of the entries of ``out_dir`` that no earlier reproduction wrote as they are."""
    ours = _manifest(out_dir)
    foreign = []
    for entry in sorted(out_dir.iterdir()):
        if entry.name == MANIFEST:
            continue
        if (entry.is_file() and not entry.is_symlink() and entry.name in ours
                and ours[entry.name] == _sha256(entry)):
            continue
        foreign.append(entry.name)
    return foreign


def check_out_dir(out_dir, *, force=False):
    """Refuse an output folder holding files a reproduction did not write.

    Raises
    ------
    UnsafeWriteError
        ``out_dir`` is a file, or (unless ``force``) holds an entry that is
        not in its :data:`MANIFEST` with the same content.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UnsafeWriteError(f"{out_dir} is not a directory")
    if force or not out_dir.exists():
        return
    foreign = _foreign_files(out_dir)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more"
                                          if len(foreign) > 5 else "")
        raise UnsafeWriteError(
            f"{out_dir} holds files that reproduce did not write ({shown}): choose a new or "
            "empty --out folder, or use --force to write beside them (files with the "
            "report's names are then replaced)")


def record(out_dir, written):
    """Add the files just written to the folder's manifest (dropping stale entries)."""
    files = {name: digest for name, digest in _manifest(out_dir).items()
             if (out_dir / name).is_file() and _sha256(out_dir / name) == digest}
    files.update({name: _sha256(out_dir / name) for name in written})
    text = json.dumps({"written_by": "robustclust reproduce", "files": dict(sorted(
        files.items()))}, indent=1) + "\n"
    with atomic_write(out_dir / MANIFEST, "wb") as handle:
        handle.write(text.encode("utf-8"))
