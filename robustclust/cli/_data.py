"""Reading the command line's INPUT: tables, arrays and graphs.

Every reader turns its file into a :class:`Dataset`; every problem with the
file becomes a :class:`DataError` whose message is one line naming the file,
the column or the rows at fault (the command exits with status 1).  Rows are
numbered from 1, the header line not counted.
"""

import math
import re
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np
import pandas as pd

#: File name suffix -> input kind.  CSV and TSV may also be compressed
#: (``data.csv.gz``, ...), as pandas reads them.
SUFFIXES = {
    ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet", ".npy": "npy",
    ".gml": "gml", ".edges": "edgelist", ".txt": "edgelist",
}
GRAPH_KINDS = ("gml", "edgelist")
#: Columns the commands add to the rows they write; an input that has them
#: (an earlier output) does not use them as data unless they are named.
RESULT_COLUMNS = ("cluster", "is_outlier", "outlier_score")
_COMPRESSED = (".gz", ".bz2", ".xz", ".zip", ".zst")


class DataError(click.ClickException):
    """A problem with the data or a file: one line on stderr, exit status 1."""

    exit_code = 1


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
    labels : list
        How the summary names each row: its number (from 1) or node name.
    X : pandas.DataFrame or None
        The selected numeric columns of the rows used (None for graphs).
    graph : networkx.Graph or None
        The graph, for graph inputs.
    used : ndarray of bool
        Rows that are in X (False for rows left out for missing values).
    skipped : dict
        Columns left out by the default column selection: name -> why
        ("not numeric" or "earlier result").
    """

    path: Path
    kind: str
    frame: pd.DataFrame
    labels: list
    X: pd.DataFrame | None = None
    graph: object = None
    used: np.ndarray | None = None
    skipped: dict | None = None

    @property
    def columns(self):
        """Names of the columns used (empty for graphs)."""
        return [] if self.X is None else list(self.X.columns)

    @property
    def used_labels(self):
        """Labels of the rows in X."""
        return [label for label, keep in zip(self.labels, self.used) if keep]

    @property
    def dropped(self):
        """Labels of the rows left out for missing values."""
        return [label for label, keep in zip(self.labels, self.used) if not keep]


def input_kind(path):
    """The kind of an input file, from its name.

    Raises
    ------
    click.BadParameter
        Unknown suffix (a usage error: exit status 2).
    """
    suffixes = [s.lower() for s in Path(path).suffixes]
    if len(suffixes) >= 2 and suffixes[-1] in _COMPRESSED and suffixes[-2] in (".csv", ".tsv"):
        return SUFFIXES[suffixes[-2]]
    if suffixes and suffixes[-1] in SUFFIXES:
        return SUFFIXES[suffixes[-1]]
    raise click.BadParameter(
        f"cannot tell the format of {path} from its name: expected one of "
        f"{', '.join(SUFFIXES)} (CSV/TSV may be compressed, e.g. .csv.gz)",
        param_hint="INPUT")


def read_input(path, *, columns=None, drop_missing=False):
    """Read INPUT and select its numeric data.

    Parameters
    ----------
    path : str or Path
    columns : list of str, default=None
        Columns to use, in this order; None uses every numeric column.
    drop_missing : bool, default=False
        Leave out rows with a missing or infinite value in the columns used
        instead of failing.

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
    frame = read_table(path, kind)
    labels = list(range(1, len(frame) + 1))
    names, skipped = select_columns(frame, columns, path)
    X = frame[names].astype(np.float64)
    used = _finite_rows(X, labels, drop_missing, path)
    return Dataset(path, kind, frame, labels, X=X[used], used=used, skipped=skipped)


# -- tables ----------------------------------------------------------------------
def read_table(path, kind):
    """A DataFrame of every row and column of a CSV, TSV, Parquet or .npy file."""
    if kind == "npy":
        return _read_npy(path)
    if kind == "parquet":
        frame = _read_parquet(path)
    else:
        frame = _read_text_table(path, "\t" if kind == "tsv" else ",")
    if len(frame.columns) and all(_is_number(c) for c in frame.columns):
        shown = ", ".join(str(c) for c in frame.columns[:4])
        raise DataError(f"the first line of {path} ({shown}) looks like data, not column "
                        "names: add a header line naming the columns")
    if len(frame) == 0:
        raise DataError(f"{path} has a header but no data rows")
    return frame


def _read_text_table(path, sep):
    what = "TSV" if sep == "\t" else "CSV"
    try:
        return pd.read_csv(path, sep=sep)
    except pd.errors.EmptyDataError:
        raise DataError(f"{path} is empty") from None
    except pd.errors.ParserError as exc:
        raise DataError(f"cannot read {path} as {what}: {_first_line(exc)}") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"cannot read {path} as {what}: not UTF-8 text "
                        f"(byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or _first_line(exc)}") from None


def _read_parquet(path):
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise DataError("reading Parquet files needs pyarrow: "
                        "pip install 'robustclust[parquet]'") from None
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow's errors have no common public base
        raise DataError(f"cannot read {path} as Parquet: {_first_line(exc)}") from None


def _read_npy(path):
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"cannot read {path} as a .npy array: {_first_line(exc)}") from None
    if not isinstance(array, np.ndarray):
        raise DataError(f"{path} is an .npz archive, not a .npy array")
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise DataError(f"{path} holds a {array.ndim}-D array; expected rows x columns (2-D)")
    if array.dtype.kind not in "iuf":
        raise DataError(f"{path} holds a {array.dtype} array; expected numbers")
    if array.shape[0] == 0:
        raise DataError(f"{path} has no rows")
    return pd.DataFrame(array, columns=[str(j) for j in range(array.shape[1])])


