"""Dataset inputs of ``fit``: many Parquet or CSV files read lazily with Dask.

A *dataset* is a glob (``'data/*.parquet'``, expanded here, ``**`` included),
a directory (its ``.parquet``/``.pq`` or ``.csv``/``.tsv`` files; hidden files
and names starting with ``_``, such as ``_SUCCESS`` or ``_metadata``, are
left out) or a single Parquet file that :mod:`._commands` sends here.  The
files are read in natural order (``part.2`` before ``part.10``) and their
rows are numbered from 1 across all of them, in that order.

Partitions: a Parquet file gives one partition per run of consecutive row
groups of up to :data:`PARTITION_ROWS` rows (one per file for files of that
size or less); CSV/TSV files are cut into blocks of about :data:`CSV_BLOCKSIZE`
bytes at line ends (so a quoted field must not hold a line break).

Checks, each a :class:`DataError` of one line:

* before any data are read: the pattern matches no file; it matches
  directories, files of another kind, compressed CSV, or both Parquet and
  CSV files; a Parquet footer cannot be read (a corrupt file); the files do
  not all have the same columns (names, order, and for Parquet numeric or
  not);
* in one pass over the data (:func:`scan`): the row counts, and per column
  the values present and the non-finite ones (and for CSV the fields that
  are not numbers and the codes with leading zeros), so that the columns
  are chosen by the rules of :func:`._data.select_columns` on all the rows,
  and a named column that is not numeric, or missing values, give the
  global row numbers at fault;
* reading errors of that pass name the file (Parquet) or the pattern (CSV).

Nothing here imports dask at module level.
"""

import csv
import glob
import io
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ._data import (
    RESULT_COLUMNS,
    _numeric_columns,
    columns_phrase,
    no_complete_rows,
    skipped_columns,
)
from ._errors import DataError, count, first_line, listing, some_rows
from ._tables import COMPRESSIONS, _check_names, _ragged, line_fields

#: Row groups of a Parquet file are gathered into partitions of at most this
#: many rows (a row group larger than this is a partition of its own).
PARTITION_ROWS = 1_000_000
#: Bytes per partition of CSV/TSV files.
CSV_BLOCKSIZE = 64 * 2**20
#: Suffixes of the files of a dataset -> format.
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv"}
_SEPARATORS = {"csv": ",", "tsv": "\t"}
#: Rows at fault kept per partition and column for messages.
_SHOWN = 10
#: A number written with a leading zero (00501): a code, not a quantity (as _tables).
_LEADING_ZERO = re.compile(r"^\s*[+-]?0\d")


class PieceError(Exception):
    """A partition could not be read; the message names the file (picklable)."""


def is_pattern(text):
    """Whether INPUT is a glob pattern (and not the name of an existing file)."""
    return any(c in str(text) for c in "*?[") and not os.path.lexists(text)


def _natural_key(path):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def _describe_format(fmt):
    return {"parquet": "Parquet", "csv": "CSV", "tsv": "TSV"}[fmt]


