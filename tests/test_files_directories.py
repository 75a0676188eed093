"""Directories published whole (robustclust._files): the output of a dataset fit.

A directory is written under a hidden temporary name beside its destination
and renamed into place at the end: never over data (a file, a directory
that is not empty), all or none with the files published beside it, and
nothing left behind on an error or a signal.  The same cases as the files'
tests in test_cli_hardening.py (sections 1 and 3).
"""

import os
import signal
import time
from pathlib import Path

import pytest

from robustclust import _files
from robustclust._files import StagedFiles, UnsafeWriteError, check_directory_destination


def listing(where):
    """Every entry of a folder, hidden temporary files included."""
    return sorted(p.name for p in Path(where).iterdir())


def fill(directory, names=("part.0", "part.1")):
    for name in names:
        (Path(directory) / name).write_text(f"new {name}")


def contents(directory):
    return {p.name: p.read_text() for p in sorted(Path(directory).iterdir())}


def test_a_directory_is_published_whole_under_its_name(tmp_path):
    with StagedFiles() as staged:
        with staged.directory(tmp_path / "out") as tmp:
            fill(tmp)
            # written under a hidden name beside the destination
            assert tmp.parent == tmp_path and tmp.name.startswith(".out.")
            assert tmp.name.endswith(".tmp")
        assert listing(tmp_path) == [tmp.name]
        staged.publish()
    assert listing(tmp_path) == ["out"]
    assert contents(tmp_path / "out") == {"part.0": "new part.0", "part.1": "new part.1"}
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o777 & ~mask


def test_an_empty_directory_is_replaced(tmp_path):
    (tmp_path / "out").mkdir()
    with StagedFiles() as staged:
        with staged.directory(tmp_path / "out") as tmp:
            fill(tmp)
        staged.publish()
    assert listing(tmp_path) == ["out"]
    assert listing(tmp_path / "out") == ["part.0", "part.1"]


def _make_notes(path):
    path.mkdir()
    (path / "notes.txt").write_text("mine")


def _make_file(path):
    path.write_text("mine")


def _make_link(path):
    (path.parent / "elsewhere").mkdir()
    path.symlink_to(path.parent / "elsewhere")


@pytest.mark.parametrize("appears", [_make_notes, _make_file, _make_link])
def test_what_appears_meanwhile_is_kept_and_nothing_is_written(tmp_path, appears):
    with pytest.raises(UnsafeWriteError) as info:
        with StagedFiles() as staged:
            with staged.directory(tmp_path / "out") as tmp:
                fill(tmp)
            appears(tmp_path / "out")  # after the checks, before the publication
            staged.publish()
    assert str(info.value) == (f"{tmp_path / 'out'} was created by another program while this "
                               "command ran (another run?); it was left as it is and nothing "
                               "was written (use --force to overwrite it)")
    out = tmp_path / "out"
    if appears is _make_notes:
        assert listing(tmp_path) == ["out"] and contents(out) == {"notes.txt": "mine"}
    elif appears is _make_file:
        assert listing(tmp_path) == ["out"] and out.read_text() == "mine"
    else:
        assert listing(tmp_path) == ["elsewhere", "out"] and out.is_symlink()
        assert listing(tmp_path / "elsewhere") == []


@pytest.mark.parametrize("was_empty", [False, True])
def test_a_directory_and_files_are_published_all_or_none(tmp_path, was_empty):
    if was_empty:
        (tmp_path / "out").mkdir()
    (tmp_path / "b.txt").write_text("theirs")
    with pytest.raises(UnsafeWriteError, match="b.txt was created by another program"):
        with StagedFiles() as staged:
            with staged.directory(tmp_path / "out") as tmp:
                fill(tmp)
            with staged.open(tmp_path / "b.txt", "w") as fh:
                fh.write("ours")
            staged.publish()  # the directory first, then the file, which exists
    # the directory was taken back (an empty one that was there is there again)
    assert listing(tmp_path) == (["b.txt", "out"] if was_empty else ["b.txt"])
    if was_empty:
        assert listing(tmp_path / "out") == []
    assert (tmp_path / "b.txt").read_text() == "theirs"


def test_a_failing_writer_leaves_nothing(tmp_path):
    with pytest.raises(OSError, match="disk full"):
        with StagedFiles() as staged:
            with staged.directory(tmp_path / "out") as tmp:
                fill(tmp)
                raise OSError("disk full")
    assert listing(tmp_path) == []


def _earlier_output(directory):
    other = [p.name for p in Path(directory).iterdir() if not p.name.startswith("part.")]
    return None if not other else f"it holds {', '.join(sorted(other))}"


