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

Memory.  The file is read twice as a stream of :data:`CHUNK_BYTES` blocks
(decompressed on the fly), never whole: a first pass (:func:`scan`) checks
the bytes (UTF-8, no NUL byte: a file of NUL bytes is refused at its first
block, whatever its size), the lines and their fields, and counts the rows
and columns; a table whose values would not fit in the available memory is
then refused with an estimate, before anything is allocated.  The second
pass parses a chunk of rows at a time and keeps one array per column, so
that a numeric table costs its float64 values plus one chunk.
"""

import bz2
import codecs
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
#: Bytes read at a time (the scan's numpy arrays take a few bytes per byte of it).
CHUNK_BYTES = 1 << 21
#: The longest line the scan takes: a file without line breaks is no table.
MAX_LINE_BYTES = 1 << 26
#: Bytes of memory per value at the peak of a fit that reads a table: the typed
#: columns, the float64 matrix of the features, the estimator's copy in its
#: internal units, and one more for the work arrays (a numeric table
#: measured 3.2x its values).
BYTES_PER_VALUE = 4 * 8


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


def numeric_matrix(frame, positions, order="C"):
    """The columns at ``positions`` as one float64 array (``order`` "C" or "F").

    Taking every column at once avoids pandas' per-column work, which
    dominates for tables of many thousand columns; for tables of fewer
    columns (under :data:`WIDE`) the array is filled a column at a time, so
    that it is the only copy of the values (``DataFrame.to_numpy`` builds
    one and ``ascontiguousarray`` another).
    """
    positions = np.asarray(positions, dtype=np.intp)
    if len(positions) <= WIDE:
        out = np.empty((len(frame), len(positions)), dtype=np.float64, order=order)
        for j, position in enumerate(positions):
            out[:, j] = frame.iloc[:, position].to_numpy(dtype=np.float64)
        return out
    if len(positions) == len(frame.columns) and np.array_equal(positions,
                                                                np.arange(len(positions))):
        values = frame.to_numpy(dtype=np.float64)
    else:
        values = frame.iloc[:, positions].to_numpy(dtype=np.float64)
    return np.asfortranarray(values) if order == "F" else np.ascontiguousarray(values)


#: Tables with more columns are converted at once (see numeric_matrix).
WIDE = 1000


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
    shape = scan(path, sep, what)
    header = shape.header
    _check_names(header, path)
    check_fits(path, shape.rows, len(header), raw)
    frame = _parse(path, sep, what, shape)
    frame = frame.set_axis(_pandas_names(header, frame), axis=1)
    raw_frame = _parse(path, sep, what, shape, dtype=str, na_filter=False) if raw else None
    if raw_frame is not None:
        raw_frame = raw_frame.set_axis(frame.columns, axis=1)
    codes = _code_columns(frame, raw_frame, path, sep, what, shape)
    return TextTable(frame, header, raw_frame, codes)


@dataclass
class TableShape:
    """What :func:`scan` found: the header's names, the number of data rows
    (lines, for a file without quotes) and the bytes per line on average."""

    header: list
    rows: int
    line_bytes: float
    quoted: bool


def check_fits(path, rows, columns, raw=False):
    """DataError, before anything is allocated, when a table of ``rows`` x
    ``columns`` values would not fit in the available memory."""
    from ._memory import available_memory, human_bytes

    have = available_memory()
    need = rows * columns * (BYTES_PER_VALUE + (64 if raw else 0))
    if have is not None and need > have:
        raise DataError(f"{path} has {rows} rows of {columns} columns: reading and fitting "
                        f"them needs about {human_bytes(need)} of memory, but "
                        f"{human_bytes(have)} are available: use fewer rows or columns (or "
                        "read the file as a dataset: a directory or glob of files)")


# -- bytes and text ------------------------------------------------------------------
def open_binary(path):
    """The file's bytes as a stream, decompressed; DataError for unreadable archives."""
    kind = compression_of(path)
    with _archive_errors(path, kind):
        if kind is None:
            return open(path, "rb")
        if kind in _OPENERS:
            return _OPENERS[kind](path, "rb")
        if kind == "zip":
            return _open_zip(path)
        return _open_zstd(path)


