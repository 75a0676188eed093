"""Reading CSV and TSV files (plain or compressed) for the command line.

:func:`read_text_table` checks what pandas would otherwise guess at:

* compressed files are opened here (gzip, bzip2, xz, zip, zstd), so that a
  truncated or corrupted archive, or a zip with several members, is a
  :class:`DataError` naming it;
* the text must be UTF-8 (a byte-order mark is allowed);
* every line must have as many fields as the header line: pandas would
  silently take the first field of longer rows as an index or fill short
  rows with missing values; the error gives the line number;
* column names must be distinct (pandas would rename the second ``x`` to
  ``x.1``).

It returns the typed table (what ``pandas.read_csv`` gives) and, when asked,
the text of every field as it is in the file, so that the columns a command
does not use are copied to its output byte for byte.
"""

import bz2
import csv
import gzip
import io
import lzma
import re
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._errors import DataError, first_line

#: Compressed suffixes read here -> name used in messages.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zip": "zip", ".zst": "zstd"}
_OPENERS = {"gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open}
#: Names pandas gives columns without one in the header (and that a table
#: written by pandas with its index carries over).
_UNNAMED = re.compile(r"^Unnamed: \d+$")
#: A number written with a leading zero (00501): a code, not a quantity.
_LEADING_ZERO = r"^\s*[+-]?0\d"


@dataclass
class TextTable:
    """A CSV/TSV file as read by :func:`read_text_table`.

    Attributes
    ----------
    frame : pandas.DataFrame
        The typed table (numbers as int64/float64, text as object), as
        ``pandas.read_csv`` reads it (with no index column).
    header : list of str
        The names of the header line, as written (empty for unnamed columns).
    raw : pandas.DataFrame or None
        Every field as the text in the file (columns as in ``frame``).
    codes : dict
        Numeric columns whose text has leading zeros (zip codes, ids):
        name -> an example field.
    """

    frame: pd.DataFrame
    header: list
    raw: pd.DataFrame | None
    codes: dict


def numeric_matrix(frame, positions):
    """The columns at ``positions`` as one C-ordered float64 array.

    Taking every column at once avoids pandas' per-column work, which
    dominates for tables of many thousand columns.
    """
    positions = np.asarray(positions, dtype=np.intp)
    if len(positions) == len(frame.columns) and np.array_equal(positions,
                                                                np.arange(len(positions))):
        values = frame.to_numpy(dtype=np.float64)
    else:
        values = frame.iloc[:, positions].to_numpy(dtype=np.float64)
    return np.ascontiguousarray(values)


def is_unnamed(name, header_name):
    """Whether a column has no name of its own (empty, or pandas' ``Unnamed: N``)."""
    return header_name.strip() == "" or bool(_UNNAMED.match(str(name)))


def compression_of(path):
    """The compression of a file from its last suffix, or None."""
    suffix = path.suffix.lower()
    return COMPRESSIONS.get(suffix)


def read_text_table(path, sep, *, raw=False):
    """Read a CSV (``sep=","``) or TSV (``sep="\\t"``) file.

    Parameters
    ----------
    path : Path
    sep : str
    raw : bool, default=False
        Also return the text of every field.

    Returns
    -------
    table : TextTable

    Raises
    ------
    DataError
        Unreadable, truncated or corrupted file; not UTF-8; empty; a line
        with more or fewer fields than the header; a column named twice.
    """
    what = "TSV" if sep == "\t" else "CSV"
    data = _read_bytes(path)
    text = _decode(data, path, what)
    if not text.strip():
        raise DataError(f"{path} is empty")
    header = _check_fields(data, text, sep, path)
    _check_names(header, path)
    frame = _parse(text, sep, path, what, low_memory=False)
    frame = frame.set_axis(_pandas_names(header, frame), axis=1)
    raw_frame = _parse(text, sep, path, what, dtype=str, na_filter=False) if raw else None
    if raw_frame is not None:
        raw_frame = raw_frame.set_axis(frame.columns, axis=1)
    codes = _code_columns(frame, raw_frame, text, sep, path, what)
    return TextTable(frame, header, raw_frame, codes)


# -- bytes and text ------------------------------------------------------------------
def _read_bytes(path):
    """The file's bytes, decompressed; DataError for unreadable archives."""
    kind = compression_of(path)
    try:
        if kind is None:
            return path.read_bytes()
        if kind in _OPENERS:
            with _OPENERS[kind](path, "rb") as fh:
                return fh.read()
        if kind == "zip":
            return _read_zip(path)
        return _read_zstd(path)
    except EOFError:
        raise DataError(f"{path} is truncated: the {kind} data end before the end of the "
                        "archive") from None
    except (zlib.error, lzma.LZMAError, gzip.BadGzipFile) as exc:
        raise DataError(f"{path} is not valid {kind} data ({first_line(exc)})") from None
    except zipfile.BadZipFile as exc:
        raise DataError(f"{path} is not a valid zip archive ({first_line(exc)})") from None
    except MemoryError:
        raise
    except OSError as exc:
        if kind == "bzip2" and exc.errno is None:  # bz2's "Invalid data stream"
            raise DataError(f"{path} is not valid bzip2 data ({first_line(exc)})") from None
        raise DataError(f"cannot read {path}: {exc.strerror or first_line(exc)}") from None


def _read_zip(path):
    with zipfile.ZipFile(path) as archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) != 1:
            names = ", ".join(m.filename for m in members[:5])
            more = f" and {len(members) - 5} more" if len(members) > 5 else ""
            held = f"{len(members)} files ({names}{more})" if members else "no file"
            raise DataError(f"{path} holds {held}; a zipped table must hold exactly one file: "
                            "extract the one to read and give its name")
        return archive.read(members[0])


