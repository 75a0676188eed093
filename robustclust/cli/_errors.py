"""Errors of the command line and the words of its messages."""

import click

#: The program's name, the first word of its error lines.
PROG = "robustclust"
#: Whether this process has reported an error (the --workers exit timer of
#: robustclust/cli/_dask_run.py reports an interruption only if not).
_reported = False


def report_error(prefix, message):
    """Write ``prefix: error: message`` on stderr, in one line, and remember that
    this process reported an error (:func:`error_reported`)."""
    global _reported
    _reported = True
    click.echo(f"{prefix}: error: {one_line(message)}", err=True)


def error_reported():
    """Whether :func:`report_error` was called in this process."""
    return _reported


class DataError(click.ClickException):
    """A problem with the data or a file: one line on stderr, exit status 1."""

    exit_code = 1


def first_line(exc):
    """The first line of an exception's message (its class name if it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def one_line(text):
    """``text`` with every run of white space (newlines included) made one space."""
    return " ".join(str(text).split())


def count(n, noun, plural=None):
    """'1 row', '2 rows', '1 cluster', '0 outliers'."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def listing(names, limit=12):
    """'a, b, c' or, beyond ``limit`` names, 'a, b, ..., z (40 in all)'."""
    names = [str(n) for n in names]
    if len(names) <= limit:
        return ", ".join(names)
    head = names[:limit - 2]
    return f"{', '.join(head)}, ..., {', '.join(names[-2:])} ({len(names)} in all)"


def short_listing(names, width=100):
    """Like :func:`listing`, with as many first names as fit in ``width`` characters.

    'a, b, c, ..., y, z (40 in all)': at least one first name, always the
    last two and the count.
    """
    names = [str(n) for n in names]
    full = ", ".join(names)
    if len(full) <= width or len(names) <= 3:
        return full
    tail = f", ..., {names[-2]}, {names[-1]} ({len(names)} in all)"
    text = names[0]
    for name in names[1:-2]:
        if len(text) + 2 + len(name) + len(tail) > width:
            break
        text += ", " + name
    return text + tail


def rows_phrase(labels, noun="row", limit=10):
    """'row 3', 'rows 3 and 17', 'rows 1, 2, ..., 10 and 5 more'."""
    labels = [str(label) for label in labels]
    if len(labels) == 1:
        return f"{noun} {labels[0]}"
    shown, rest = labels[:limit], len(labels) - limit
    if rest > 0:
        return f"{noun}s {', '.join(shown)} and {rest} more"
    return f"{noun}s {', '.join(shown[:-1])} and {shown[-1]}"


def some_rows(first, total, noun="row"):
    """:func:`rows_phrase` of the ``first`` labels of ``total``: 'rows 1, 2, ..., 10 and
    5 more' when only the first are known."""
    if total <= len(first):
        return rows_phrase(first, noun)
    return f"{noun}s {', '.join(str(r) for r in first)} and {total - len(first)} more"