class _archive_errors:
    """Turn the errors of reading ``path`` (compressed as ``kind``) into DataErrors."""

    def __init__(self, path, kind):
        self.path, self.kind = path, kind

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        path, kind = self.path, self.kind
        if exc is None or isinstance(exc, (DataError, MemoryError)) \
                or not isinstance(exc, Exception):
            return False
        if isinstance(exc, EOFError):
            raise DataError(f"{path} is truncated: the {kind} data end before the end of "
                            "the archive") from None
        if isinstance(exc, (zlib.error, lzma.LZMAError, gzip.BadGzipFile)):
            raise DataError(f"{path} is not valid {kind} data ({first_line(exc)})") from None
        if isinstance(exc, zipfile.BadZipFile):
            raise DataError(f"{path} is not a valid zip archive ({first_line(exc)})") from None
        if type(exc).__name__ == "ZstdError":
            raise DataError(f"{path} is not valid zstd data ({first_line(exc)})") from None
        if isinstance(exc, OSError):
            if kind == "bzip2" and exc.errno is None:  # bz2's "Invalid data stream"
                raise DataError(f"{path} is not valid bzip2 data ({first_line(exc)})") \
                    from None
            raise DataError(f"cannot read {path}: {exc.strerror or first_line(exc)}") \
                from None
        return False


def _open_zip(path):
    archive = zipfile.ZipFile(path)
    members = [m for m in archive.infolist() if not m.is_dir()]
    if len(members) != 1:
        archive.close()
        names = ", ".join(m.filename for m in members[:5])
        more = f" and {len(members) - 5} more" if len(members) > 5 else ""
        held = f"{len(members)} files ({names}{more})" if members else "no file"
        raise DataError(f"{path} holds {held}; a zipped table must hold exactly one file: "
                        "extract the one to read and give its name")
    return archive.open(members[0])


def _open_zstd(path):
    try:
        import zstandard
    except ImportError:
        raise DataError(f"reading {path} needs the zstandard package: pip install "
                        "'robustclust[zstd]'") from None
    return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)