def _is_numeric(series):
    return (pd.api.types.is_numeric_dtype(series)
            and not pd.api.types.is_bool_dtype(series)
            and not pd.api.types.is_complex_dtype(series))


def select_columns(frame, columns, path):
    """(names of the columns to use, {skipped column: why}).

    With ``columns`` None, every numeric column is used except the
    :data:`RESULT_COLUMNS` of an earlier run; the others are skipped (and
    reported).  Named columns must exist and be numeric.
    """
    if columns is None:
        skipped = {}
        for c in frame.columns:
            if c in RESULT_COLUMNS:
                skipped[str(c)] = "earlier result"
            elif not _is_numeric(frame[c]):
                skipped[str(c)] = "not numeric"
        names = [c for c in frame.columns if str(c) not in skipped]
        if not names:
            raise DataError(f"{path} has no numeric column (columns: "
                            f"{_listing(frame.columns)})")
        return names, skipped
    by_name = {str(c): c for c in frame.columns}
    names = []
    for name in columns:
        if name not in by_name:
            raise DataError(f"no column '{name}' in {path} (columns: "
                            f"{_listing(frame.columns)})")
        column = frame[by_name[name]]
        if not _is_numeric(column):
            raise DataError(f"column '{name}' of {path} is not numeric{_example(column)}")
        names.append(by_name[name])
    return names, {}


def _example(column):
    """' (row 3: 'abc')': the first value of a column that is not a number."""
    as_numbers = pd.to_numeric(column, errors="coerce")
    bad = np.flatnonzero(as_numbers.isna().to_numpy() & column.notna().to_numpy())
    if len(bad) == 0:
        return ""
    return f" (row {bad[0] + 1}: {str(column.iloc[bad[0]])!r})"


def _finite_rows(X, labels, drop_missing, path):
    """Rows of X with only finite values; an error naming the others unless dropped."""
    values = X.to_numpy()
    finite = np.isfinite(values)
    keep = finite.all(axis=1)
    if keep.all():
        return keep
    if drop_missing:
        if not keep.any():
            raise DataError(f"every row of {path} has a missing value in the columns used")
        return keep
    bad_rows = [labels[i] for i in np.flatnonzero(~keep)]
    bad_cols = [str(c) for c, ok in zip(X.columns, finite.all(axis=0)) if not ok]
    what = "missing or infinite values" if np.isinf(values).any() else "missing values"
    raise DataError(
        f"{what} in {rows_phrase(bad_rows)} of {path} ({_plural('column', bad_cols)} "
        f"{', '.join(bad_cols)}): use --drop-missing to leave these rows out")


# -- graphs ----------------------------------------------------------------------
def read_graph(path, kind):
    """An undirected networkx graph from a GML file or an edge list.

    GML nodes are named by their ``label`` attribute (their ``id`` when they
    have none).  An edge list has one edge per line, ``node node`` or
    ``node node weight``, separated by spaces, tabs or commas; ``#`` starts
    a comment.  A multi-graph becomes a simple graph (one edge per pair of
    nodes); a directed graph is a :class:`DataError` (the graph kernel
    needs symmetric links).
    """
    import networkx as nx

    if kind == "gml":
        try:
            try:
                graph = nx.read_gml(path, label="label")
            except nx.NetworkXError as exc:
                if "label" not in str(exc):
                    raise
                graph = nx.read_gml(path, label="id")
        except (nx.NetworkXError, ValueError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read {path} as GML: {_first_line(exc)}") from None
    else:
        graph = _read_edge_list(path)
    if graph.is_directed():
        raise DataError(f"{path} holds a directed graph; clustering needs an undirected one "
                        "(write 'directed 0' in the file to read its edges as undirected)")
    graph = nx.Graph(graph)
    if graph.number_of_nodes() == 0:
        raise DataError(f"{path} has no nodes")
    return graph


def _read_edge_list(path):
    import networkx as nx

    graph = nx.Graph()
    try:
        lines = path.read_text().splitlines()
    except UnicodeDecodeError as exc:
        raise DataError(f"cannot read {path} as an edge list: not UTF-8 text "
                        f"(byte {exc.start})") from None
    for number, line in enumerate(lines, start=1):
        fields = [f for f in re.split(r"[\s,]+", line.split("#", 1)[0].strip()) if f]
        if not fields:
            continue
        if len(fields) not in (2, 3):
            raise DataError(f"{path}, line {number}: expected 'node node' or "
                            f"'node node weight', got {len(fields)} fields")
        weight = 1.0
        if len(fields) == 3:
            try:
                weight = float(fields[2])
            except ValueError:
                weight = math.nan
            if not (math.isfinite(weight) and weight >= 0):
                raise DataError(f"{path}, line {number}: the edge weight {fields[2]!r} is "
                                "not a non-negative number")
        graph.add_edge(fields[0], fields[1], weight=weight)
    return graph


# -- messages --------------------------------------------------------------------
def rows_phrase(labels, noun="row", limit=10):
    """'row 3', 'rows 3 and 17', 'rows 1, 2, ..., 10 and 5 more'."""
    labels = [str(label) for label in labels]
    if len(labels) == 1:
        return f"{noun} {labels[0]}"
    shown, rest = labels[:limit], len(labels) - limit
    if rest > 0:
        return f"{noun}s {', '.join(shown)} and {rest} more"
    return f"{noun}s {', '.join(shown[:-1])} and {shown[-1]}"


def _plural(noun, items):
    return noun if len(items) == 1 else noun + "s"


def _listing(names, limit=12):
    names = [str(n) for n in names]
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _is_number(text):
    try:
        float(str(text))
    except ValueError:
        return False
    return True


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