def dataset_files(input):
    """(files in natural order, format) of a glob, a directory or a file.

    Raises
    ------
    DataError
        Nothing matches; a match is a directory or not a data file; the
        files are compressed text or of two formats.
    """
    text = str(input)
    if is_pattern(text):
        matches = [Path(p) for p in glob.glob(text, recursive=True)]
        if not matches:
            raise DataError(f"no file matches {text}")
        matches = _each_file_once(matches, text)
        folders = [p for p in matches if p.is_dir()]
        if folders:
            raise DataError(f"{text} matches the directory {folders[0]}: a pattern must match "
                            "data files only (e.g. 'data/*.parquet')")
        where = text
    elif os.path.isdir(text):
        matches = [p for p in Path(text).iterdir()
                   if not p.name.startswith((".", "_")) and p.is_file()
                   and p.suffix.lower() in FORMATS]
        if not matches:
            compressed = [p for p in Path(text).iterdir()
                          if len(p.suffixes) >= 2 and p.suffixes[-2].lower() in (".csv", ".tsv")
                          and p.suffix.lower() in COMPRESSIONS]
            if compressed:
                raise _compressed(compressed[0])
            raise DataError(f"{text} holds no Parquet (.parquet, .pq) or CSV/TSV (.csv, .tsv) "
                            "file")
        where = text
    else:
        if not os.path.exists(text):
            raise DataError(f"no such file: {text}")
        matches, where = [Path(text)], text
    matches = sorted(matches, key=_natural_key)
    formats = {}
    for path in matches:
        suffix = path.suffix.lower()
        if suffix in COMPRESSIONS and len(path.suffixes) >= 2 \
                and path.suffixes[-2].lower() in (".csv", ".tsv"):
            raise _compressed(path)
        if suffix not in FORMATS:
            raise DataError(f"{where} matches {path}, which is neither Parquet (.parquet, .pq) "
                            "nor CSV/TSV (.csv, .tsv)")
        formats.setdefault(FORMATS[suffix], path)
    if len(formats) > 1:
        (a, pa), (b, pb) = list(formats.items())[:2]
        folder = Path(text) if os.path.isdir(text) else Path(text).parent
        raise DataError(f"{where} matches both {_describe_format(a)} and {_describe_format(b)} "
                        f"files ({pa}, {pb}): a dataset is one format; name one with a "
                        f"pattern such as '{folder / ('*' + pa.suffix)}'")
    return matches, next(iter(formats))


def _each_file_once(matches, pattern):
    """The matches with each file once (by its real path), with a warning when a
    file matched under several names: a recursive glob through a symbolic link
    loop read the same 2 files 41 times (24,600 rows for 600)."""
    seen, kept = {}, []
    # each file under its shortest name (not data/loop/data/loop/...)
    for path in sorted(matches, key=lambda p: (len(p.parts), _natural_key(p))):
        real = os.path.realpath(path)
        if real in seen:
            seen[real].append(path)
            continue
        seen[real] = [path]
        kept.append(path)
    repeated = {real: names for real, names in seen.items() if len(names) > 1}
    if repeated:
        extra = sum(len(names) - 1 for names in repeated.values())
        real, names = next(iter(repeated.items()))
        warnings.warn(f"{pattern} matches {count(len(repeated), 'file')} under more than "
                      f"one name ({extra} more names in all, e.g. {names[0]} and {names[1]}: "
                      "symbolic links, or a link loop); each file is read once",
                      UserWarning, stacklevel=3)
    return kept


def _compressed(path):
    return DataError(f"{path} is compressed: the CSV/TSV files of a dataset are read in "
                     "blocks and must be plain text; decompress them, or convert them to "
                     "Parquet")


# -- the layout: files, columns, partitions ------------------------------------------------------
@dataclass
class Piece:
    """A partition of a Parquet dataset: row groups of one file."""

    path: str
    row_groups: tuple
    n_rows: int


@dataclass
class Source:
    """What a dataset holds, from the files' headers and footers (no data read).

    ``columns`` are the table's columns (for Parquet without the index
    columns pandas stored), ``header`` their names as written (CSV),
    ``numeric`` a bool per column (Parquet: from the schema; CSV: None until
    :func:`scan` has read the values).
    """

    input: str
    fmt: str
    files: list
    columns: list
    header: list
    numeric: np.ndarray | None = None
    pieces: list = field(default_factory=list)  # Parquet: [Piece]
    blocks: list = field(default_factory=list)  # CSV/TSV: [TextBlock]

    @property
    def n_partitions(self):
        return len(self.pieces) if self.fmt == "parquet" else len(self.blocks)


def open_source(input):
    """The :class:`Source` of INPUT (DataError for the problems of the module's notes)."""
    try:
        import dask.array  # noqa: F401
        import dask.bytes  # noqa: F401
    except ImportError:
        raise DataError(f"reading {input} as a dataset needs dask: pip install "
                        "'robustclust[dask]'") from None
    files, fmt = dataset_files(input)
    if fmt == "parquet":
        return _parquet_source(str(input), files)
    return _text_source(str(input), files, fmt)