def chunks(path, size=CHUNK_BYTES):
    """The file's (decompressed) bytes, ``size`` at a time, the byte-order mark
    left out; errors of the archive as DataErrors."""
    kind = compression_of(path)
    with open_binary(path) as fh, _archive_errors(path, kind):
        first = True
        while True:
            block = fh.read(size)
            if not block:
                return
            if first and block.startswith(b"\xef\xbb\xbf"):
                block = block[3:]
            first = False
            yield block


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
    whether it holds a character that is not white space); a last line without
    its newline counts.  The separator and the newline are single bytes in
    UTF-8.  Memory: a bool per byte and an int64 per line and per separator."""
    if len(buffer) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    ends = np.flatnonzero(buffer == ord("\n"))
    if len(ends) == 0 or ends[-1] != len(buffer) - 1:
        ends = np.append(ends, len(buffer))
    starts = np.r_[0, ends[:-1] + 1]
    separators = np.flatnonzero(buffer == ord(sep))
    fields = np.searchsorted(separators, ends) - np.searchsorted(separators, starts) + 1
    visible = np.logical_or.reduceat(_VISIBLE[buffer], starts)
    return starts, ends, fields, visible


#: byte -> not white space (a lookup: np.isin sorted an int64 copy of the bytes)
_VISIBLE = np.ones(256, dtype=bool)
_VISIBLE[np.frombuffer(b" \t\r\n\f\v", dtype=np.uint8)] = False


def _nul_error(path, block, lines_before):
    at = block.index(b"\0")
    line = lines_before + block[:at].count(b"\n") + 1
    return DataError(f"line {line} of {path} holds a NUL byte: it is binary data, not a "
                     "text table")


def scan(path, sep, what):
    """One streaming pass over the file: its header and number of rows.

    Checks, a block of :data:`CHUNK_BYTES` at a time: UTF-8, no NUL byte,
    no line longer than :data:`MAX_LINE_BYTES`, and every line with as many
    fields as the header line (the csv module's records for files with
    quotes).  Raises DataError for the first problem, naming its line.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    header, rows, n_header = None, 0, None
    lines = 0          # complete lines before ``pending``
    pending = b""      # the last, unfinished line
    quoted = False
    size = 0
    bad = None         # the first line with another number of fields (no quotes)
    for block in chunks(path):
        size += len(block)
        if b"\0" in block:
            raise _nul_error(path, pending + block, lines)
        try:
            decoder.decode(block)
        except UnicodeDecodeError as exc:
            line = lines + (pending + block[:exc.start]).count(b"\n") + 1
            raise DataError(f"cannot read {path} as {what}: not UTF-8 text (line {line}, "
                            f"byte {size - len(block) + exc.start}); save it as UTF-8") \
                from None
        quoted = quoted or b'"' in block
        data = pending + block
        cut = data.rfind(b"\n") + 1
        pending = data[cut:]
        if len(pending) > MAX_LINE_BYTES:
            raise DataError(f"line {lines + 1} of {path} is longer than "
                            f"{MAX_LINE_BYTES >> 20} MiB: not a table of rows")
        if quoted or cut == 0:
            lines += data[:cut].count(b"\n")
            continue
        header, rows, n_header, bad = _count_fields(
            np.frombuffer(data, dtype=np.uint8, count=cut), sep, lines, header, rows, n_header,
            bad)
        lines += data[:cut].count(b"\n")
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise DataError(f"cannot read {path} as {what}: not UTF-8 text (the last line ends "
                        "inside a character); save it as UTF-8") from None
    if quoted:
        return _scan_quoted(path, sep, what, size)
    if pending:
        header, rows, n_header, bad = _count_fields(
            np.frombuffer(pending, dtype=np.uint8), sep, lines, header, rows, n_header, bad)
        lines += 1
    if header is None:
        raise DataError(f"{path} is empty")
    if bad is not None:
        raise _ragged(path, bad[0], bad[1], len(header))
    return TableShape(header, rows, size / max(lines, 1), False)


def _count_fields(buffer, sep, lines_before, header, rows, n_header, bad):
    """The lines of ``buffer`` (whole lines, no quotes) into the scan's counts."""
    starts, ends, counts, visible = line_fields(buffer, sep)
    # blank lines (pandas skips them): no separator and nothing but white space
    filled = np.flatnonzero((counts > 1) | (visible > 0))
    if not len(filled):
        return header, rows, n_header, bad
    if header is None:
        first = filled[0]
        header = bytes(buffer[starts[first]:ends[first]]).decode("utf-8").rstrip("\r") \
            .split(sep)
        n_header = counts[first]
        filled = filled[1:]
    rows += len(filled)
    if bad is None:
        wrong = filled[counts[filled] != n_header]
        if len(wrong):
            bad = (lines_before + int(wrong[0]) + 1, int(counts[wrong[0]]))
    return header, rows, n_header, bad


def _text_stream(path):
    """The file as text (UTF-8, byte-order mark dropped), read as a stream."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="")


def _scan_quoted(path, sep, what, size):
    """:func:`scan` for a file with quotes: the csv module's records, streamed."""
    header, rows, line = None, 0, 1
    with _text_stream(path) as fh, _archive_errors(path, compression_of(path)):
        reader = csv.reader(fh, delimiter=sep)
        try:
            for record in reader:
                start, line = line, reader.line_num + 1
                # blank as pandas sees it: nothing, or white space only (a quoted
                # empty field, "", is a row with one empty value)
                if len(record) == 0 or (len(record) == 1 and record[0]
                                        and not record[0].strip()):
                    continue
                if header is None:
                    header = record
                elif len(record) != len(header):
                    raise _ragged(path, start, len(record), len(header))
                else:
                    rows += 1
        except csv.Error as exc:
            raise DataError(f"cannot read {path}: line {reader.line_num}: {exc}") from None
    if header is None:
        raise DataError(f"{path} is empty")
    return TableShape(header, rows, size / max(line - 1, 1), True)


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


