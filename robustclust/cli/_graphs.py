"""Reading graphs for the command line: GML files and edge lists.

GML nodes are named by their ``label`` attribute, or by their ``id`` when no
node has a label; labels that name two nodes, or labels on some nodes only,
are errors (a node named by its id next to nodes named by labels would be a
silent guess).

An edge list has one edge per line: two node names and an optional
non-negative weight.  The fields of a line are separated by tabs when the
line has a tab, else by commas when it has one, else by spaces; names with
spaces are written in double quotes (``"Tom Smith" "Ann Lee" 2``) or in a
tab- or comma-separated line.  ``#`` starts a comment (outside quotes).  A
first line that names the columns (``source target`` or ``source,target,
weight``) is skipped with a warning.
"""

import math
import shlex
import warnings

from ._errors import DataError, first_line

#: Words of an edge list's header line (case-insensitive).
HEADER_WORDS = {"source", "target", "weight", "from", "to", "src", "dst", "node1", "node2",
                "source_node", "target_node", "id1", "id2"}


def read_graph(path, kind):
    """An undirected networkx graph from a GML file or an edge list.

    A multi-graph becomes a simple graph (one edge per pair of nodes); a
    directed graph is a :class:`DataError` (the graph kernel needs
    symmetric links).

    Parameters
    ----------
    path : Path
    kind : {"gml", "edgelist"}

    Returns
    -------
    graph : networkx.Graph
    """
    import networkx as nx

    graph = _read_gml(path) if kind == "gml" else _read_edge_list(path)
    if graph.is_directed():
        raise DataError(f"{path} holds a directed graph; clustering needs an undirected one "
                        "(write 'directed 0' in the file to read its edges as undirected)")
    graph = nx.Graph(graph)
    if graph.number_of_nodes() == 0:
        raise DataError(f"{path} has no nodes")
    return graph


def _read_gml(path):
    import networkx as nx

    try:
        try:
            return nx.read_gml(path, label="label")
        except nx.NetworkXError as exc:
            message = str(exc)
            if "is duplicated" in message:
                raise DataError(
                    f"cannot read {path} as GML: the {message.split(' is duplicated')[0]} "
                    "names more than one node; node labels must be unique (rename one, or "
                    "remove every label to name the nodes by their id)") from None
            if "has no 'label' attribute" not in message:
                raise
        graph = nx.read_gml(path, label="id")
    except (nx.NetworkXError, ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read {path} as GML: {first_line(exc)}") from None
    named = [node for node, attributes in graph.nodes(data=True) if "label" in attributes]
    if named:
        unnamed = next(node for node, attributes in graph.nodes(data=True)
                       if "label" not in attributes)
        raise DataError(f"cannot read {path} as GML: node {unnamed} has no label but "
                        f"{len(named)} others have one; give every node a label, or none "
                        "(the nodes are then named by their id)")
    return graph


def _fields(line, number, path):
    """The fields of one edge-list line (empty for blank and comment lines)."""
    separator = "\t" if "\t" in line else "," if "," in line else " \t"
    lexer = shlex.shlex(line, posix=True)
    lexer.whitespace, lexer.whitespace_split = separator, True
    lexer.commenters, lexer.escape = "#", ""
    try:
        fields = [field.strip() for field in lexer]
    except ValueError as exc:  # an unclosed quote
        raise DataError(f"{path}, line {number}: {str(exc).lower()}") from None
    return [field for field in fields if field], separator


def _is_header(fields):
    if len(fields) not in (2, 3) or not all(f.lower() in HEADER_WORDS for f in fields):
        return False
    return len(fields) == 2 or fields[2].lower() == "weight"


def _read_edge_list(path):
    import networkx as nx

    graph = nx.Graph()
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"cannot read {path} as an edge list: not UTF-8 text "
                        f"(byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or first_line(exc)}") from None
    first = True
    for number, line in enumerate(text.splitlines(), start=1):
        fields, separator = _fields(line, number, path)
        if not fields:
            continue
        if first and _is_header(fields):
            warnings.warn(f"line {number} of {path} ({' '.join(fields)}) names the columns; "
                          "it was read as a header, not as an edge", UserWarning, stacklevel=2)
            first = False
            continue
        first = False
        if len(fields) not in (2, 3):
            hint = ("; names with spaces must be quoted (\"Tom Smith\") or the fields "
                    "separated by tabs or commas" if separator == " \t" else "")
            raise DataError(f"{path}, line {number}: expected 'node node' or 'node node "
                            f"weight', got {len(fields)} fields{hint}")
        weight = 1.0
        if len(fields) == 3:
            weight = _weight(fields, number, path, separator)
        graph.add_edge(fields[0], fields[1], weight=weight)
    return graph


def _weight(fields, number, path, separator):
    try:
        weight = float(fields[2])
    except ValueError:
        weight = math.nan
    if math.isfinite(weight) and weight >= 0:
        return weight
    if math.isnan(weight) and separator == " \t":
        raise DataError(
            f"{path}, line {number}: the third field {fields[2]!r} is not a weight; if the "
            "node names have spaces, quote them (\"Tom Smith\") or separate the fields by "
            "tabs or commas")
    raise DataError(f"{path}, line {number}: the edge weight {fields[2]!r} is not a "
                    "non-negative number")