def test_replace_moves_an_earlier_output_aside_then_removes_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    fill(out, ["part.0", "part.7"])
    (out / "part.7").write_text("old part.7")
    with StagedFiles(replace=True) as staged:
        with staged.directory(out, replaceable=_earlier_output) as tmp:
            fill(tmp)
        staged.publish()
    assert listing(tmp_path) == ["out"]  # no .out.*.old left
    assert contents(out) == {"part.0": "new part.0", "part.1": "new part.1"}


def test_replace_puts_back_a_directory_that_changed_meanwhile(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "part.0").write_text("old")
    with pytest.raises(UnsafeWriteError) as info:
        with StagedFiles(replace=True) as staged:
            with staged.directory(out, replaceable=_earlier_output) as tmp:
                fill(tmp)
            (out / "notes.txt").write_text("mine")  # after the checks
            staged.publish()
    assert str(info.value) == (f"{out} changed while this command ran (it holds notes.txt); "
                               "it was left as it is and nothing was written")
    assert listing(tmp_path) == ["out"]
    assert contents(out) == {"notes.txt": "mine", "part.0": "old"}


def test_replace_puts_back_the_old_output_when_a_file_fails(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "part.0").write_text("old")
    (tmp_path / "model.npz").mkdir()  # os.replace of a file onto a directory fails
    with pytest.raises(OSError):
        with StagedFiles(replace=True) as staged:
            with staged.directory(out, replaceable=_earlier_output) as tmp:
                fill(tmp)
            with staged.open(tmp_path / "model.npz") as fh:
                fh.write(b"model")
            staged.publish()
    assert listing(tmp_path) == ["model.npz", "out"]
    assert contents(out) == {"part.0": "old"}


class _Terminated(Exception):
    pass


def _raise_terminated(signum, frame):
    raise _Terminated


@pytest.mark.parametrize("moment", ["creating", "publishing", "replacing"])
def test_a_signal_at_the_creation_or_the_publication_leaves_nothing(tmp_path, monkeypatch,
                                                                    moment):
    # the signal arrives right after the temporary directory is made (before its
    # name is returned) or right after it is renamed to its destination: the names
    # are recorded first, so the cleanup finds everything, and a replaced output
    # moved aside is put back
    real_make, real_rename = _files._make_private_directory, _files._rename_directory

    def make(name):
        real_make(name)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler interrupts this

    def rename(tmp, path):
        real_rename(tmp, path)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)

    out = tmp_path / "out"
    if moment == "replacing":
        out.mkdir()
        (out / "part.0").write_text("old")
    if moment == "creating":
        monkeypatch.setattr(_files, "_make_private_directory", make)
    else:
        monkeypatch.setattr(_files, "_rename_directory", rename)
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        with pytest.raises(_Terminated):
            with StagedFiles(replace=moment == "replacing") as staged:
                with staged.directory(out, replaceable=_earlier_output) as tmp:
                    fill(tmp)
                staged.publish()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if moment == "replacing":
        assert listing(tmp_path) == ["out"] and contents(out) == {"part.0": "old"}
    else:
        assert listing(tmp_path) == []


# -- checks before any work -------------------------------------------------------------------
def test_check_directory_destination(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.parquet").write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    full = tmp_path / "full"
    full.mkdir()
    (full / "part.0").write_text("x")
    (full / "notes.txt").write_text("x")
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "part.0").write_text("x")
    inputs = [data / "a.parquet"]

    def check(name, force=False):
        return check_directory_destination(tmp_path / name, inputs=inputs, force=force,
                                           replaceable=_earlier_output)

    assert check("new") == tmp_path / "new"
    assert check("empty") == tmp_path / "empty"
    assert check("earlier", force=True) == tmp_path / "earlier"
    assert check("file", force=True) == tmp_path / "file"
    refused = {
        ("data", True): f"refusing to write over the input: {data} is or holds an input file",
        ("data/a.parquet", True): f"refusing to write over the input: {data / 'a.parquet'} "
                                  "is or holds an input file",
        ("earlier", False): f"{earlier} already exists (use --force to replace it)",
        ("file", False): f"{tmp_path / 'file'} already exists (use --force to replace it)",
        ("full", True): f"{full} is a directory that is not empty and not an earlier output "
                        "(it holds notes.txt): refusing to replace it, even with --force",
        ("missing/out", False): f"cannot write {tmp_path / 'missing/out'}: directory "
                                f"{tmp_path / 'missing'} does not exist",
    }
    for (name, force), message in refused.items():
        with pytest.raises(UnsafeWriteError) as info:
            check(name, force)
        assert str(info.value) == message, name
    # without a rule every directory that holds anything is refused
    with pytest.raises(UnsafeWriteError, match=r"\(it holds part.0\): refusing"):
        check_directory_destination(earlier, force=True)