def _parquet_source(input, files):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError("reading Parquet files needs pyarrow: "
                        "pip install 'robustclust[dask]'") from None
    first = None
    pieces = []
    for path in files:
        try:
            meta = pq.ParquetFile(path).metadata
            frame = meta.schema.to_arrow_schema().empty_table().to_pandas()
        except Exception as exc:  # pyarrow's errors have no common public base
            raise DataError(f"cannot read {path} as Parquet: {first_line(exc)}") from None
        frame = frame.reset_index(drop=True)
        columns = [str(c) for c in frame.columns]
        _check_parquet_names(meta.schema.to_arrow_schema().names, path)
        numeric = _numeric_columns(frame)
        if first is None:
            first = (path, columns, numeric, frame.dtypes.tolist())
        else:
            _same_columns(first[0], first[1], path, columns)
            for name, a, b, ta, tb in zip(columns, first[2], numeric, first[3], frame.dtypes):
                if a != b:
                    raise DataError(f"column '{name}' is {_kind(ta, a)} in {first[0]} but "
                                    f"{_kind(tb, b)} in {path}: every file of a dataset "
                                    "needs the same columns")
        pieces += _pieces(str(path), meta)
    if not any(p.n_rows for p in pieces):
        raise DataError(f"{input} has no data rows")
    return Source(input, "parquet", files, first[1], first[1], numeric=first[2],
                  pieces=[p for p in pieces if p.n_rows])


def _check_parquet_names(names, path):
    """DataError for a Parquet schema naming two columns alike: pandas keeps one of
    them, and the dataset was fitted on the other columns (the in-memory reader
    refuses the file)."""
    seen = {}
    for position, name in enumerate(names, start=1):
        if name in seen:
            raise DataError(f"the schema of {path} names two columns {name!r} (columns "
                            f"{seen[name]} and {position}): rename one")
        seen[name] = position


def _kind(dtype, numeric):
    return f"numeric ({dtype})" if numeric else f"not numeric ({dtype})"


def _same_columns(first_path, first, path, columns):
    if columns != first:
        raise DataError(f"{path} does not have the columns of {first_path} ({listing(columns)} "
                        f"instead of {listing(first)}): every file of a dataset needs the "
                        "same columns, in the same order")


def _pieces(path, meta):
    """The partitions of one Parquet file: consecutive row groups up to PARTITION_ROWS rows."""
    pieces, groups, rows = [], [], 0
    for g in range(meta.num_row_groups):
        n = meta.row_group(g).num_rows
        if groups and rows + n > PARTITION_ROWS:
            pieces.append(Piece(path, tuple(groups), rows))
            groups, rows = [], 0
        groups.append(g)
        rows += n
    if groups:
        pieces.append(Piece(path, tuple(groups), rows))
    return pieces


def _text_source(input, files, fmt):
    from dask.bytes import read_bytes

    sep = _SEPARATORS[fmt]
    first = None
    for path in files:
        header = _header_line(path, sep)
        if first is None:
            _check_names(header, path)
            first = (path, header)
        else:
            _same_columns(first[0], first[1], path, header)
    columns = _pandas_names(first[1])
    _, per_file = read_bytes([os.path.abspath(p) for p in files], delimiter=b"\n",
                             blocksize=CSV_BLOCKSIZE, sample=False)
    blocks = [TextBlock(str(path), b, data) for path, file_blocks in zip(files, per_file)
              for b, data in enumerate(file_blocks)]
    return Source(input, fmt, files, columns, first[1], blocks=blocks)


def _pandas_names(header):
    """The names pandas gives the columns of a header line (``Unnamed: N`` when empty)."""
    return [name if name.strip() else f"Unnamed: {j}" for j, name in enumerate(header)]


@dataclass
class TextBlock:
    """A partition of a CSV/TSV dataset: a block of lines of one file (``index`` 0 holds
    the header line)."""

    path: str
    index: int
    data: object  # delayed bytes


