"""Reading the command line's INPUT: tables, arrays and graphs.

Every reader turns its file into a :class:`Dataset`; every problem with the
file becomes a :class:`DataError` whose message is one line naming the file,
the column or the rows at fault (the command exits with status 1).  Rows are
numbered from 1, the header line not counted; *lines* are numbered as an
editor numbers them.

Which columns are features
--------------------------
Without ``--columns`` every numeric column is used except, each listed in
the summary with the reason:

* the result columns of an earlier run (``cluster``, ``is_outlier``,
  ``outlier_score``);
* columns without a name in the header line (the index column that
  ``pandas.DataFrame.to_csv`` writes by default): a warning says so;
* columns with no value at all (trailing empty spreadsheet columns);
* whole numbers written with leading zeros (``00501``): codes such as zip
  codes or ids, not quantities.

Named columns are used whatever they are, as long as they hold numbers.
"""

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np
import pandas as pd

from ._errors import DataError, first_line, listing, rows_phrase
from ._graphs import read_graph
from ._tables import (
    WIDE,
    check_fits,
    compression_of,
    is_unnamed,
    numeric_matrix,
    read_text_table,
)

__all__ = ["DataError", "Dataset", "input_kind", "read_graph", "read_input", "rows_phrase"]

#: File name suffix -> input kind.  CSV and TSV may also be compressed
#: (``data.csv.gz``, ...).
SUFFIXES = {
    ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet", ".npy": "npy",
    ".gml": "gml", ".edges": "edgelist", ".txt": "edgelist",
}
GRAPH_KINDS = ("gml", "edgelist")
#: Columns the commands add to the rows they write; an input that has them
#: (an earlier output) does not use them as data unless they are named.
RESULT_COLUMNS = ("cluster", "is_outlier", "outlier_score")


class _Picked(Sequence):
    """``labels[positions[i]]`` for each i: the labels of the rows kept, without
    a list of them (a table's labels are a ``range``)."""

    def __init__(self, labels, positions):
        self._labels, self._positions = labels, positions

    def __len__(self):
        return len(self._positions)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._labels[j] for j in self._positions[i]]
        return self._labels[self._positions[i]]


@dataclass
class Dataset:
    """What a command read from its INPUT.

    Attributes
    ----------
    path : Path
    kind : str
        One of the values of :data:`SUFFIXES`.
    frame : pandas.DataFrame
        Every input row: all columns of a table or array, or for a graph the
        columns ``node`` (the node names) and ``degree`` (the number of
        edges at the node, a self-loop counting twice).
    labels : sequence
        How the summary names each row: its number (from 1, a ``range``: no
        list of a Python int per row) or node name.
    X : pandas.DataFrame or None
        The selected numeric columns of the rows used (None for graphs).
    graph : networkx.Graph or None
        The graph, for graph inputs.
    used : ndarray of bool
        Rows that are in X (False for rows left out for missing values).
    skipped : dict
        Columns left out by the default column selection: name -> why.
    header : list of str or None
        Column names as written in a CSV/TSV header (None for other inputs).
    raw : pandas.DataFrame or None
        Every field of a CSV/TSV file as its text (when asked for).
    """

    path: Path
    kind: str
    frame: pd.DataFrame
    labels: object
    X: pd.DataFrame | None = None
    graph: object = None
    used: np.ndarray | None = None
    skipped: dict | None = None
    header: list | None = None
    raw: pd.DataFrame | None = None
    #: (rows, columns) of the input table when ``frame`` no longer holds every
    #: column (a CSV/TSV table's feature columns live in X only).
    shape: tuple | None = None
    #: Whether X's float block is the reader's own array, shared with no
    #: other frame (not ``frame``, which other inputs' rows are written
    #: from): a fit may centre it in place (:func:`._models.own_matrix`).
    X_owned: bool = False

    @property
    def n_rows(self):
        """Rows (nodes) of the input."""
        return len(self.frame) if self.shape is None else self.shape[0]

    @property
    def n_columns(self):
        """Columns of the input table."""
        return len(self.frame.columns) if self.shape is None else self.shape[1]

    @property
    def columns(self):
        """Names of the columns used (empty for graphs)."""
        return [] if self.X is None else list(self.X.columns)

    @property
    def used_labels(self):
        """Labels of the rows in X (a sequence indexed by X's rows)."""
        if self.used.all():
            return self.labels
        return _Picked(self.labels, np.flatnonzero(self.used))

    @property
    def dropped(self):
        """Labels of the rows left out for missing values."""
        return [self.labels[i] for i in np.flatnonzero(~self.used)]

    def output_frame(self):
        """The input rows to write out, earlier result columns left out.

        A CSV/TSV read with ``raw=True`` gives its fields as written (so
        ``00501`` stays ``00501`` and ``NA`` stays ``NA``) under the names of
        its header line; other inputs give their typed values.
        """
        if self.raw is None and self.shape is not None:
            raise ValueError("the typed frame of a CSV/TSV input does not hold its feature "
                             "columns: read it with raw=True to write its rows")
        frame = self.frame if self.raw is None else self.raw
        names = list(frame.columns) if self.header is None else list(self.header)
        keep = [i for i, name in enumerate(frame.columns) if name not in RESULT_COLUMNS]
        out = frame.iloc[:, keep].copy()
        out.columns = [names[i] for i in keep]
        return out