#: Rows parsed at a time: about CHUNK_BYTES of text, at least this many.
MIN_CHUNK_ROWS = 1024


def _reader(path, sep, what, shape, **options):
    """pandas' chunks of rows of the file (a stream, never its whole text)."""
    rows = max(MIN_CHUNK_ROWS, int(CHUNK_BYTES / max(shape.line_bytes, 1.0)))
    stream = _text_stream(path)
    try:
        reader = pd.read_csv(stream, sep=sep, index_col=False, chunksize=rows, **options)
    except pd.errors.EmptyDataError:
        stream.close()
        raise DataError(f"{path} is empty") from None
    except (pd.errors.ParserError, ValueError) as exc:
        stream.close()
        raise DataError(f"cannot read {path} as {what}: {first_line(exc)}") from None
    return stream, reader


def _chunks_of_rows(path, sep, what, shape, **options):
    """The file's rows as DataFrames of at most ~CHUNK_BYTES of text each."""
    stream, reader = _reader(path, sep, what, shape, **options)
    with stream, reader, _archive_errors(path, compression_of(path)):
        try:
            yield from reader
        except pd.errors.EmptyDataError:
            return
        except (pd.errors.ParserError, ValueError) as exc:
            raise DataError(f"cannot read {path} as {what}: {first_line(exc)}") from None


def _parse(path, sep, what, shape, **options):
    """The typed table, as ``pandas.read_csv`` reads it, a chunk of rows at a time.

    Each column's chunks are joined once all are read, column by column: the
    peak is the table plus one chunk and one column, where parsing the whole
    text at once held the text, pandas' tokens and the table (measured 3x a
    numeric file).  A column's type is that of its chunks together, as
    pandas gives it for the whole file (integers and floats: float64; text
    in any chunk: object).
    """
    columns = None
    for chunk in _chunks_of_rows(path, sep, what, shape, **options):
        if columns is None:
            names = list(chunk.columns)
            columns = [[] for _ in names]
        for j in range(len(names)):
            columns[j].append(chunk.iloc[:, j])
    if columns is None:  # a header and no rows
        stream, reader = _reader(path, sep, what, shape, nrows=0, **options)
        with stream:
            return reader.read() if hasattr(reader, "read") else reader
    joined = {}
    for j, name in enumerate(names):
        parts = columns[j]
        columns[j] = None
        joined[j] = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
        del parts
    frame = pd.DataFrame({j: joined.pop(j) for j in range(len(names))}, copy=False)
    frame.columns = names
    return frame


def _code_columns(frame, raw, path, sep, what, shape):
    """{name: example} of the whole-number columns written with leading zeros."""
    kinds = np.array([dtype.kind for dtype in frame.dtypes])
    candidates = list(np.flatnonzero(np.isin(kinds, ["i", "u"])))
    for j in np.flatnonzero(kinds == "f"):  # one column at a time: no copy of the table
        values = frame.iloc[:, j].to_numpy()
        finite = np.isfinite(values)
        if finite.any() and np.all(values[finite] == np.round(values[finite])):
            candidates.append(j)
    candidates = sorted(int(j) for j in candidates)
    if not candidates:
        return {}
    codes = {}
    if raw is not None:
        parts = [raw.iloc[:, candidates]]
    else:
        parts = _chunks_of_rows(path, sep, what, shape, dtype=str, na_filter=False,
                                usecols=candidates)
    for fields in parts:
        for position, j in enumerate(candidates):
            name = frame.columns[j]
            if name in codes:
                continue
            column = fields.iloc[:, position]
            hits = column.str.contains(_LEADING_ZERO, regex=True).to_numpy(dtype=bool)
            if hits.any():
                codes[name] = column.iloc[int(np.argmax(hits))]
    return {frame.columns[j]: codes[frame.columns[j]] for j in candidates
            if frame.columns[j] in codes}