def _header_line(path, sep):
    """The names of the first non-blank line of a CSV/TSV file."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            for record in csv.reader(fh, delimiter=sep):
                if record and any(field.strip() for field in record):
                    return record
    except UnicodeDecodeError:
        raise DataError(f"cannot read {path}: not UTF-8 text; save it as UTF-8") from None
    except (OSError, csv.Error) as exc:
        raise DataError(f"cannot read {path}: {getattr(exc, 'strerror', None) or first_line(exc)}"
                        ) from None
    raise DataError(f"{path} is empty")


def partitions(source, columns):
    """One delayed pandas DataFrame per partition, with ``columns`` (by name)."""
    import dask

    if source.fmt == "parquet":
        read = dask.delayed(read_piece, pure=True)
        # absolute paths: the workers may run in another directory (--scheduler)
        return [read(os.path.abspath(p.path), p.path, p.row_groups, list(columns))
                for p in source.pieces]
    parse = dask.delayed(parse_block, pure=True)
    sep = _SEPARATORS[source.fmt]
    return [parse(block.data, block.index == 0, source.columns, sep, list(columns))
            for block in source.blocks]


def read_piece(path, name, row_groups, columns):
    """The rows of some row groups of the Parquet file ``path`` (called ``name`` in
    messages), as a DataFrame (runs on the workers)."""
    import pyarrow.parquet as pq

    try:
        # pages that carry a checksum are checked (damaged pages decoded to
        # values of 1e67 were fitted without a word)
        table = pq.ParquetFile(path, page_checksum_verification=True).read_row_groups(
            list(row_groups), columns=columns)
        frame = table.to_pandas()
    except Exception as exc:
        raise PieceError(f"cannot read {name} as Parquet: {first_line(exc)}") from None
    frame = frame.reset_index(drop=True)
    frame.columns = [str(c) for c in frame.columns]
    return frame[columns]


def parse_block(data, first, names, sep, columns):
    """The fields of a block of CSV/TSV lines as text (NaN for missing values), the
    header line of the first block left out (runs on the workers)."""
    if first and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        return pd.DataFrame({name: pd.Series([], dtype=object) for name in columns})
    frame = pd.read_csv(io.BytesIO(data), sep=sep, header=0 if first else None, names=names,
                        usecols=columns, dtype=object, index_col=False)
    return frame.reset_index(drop=True)[columns]


def ragged_line(data, first, sep, n_fields):
    """(line in the block, its number of fields) of the first line of a block whose
    number of fields is not ``n_fields``, or None; and the block's number of lines."""
    if first and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if b'"' in data:
        reader = csv.reader(io.StringIO(data.decode("utf-8"), newline=""), delimiter=sep)
        line = 1
        for record in reader:
            start, line = line, reader.line_num + 1
            if len(record) == 0 or (len(record) == 1 and record[0] and not record[0].strip()):
                continue
            if len(record) != n_fields:
                return (start, len(record)), lines
        return None, lines
    _, _, fields, visible = line_fields(np.frombuffer(data, dtype=np.uint8), sep)
    bad = np.flatnonzero(((fields > 1) | (visible > 0)) & (fields != n_fields))
    if len(bad):
        return (int(bad[0]) + 1, int(fields[bad[0]])), lines
    return None, lines


def compute(source, tasks):
    """dask.compute(*tasks), reading errors made one DataError line."""
    import dask

    try:
        return dask.compute(*tasks)
    except PieceError as exc:
        raise DataError(str(exc)) from None
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as exc:
        if type(exc).__name__ == "PieceError":  # raised on a worker of another install
            raise DataError(first_line(exc)) from None
        died = worker_died(exc, f"reading {source.input}")
        if died is not None:
            raise DataError(died) from None
        raise DataError(f"cannot read {source.input} as {_describe_format(source.fmt)}: "
                        f"{first_line(exc)}") from None


def worker_died(exc, doing):
    """The error line of distributed's KilledWorker (a worker process that died,
    most often killed by its memory limit), or None for another exception:
    it is no fault of the file (it read "cannot read ds as Parquet")."""
    if type(exc).__name__ != "KilledWorker":
        return None
    return (f"a Dask worker process died while {doing} (killed by its memory limit, or "
            f"crashed; its log says why): give the workers more memory or use smaller "
            f"partitions ({first_line(exc)})")