def input_kind(path):
    """The kind of an input file, from its name.

    Raises
    ------
    click.BadParameter
        Unknown suffix (a usage error: exit status 2).
    """
    suffixes = [s.lower() for s in Path(path).suffixes]
    if len(suffixes) >= 2 and compression_of(Path(path)) and suffixes[-2] in (".csv", ".tsv"):
        return SUFFIXES[suffixes[-2]]
    if suffixes and suffixes[-1] in SUFFIXES:
        return SUFFIXES[suffixes[-1]]
    raise click.BadParameter(
        f"cannot tell the format of {path} from its name: expected one of "
        f"{', '.join(SUFFIXES)} (CSV/TSV may be compressed, e.g. .csv.gz)",
        param_hint="INPUT")


def read_input(path, *, columns=None, drop_missing=False, raw=False, order="F"):
    """Read INPUT and select its numeric data.

    Parameters
    ----------
    path : str or Path
    columns : list of str, default=None
        Columns to use, in this order; None uses every numeric column but
        those listed in the module's notes.
    drop_missing : bool, default=False
        Leave out rows with a missing or infinite value in the columns used
        instead of failing.
    raw : bool, default=False
        Keep the text of every field of a CSV/TSV file (for the output).
    order : {"F", "C"}, default="F"
        Layout of X's block: "F" as pandas lays out a table it read (see
        :func:`_features`), "C" as the estimators take it (their input check
        then copies nothing: one copy of the values fewer at a fit's peak).

    Returns
    -------
    dataset : Dataset
    """
    path = Path(path)
    kind = input_kind(path)
    if not path.exists():
        raise DataError(f"no such file: {path}")
    if path.is_dir():
        raise DataError(f"{path} is a directory, not a data file")
    if kind in GRAPH_KINDS:
        if columns is not None:
            raise click.UsageError("--columns does not apply to graph inputs")
        graph = read_graph(path, kind)
        names = [str(node) for node in graph.nodes]
        degrees = [degree for _, degree in graph.degree()]
        return Dataset(path, kind, pd.DataFrame({"node": names, "degree": degrees}), names,
                       graph=graph, used=np.ones(len(names), dtype=bool))
    header, raw_frame, codes = None, None, {}
    if kind in ("csv", "tsv"):
        table = read_text_table(path, "\t" if kind == "tsv" else ",", raw=raw)
        frame, header, raw_frame, codes = table.frame, table.header, table.raw, table.codes
    elif kind == "npy":
        frame = _read_npy(path)
    else:
        frame = _read_parquet(path)
    _check_table(frame, path, kind)
    labels = range(1, len(frame) + 1)
    names, skipped = select_columns(frame, columns, path, header=header, codes=codes)
    position = {name: i for i, name in enumerate(frame.columns)}
    positions = [position[name] for name in names]
    values = numeric_matrix(frame, positions, order=order)
    used = _finite_rows(values, names, labels, drop_missing, path)
    X = _features(values, names, used)
    # a new array (not a view of the frame's columns): the fit may change it
    owned = values.flags.owndata or not used.all()
    del values
    shape = None
    if kind in ("csv", "tsv"):
        # its rows are written from ``raw``: the typed feature columns, a copy of
        # X, would only double the memory a fit holds
        shape = frame.shape
        frame = frame.drop(columns=frame.columns[positions])
    return Dataset(path, kind, frame, labels, X=X, used=used, skipped=skipped, header=header,
                   raw=raw_frame, shape=shape, X_owned=owned)