def _read_zstd(path):
    try:
        import zstandard
    except ImportError:
        raise DataError(f"reading {path} needs the zstandard package: pip install "
                        "zstandard") from None
    try:
        with open(path, "rb") as fh:
            return zstandard.ZstdDecompressor().stream_reader(fh).read()
    except zstandard.ZstdError as exc:
        raise DataError(f"{path} is not valid zstd data ({first_line(exc)})") from None


def _decode(data, path, what):
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise DataError(f"cannot read {path} as {what}: not UTF-8 text (line {line}, byte "
                        f"{exc.start}); save it as UTF-8") from None


# -- lines and fields ----------------------------------------------------------------
def _plural(n, noun):
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _ragged(path, line, n_fields, n_header):
    return DataError(
        f"line {line} of {path} has {_plural(n_fields, 'field')} but the header line has "
        f"{n_header}: every line needs one field per column (an empty field for a missing "
        "value)")


def line_fields(buffer, sep):
    """Per line of the bytes ``buffer`` (no quotes): (start, end, number of fields,
    number of characters that are not white space); a last line without its
    newline counts.  The separator and the newline are single bytes in UTF-8."""
    ends = np.flatnonzero(buffer == ord("\n"))
    if len(ends) == 0 or ends[-1] != len(buffer) - 1:
        ends = np.append(ends, len(buffer))
    starts = np.r_[0, ends[:-1] + 1]

    def per_line(positions):
        return np.searchsorted(positions, ends) - np.searchsorted(positions, starts)

    fields = per_line(np.flatnonzero(buffer == ord(sep))) + 1
    blank = np.frombuffer(b" \t\r\n\f\v", dtype=np.uint8)
    visible = per_line(np.flatnonzero(~np.isin(buffer, blank)))
    return starts, ends, fields, visible


def _check_fields(data, text, sep, path):
    """The header's names; DataError for the first line with another number of fields."""
    if '"' in text:
        return _check_quoted_fields(text, sep, path)
    # No quotes: a line's fields are its separators + 1.  Counted on the bytes
    # (the separator and the newline are single bytes in UTF-8).
    buffer = np.frombuffer(data, dtype=np.uint8)
    if data.startswith(b"\xef\xbb\xbf"):
        buffer = buffer[3:]
    starts, ends, counts, visible = line_fields(buffer, sep)
    # blank lines (pandas skips them): no separator and nothing but white space
    filled = np.flatnonzero((counts > 1) | (visible > 0))
    first = filled[0]
    header = bytes(buffer[starts[first]:ends[first]]).decode("utf-8").rstrip("\r").split(sep)
    bad = filled[counts[filled] != counts[first]]
    if len(bad):
        raise _ragged(path, int(bad[0]) + 1, int(counts[bad[0]]), len(header))
    return header


def _check_quoted_fields(text, sep, path):
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    header, line = None, 1
    try:
        for record in reader:
            start, line = line, reader.line_num + 1
            # blank as pandas sees it: nothing, or white space only (a quoted
            # empty field, "", is a row with one empty value)
            if len(record) == 0 or (len(record) == 1 and record[0] and not record[0].strip()):
                continue
            if header is None:
                header = record
            elif len(record) != len(header):
                raise _ragged(path, start, len(record), len(header))
    except csv.Error as exc:
        raise DataError(f"cannot read {path}: line {reader.line_num}: {exc}") from None
    if header is None:
        raise DataError(f"{path} is empty")
    return header


def _check_names(header, path):
    seen = {}
    for position, name in enumerate(header, start=1):
        if not name.strip():
            continue
        if name in seen:
            raise DataError(f"the header line of {path} names two columns {name!r} (columns "
                            f"{seen[name]} and {position}): rename one")
        seen[name] = position


def _pandas_names(header, frame):
    """Column names: the header's, with pandas' ``Unnamed: N`` for the empty ones."""
    return [name if name.strip() else str(auto) for name, auto in zip(header, frame.columns)]


def _parse(text, sep, path, what, **options):
    try:
        return pd.read_csv(io.StringIO(text), sep=sep, index_col=False, **options)
    except pd.errors.EmptyDataError:
        raise DataError(f"{path} is empty") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise DataError(f"cannot read {path} as {what}: {first_line(exc)}") from None


def _code_columns(frame, raw, text, sep, path, what):
    """{name: example} of the whole-number columns written with leading zeros."""
    kinds = np.array([dtype.kind for dtype in frame.dtypes])
    candidates = np.flatnonzero(np.isin(kinds, ["i", "u"]))
    floats = np.flatnonzero(kinds == "f")
    if len(floats):
        values = numeric_matrix(frame, floats)
        with np.errstate(invalid="ignore"):
            whole = ~np.isfinite(values) | (values == np.round(values))
        some = np.isfinite(values).any(axis=0)
        candidates = np.sort(np.r_[candidates, floats[whole.all(axis=0) & some]])
    if not len(candidates):
        return {}
    if raw is None:
        fields = _parse(text, sep, path, what, dtype=str, na_filter=False,
                        usecols=candidates.tolist())
    else:
        fields = raw.iloc[:, candidates]
    cells = fields.to_numpy(dtype=object)
    hits = pd.Series(cells.ravel(order="F")).str.contains(_LEADING_ZERO, regex=True)
    hits = hits.to_numpy(dtype=bool).reshape(cells.shape, order="F")
    codes = {}
    for j in np.flatnonzero(hits.any(axis=0)):
        codes[frame.columns[candidates[j]]] = cells[np.argmax(hits[:, j]), j]
    return codes