# -- the pass over the data -------------------------------------------------------------------------
def column_stats(frame, text):
    """Per column of one partition (runs on the workers).

    Returns a dict of arrays over the columns: ``rows`` (the partition's
    length), ``present`` (values that are not missing), ``nonfinite``
    (missing or infinite values), ``bad_row``/``bad_value`` (the first field
    that is not a number, -1 when none: CSV only), ``whole`` (every finite
    value a whole number) and ``code`` (a field with a leading zero, or
    None; CSV only).
    """
    n, m = len(frame), len(frame.columns)
    present = np.zeros(m, dtype=np.int64)
    nonfinite = np.zeros(m, dtype=np.int64)
    bad_row = np.full(m, -1, dtype=np.int64)
    bad_value = [None] * m
    whole = np.ones(m, dtype=bool)
    code = [None] * m
    for j in range(m):
        column = frame.iloc[:, j]
        given = column.notna().to_numpy()
        present[j] = given.sum()
        if text:
            values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
            wrong = given & np.isnan(values)
            if wrong.any():
                bad_row[j] = int(np.argmax(wrong))
                bad_value[j] = str(column.iloc[bad_row[j]])
                continue
        else:
            values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        finite = np.isfinite(values)
        nonfinite[j] = n - finite.sum()
        with np.errstate(invalid="ignore"):
            whole[j] = bool(np.all(values[finite] == np.round(values[finite])))
        if text and whole[j] and finite.any():
            fields = column[finite]
            hits = fields.str.contains(_LEADING_ZERO)
            if hits.any():
                code[j] = str(fields[hits.to_numpy(dtype=bool)].iloc[0])
    return {"rows": n, "present": present, "nonfinite": nonfinite, "bad_row": bad_row,
            "bad_value": bad_value, "whole": whole, "code": code}


@dataclass
class Scan:
    """The pass over a dataset: partition lengths and per-column facts."""

    lengths: np.ndarray  # rows per partition
    present: np.ndarray  # per column
    nonfinite: np.ndarray  # per column
    not_numeric: dict  # column -> (global row, value) of the first field that is no number
    codes: dict  # column -> a field with a leading zero (whole-number CSV columns)

    @property
    def offsets(self):
        """Global row number (from 0) of the first row of each partition."""
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    @property
    def n_rows(self):
        return int(self.lengths.sum())