# -- tables ----------------------------------------------------------------------
def _features(values, names, used):
    """The feature columns of the rows used: one float64 block, laid out as pandas does.

    ``pandas.read_csv(path)[columns].to_numpy()`` is column-major (Fortran
    order); the estimator gets the same values in the same layout, so that
    even the last bits of a ``--standardize`` scaling agree with the
    library's on such a frame.  One block rather than pandas' one block per
    column: on a table of 100,000 columns that makes the estimator's input
    checks take seconds instead of half a minute.
    """
    if used.all():
        block = values
    elif values.flags.f_contiguous:
        block = np.asfortranarray(values[used])
    else:
        block = np.ascontiguousarray(values[used])
    # the rows' numbers in the table (a range when every row is used: no (N,) array)
    index = pd.RangeIndex(len(used)) if used.all() else np.flatnonzero(used)
    return pd.DataFrame(block, columns=names, index=index, copy=False)


def _check_table(frame, path, kind):
    if kind != "npy" and len(frame.columns) and all(_is_number(c) for c in frame.columns):
        shown = ", ".join(str(c) for c in frame.columns[:4])
        raise DataError(f"the first line of {path} ({shown}) looks like data, not column "
                        "names: add a header line naming the columns")
    if len(frame) == 0:
        raise DataError(f"{path} has a header but no data rows")


def _read_parquet(path):
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise DataError("reading Parquet files needs pyarrow: "
                        "pip install 'robustclust[parquet]'") from None
    try:
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(path).metadata
        rows, columns = meta.num_rows, meta.num_columns
    except Exception as exc:  # pyarrow's errors have no common public base
        raise DataError(f"cannot read {path} as Parquet: {first_line(exc)}") from None
    check_fits(path, rows, columns)  # before any page is read
    try:
        frame = pd.read_parquet(path, page_checksum_verification=True)
    except MemoryError:
        raise
    except Exception as exc:  # pyarrow's errors have no common public base
        raise DataError(f"cannot read {path} as Parquet: {first_line(exc)}") from None
    frame.columns = [str(c) for c in frame.columns]
    return frame.reset_index(drop=True)


def _read_npy(path):
    try:
        # mapped, not read: the header's shape is checked against the memory
        # left (and the file's size) before anything is allocated
        array = np.load(path, allow_pickle=False, mmap_mode="r")
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"cannot read {path} as a .npy array: {first_line(exc)}") from None
    if not isinstance(array, np.ndarray):
        raise DataError(f"{path} is an .npz archive, not a .npy array")
    if array.ndim in (1, 2) and array.dtype.kind in "iuf":
        rows = array.shape[0]
        check_fits(path, rows, 1 if array.ndim == 1 else array.shape[1])
    try:
        array = np.array(array)
    except (ValueError, OSError) as exc:
        raise DataError(f"cannot read {path} as a .npy array: {first_line(exc)}") from None
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise DataError(f"{path} holds a {array.ndim}-D array; expected rows x columns (2-D)")
    if array.dtype.kind not in "iuf":
        raise DataError(f"{path} holds a {array.dtype} array; expected numbers")
    if array.shape[0] == 0:
        raise DataError(f"{path} has no rows")
    return pd.DataFrame(array, columns=[str(j) for j in range(array.shape[1])])


def _numeric_columns(frame):
    """Boolean per column: numbers (not booleans, not complex)."""
    return np.array([pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t)
                     and not pd.api.types.is_complex_dtype(t) for t in frame.dtypes])


def skipped_columns(names, header, empty, numeric, codes, path):
    """{column: why it is not a feature} when no columns are named (the module's
    notes): earlier results, empty columns, unnamed ones (with a warning each),
    text, leading-zero codes.  The one rule of the in-memory and dataset readers."""
    skipped, unnamed = {}, []
    for position, name in enumerate(names):
        if name in RESULT_COLUMNS:
            skipped[name] = "earlier result"
        elif empty[position]:
            skipped[name] = "empty"
        elif is_unnamed(name, header[position]):
            skipped[name] = "no name"
            unnamed.append(position + 1)
        elif not numeric[position]:
            skipped[name] = "not numeric"
        elif name in codes:
            skipped[name] = f"a code? {codes[name]!r} has a leading zero"
    for position in unnamed:
        warnings.warn(f"column {position} of {path} has no name in the header line (an "
                      "index written by pandas?); it is not used: name it in the header "
                      "to use it", UserWarning, stacklevel=3)
    return skipped