def scan(source):
    """Read every partition once: a :class:`Scan` (sets ``source.numeric`` for CSV)."""
    import dask

    text = source.fmt != "parquet"
    if text:
        columns = source.columns
    else:
        columns = [c for c, ok in zip(source.columns, source.numeric) if ok]
    if text:
        task = dask.delayed(text_stats, pure=True)
        sep, n = _SEPARATORS[source.fmt], len(source.header)
        parts = compute(source, [task(b.data, b.index == 0, source.columns, sep, n)
                                 for b in source.blocks])
        _check_lines(source, parts)
    else:
        task = dask.delayed(column_stats, pure=True)
        parts = compute(source, [task(part, False) for part in partitions(source, columns)])
    lengths = np.array([p["rows"] for p in parts], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    m = len(source.columns)
    position = {name: j for j, name in enumerate(source.columns)}
    # -1: not read (the non-numeric columns of Parquet files)
    present = np.where(np.isin(source.columns, columns), 0, -1).astype(np.int64)
    nonfinite = np.zeros(m, dtype=np.int64)
    whole = np.ones(m, dtype=bool)
    not_numeric, codes = {}, {}
    for p, offset in zip(parts, offsets):
        for k, name in enumerate(columns):
            j = position[name]
            present[j] += p["present"][k]
            nonfinite[j] += p["nonfinite"][k]
            whole[j] &= p["whole"][k]
            if p["bad_row"][k] >= 0 and name not in not_numeric:
                not_numeric[name] = (int(offset + p["bad_row"][k]) + 1, p["bad_value"][k])
            if p["code"][k] is not None and name not in codes:
                codes[name] = p["code"][k]
    if text:
        source.numeric = np.array([name not in not_numeric for name in source.columns])
    codes = {name: example for name, example in codes.items()
             if whole[position[name]] and name not in not_numeric}
    if lengths.sum() == 0:
        raise DataError(f"{source.input} has a header but no data rows")
    return Scan(lengths, present, nonfinite, not_numeric, codes)


def text_stats(data, first, names, sep, n_fields):
    """:func:`column_stats` of a block of CSV/TSV lines, with ``ragged`` (the first line
    with another number of fields than the header, see :func:`ragged_line`) and
    ``lines`` (runs on the workers)."""
    ragged, lines = ragged_line(data, first, sep, n_fields)
    if ragged is not None:
        return {"ragged": ragged, "lines": lines}
    stats = column_stats(parse_block(data, first, names, sep, names), True)
    stats.update(ragged=None, lines=lines)
    return stats


def _check_lines(source, parts):
    """DataError naming the first line of a CSV/TSV dataset with the wrong number of fields."""
    before = {}
    for block, part in zip(source.blocks, parts):
        if part["ragged"] is not None:
            line, n_fields = part["ragged"]
            raise _ragged(block.path, before.get(block.path, 0) + line, n_fields,
                          len(source.header))
        before[block.path] = before.get(block.path, 0) + part["lines"]


def select_dataset_columns(source, stats, columns):
    """(names of the feature columns, {skipped column: why}) by the rules of select_columns."""
    numeric, header = source.numeric, source.header
    empty = stats.present == 0
    if columns is None:
        skipped = skipped_columns(source.columns, header, empty, numeric, stats.codes,
                                  source.input)
        names = [c for c in source.columns if c not in skipped]
        if not names:
            described = listing([f"{name} ({why})" for name, why in skipped.items()], limit=8)
            raise DataError(f"{source.input} has no numeric column to use (columns: "
                            f"{described})")
        return names, skipped
    position = {name: j for j, name in enumerate(source.columns)}
    for name in columns:
        if name not in position:
            raise DataError(f"no column '{name}' in {source.input} (columns: "
                            f"{listing(source.columns)})")
        j = position[name]
        if not numeric[j]:
            if empty[j]:
                raise DataError(f"column '{name}' of {source.input} is empty")
            example = stats.not_numeric.get(name)
            where = f" (row {example[0]}: {example[1]!r})" if example else ""
            raise DataError(f"column '{name}' of {source.input} is not numeric{where}")
    return list(columns), {}


# -- missing values -------------------------------------------------------------------------------
def missing_rows(frame, text):
    """(rows kept, the first local rows left out, rows left out, any infinite) of one
    partition: rows with a missing or infinite value in any column (workers)."""
    values = _numbers(frame, text)
    finite = np.isfinite(values)
    keep = finite.all(axis=1)
    bad = np.flatnonzero(~keep)
    return int(keep.sum()), bad[:_SHOWN], int(bad.size), bool(np.isinf(values).any())


def _numbers(frame, text):
    if text:
        columns = [pd.to_numeric(frame.iloc[:, j], errors="coerce").to_numpy(dtype=np.float64)
                   for j in range(len(frame.columns))]
        return np.column_stack(columns) if columns else np.empty((len(frame), 0))
    return frame.to_numpy(dtype=np.float64, na_value=np.nan)


@dataclass
class Rows:
    """The rows a fit uses: per partition the number kept; the rows left out."""

    kept: np.ndarray
    dropped_first: list  # the first global row numbers (from 1) left out
    n_dropped: int

    @property
    def any_dropped(self):
        return self.n_dropped > 0


def used_rows(source, stats, names, drop_missing):
    """The :class:`Rows` of the fit; DataError for missing values unless dropped.

    The messages are those of the in-memory reader, with global row numbers.
    """
    position = {name: j for j, name in enumerate(source.columns)}
    bad_columns = [n for n in names if stats.nonfinite[position[n]] > 0]
    if not bad_columns:
        return Rows(stats.lengths.copy(), [], 0)
    import dask

    task = dask.delayed(missing_rows, pure=True)
    text = source.fmt != "parquet"
    parts = compute(source, [task(part, text) for part in partitions(source, names)])
    kept = np.array([p[0] for p in parts], dtype=np.int64)
    n_dropped = sum(p[2] for p in parts)
    first = []
    for (_, rows, _, _), offset in zip(parts, stats.offsets):
        first += [int(offset + r) + 1 for r in rows]
    first = first[:_SHOWN]
    what = "missing or infinite values" if any(p[3] for p in parts) else "missing values"
    if kept.sum() == 0:
        raise no_complete_rows(source.input, what, names, bad_columns)
    if not drop_missing:
        raise DataError(f"{what} in {some_rows(first, n_dropped)} of {source.input} "
                        f"({columns_phrase(bad_columns)}): use --drop-missing to leave these "
                        "rows out")
    return Rows(kept, first, n_dropped)


# -- the arrays of the fit and the rows of the output ------------------------------------------------
def features(frame, text, drop):
    """The float64 matrix of one partition's feature columns, rows with a missing
    value left out when ``drop`` (workers)."""
    values = np.asfortranarray(_numbers(frame, text))
    if drop:
        values = values[np.isfinite(values).all(axis=1)]
    return values


def kept_row_numbers(frame, text, offset):
    """Global row numbers (from 1) of one partition's rows without a missing value."""
    keep = np.isfinite(_numbers(frame, text)).all(axis=1)
    return offset + 1 + np.flatnonzero(keep).astype(np.int64)


def feature_array(source, names, rows):
    """(dask array of the features, the partitions it holds) of the rows used."""
    import dask
    import dask.array as da

    text = source.fmt != "parquet"
    task = dask.delayed(features, pure=True)
    blocks, held = [], []
    for i, part in enumerate(partitions(source, names)):
        if rows.kept[i]:
            blocks.append(da.from_delayed(task(part, text, rows.any_dropped),
                                          shape=(int(rows.kept[i]), len(names)),
                                          dtype=np.float64))
            held.append(i)
    return da.concatenate(blocks, axis=0), held


def row_numbers(source, names, rows, stats, held):
    """A dask array of the global row number (from 1) of every row used."""
    import dask
    import dask.array as da

    if not rows.any_dropped:
        return da.arange(1, stats.n_rows + 1, dtype=np.int64)
    text = source.fmt != "parquet"
    task = dask.delayed(kept_row_numbers, pure=True)
    parts = partitions(source, names)
    offsets = stats.offsets
    return da.concatenate([da.from_delayed(task(parts[i], text, int(offsets[i])),
                                           shape=(int(rows.kept[i]),), dtype=np.int64)
                           for i in held])


#: The columns of the output's part files besides the features, in order (row first).
OUTPUT_COLUMNS = ("row", *RESULT_COLUMNS)


def result_frame(frame, text, offset, labels, mask, scores):
    """One part of the output (workers): row, the features, cluster, is_outlier,
    outlier_score; rows with a missing value get empty results."""
    values = _numbers(frame, text)
    n = len(values)
    keep = np.isfinite(values).all(axis=1)
    out = pd.DataFrame({"row": np.arange(offset + 1, offset + 1 + n, dtype=np.int64)})
    for j, name in enumerate(frame.columns):
        if name not in OUTPUT_COLUMNS:  # a feature of these names is not written again
            out[name] = values[:, j]
    cluster = pd.array([pd.NA] * n, dtype="Int64")
    flagged = pd.array([pd.NA] * n, dtype="boolean")
    score = np.full(n, np.nan)
    if labels is not None:
        cluster[keep] = np.asarray(labels)
        flagged[keep] = np.asarray(mask)
        score[keep] = np.asarray(scores)
    out["cluster"] = cluster
    out["is_outlier"] = flagged
    out["outlier_score"] = score
    return out