def select_columns(frame, columns, path, *, header=None, codes=None):
    """(names of the columns to use, {skipped column: why}).

    With ``columns`` None, every numeric column is used except those of the
    module's notes, which are returned as skipped.  Named columns must exist
    and be numeric.
    """
    codes = codes or {}
    numeric = _numeric_columns(frame)
    if columns is None:
        header = header or [str(c) for c in frame.columns]
        skipped = skipped_columns(frame.columns, header, _empty_columns(frame, numeric),
                                  numeric, codes, path)
        names = [c for c in frame.columns if c not in skipped]
        if not names:
            raise DataError(f"{path} has no numeric column to use (columns: "
                            f"{_describe_skipped(skipped)})")
        return names, skipped
    by_name = {str(c): position for position, c in enumerate(frame.columns)}
    names = []
    for name in columns:
        if name not in by_name:
            raise DataError(f"no column '{name}' in {path} (columns: "
                            f"{listing(frame.columns)})")
        position = by_name[name]
        column = frame.iloc[:, position]
        if not numeric[position]:
            if column.isna().all():
                raise DataError(f"column '{name}' of {path} is empty")
            raise DataError(f"column '{name}' of {path} is not numeric{_example(column)}")
        names.append(frame.columns[position])
    return names, {}


def _empty_columns(frame, numeric):
    """Boolean per column: no value at all."""
    empty = np.zeros(len(frame.columns), dtype=bool)
    numbers = np.flatnonzero(numeric)
    if 0 < len(numbers) <= WIDE:  # a column at a time: no copy of the table
        empty[numbers] = [bool(np.isnan(frame.iloc[:, j].to_numpy(dtype=np.float64)).all())
                          for j in numbers]
    elif len(numbers):
        empty[numbers] = np.isnan(numeric_matrix(frame, numbers)).all(axis=0)
    others = np.flatnonzero(~numeric)
    if len(others):
        empty[others] = frame.iloc[:, others].isna().all(axis=0).to_numpy()
    return empty


def _describe_skipped(skipped):
    return listing([f"{name} ({why})" for name, why in skipped.items()], limit=8)


def _example(column):
    """' (row 3: 'abc')': the first value of a column that is not a number."""
    as_numbers = pd.to_numeric(column, errors="coerce")
    bad = np.flatnonzero(as_numbers.isna().to_numpy() & column.notna().to_numpy())
    if len(bad) == 0:
        return ""
    return f" (row {bad[0] + 1}: {str(column.iloc[bad[0]])!r})"


def _finite_rows(values, names, labels, drop_missing, path):
    """Rows with only finite values; an error naming the others unless dropped."""
    finite = np.isfinite(values)
    keep = finite.all(axis=1)
    if keep.all():
        return keep
    bad_cols = [str(c) for c, ok in zip(names, finite.all(axis=0)) if not ok]
    what = "missing or infinite values" if np.isinf(values).any() else "missing values"
    if not keep.any():
        raise no_complete_rows(path, what, [str(c) for c in names], bad_cols)
    if drop_missing:
        return keep
    bad_rows = [labels[i] for i in np.flatnonzero(~keep)]
    raise DataError(f"{what} in {rows_phrase(bad_rows)} of {path} "
                    f"({columns_phrase(bad_cols)}): use --drop-missing to leave these rows out")


def columns_phrase(names):
    """"column a" or "columns a and b"."""
    return f"{'column' if len(names) == 1 else 'columns'} {listing(names)}"


def no_complete_rows(path, what, names, bad_columns):
    """The error for data whose every row misses a value in ``bad_columns``, with
    the --columns that would leave those out (the in-memory and dataset readers)."""
    good = [n for n in names if n not in bad_columns]
    them = "it" if len(bad_columns) == 1 else "them"
    if not good:
        hint = "choose other columns with --columns"
    elif len(good) <= 10:
        hint = f"leave {them} out with --columns {','.join(good)}"
    else:
        hint = f"leave {them} out with --columns"
    return DataError(f"every row of {path} has {what} in the {columns_phrase(bad_columns)}: "
                     f"{hint}")


def _is_number(text):
    try:
        float(str(text))
    except ValueError:
        return False
    return True
