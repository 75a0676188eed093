"""Sphinx extension: read plain-text names in docstrings and CLI help as text.

The package's docstrings and the command line's help are written for
``help()`` and ``--help``, where ``lambda_`` and ``'data/*.parquet'`` are
plain text. reStructuredText reads a word ending in ``_`` as a link
("Unknown target name") and a ``*`` as the start of emphasis, which fails
the ``-W`` build. This extension escapes exactly those two characters
outside literal markup, before numpydoc and sphinx-click hand the text to
docutils:

* in docstrings of ``robustclust`` (``autodoc-process-docstring``, before
  numpydoc): a trailing ``_`` of a word in running text (``lambda_ / 2``);
  numpydoc's own parameter lines (``lambda_ : float``) keep their names for
  numpydoc, and only their types are escaped (``of shape (n_outliers_, p)``);
* in the help of the ``robustclust`` commands (sphinx-click's events): the
  same, and ``*``.

Nothing is escaped inside ``literals``, `interpreted text`, :role:`targets`,
**strong** text (sphinx-click marks required options so), doctest lines or
literal blocks.
"""

import re

# literal markup, interpreted text, roles, and sphinx-click's own **Required**
LITERAL = re.compile(r"(``.+?``|:[\w:.-]+:`[^`]*`|`[^`]*`_{0,2}|\*\*\w[^*]*\*\*)")
TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=[\s.,;:!?)\]/*\\]|$)")
STAR = re.compile(r"(?<!\\)\*")
# numpydoc parameter and attribute lines: "name_ : type", "a, b : int", "name_"
FIELD = re.compile(r"^\s*\*{0,2}\w+(\s*,\s*\*{0,2}\w+)*\s*(:(\s.*)?)?$")


def _escape(text, stars):
    parts = LITERAL.split(text)
    for i in range(0, len(parts), 2):  # the even parts lie outside literal markup
        part = TRAILING_UNDERSCORE.sub(r"\\_", parts[i])
        if stars:
            part = STAR.sub(r"\\*", part)
        parts[i] = part
    return "".join(parts)


def escape_lines(lines, *, stars=False, fields=True):
    """Escape ``lines`` in place (a docstring's or a help text's lines)."""
    literal_indent = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if stripped and indent <= literal_indent:
                literal_indent = None
            else:
                continue
        field = FIELD.match(line) if fields else None
        if stripped.startswith((">>>", "... ")):
            pass
        elif field:
            if field.group(2):  # the type after " : " is running text
                start = field.start(2) + 1
                lines[i] = line[:start] + _escape(line[start:], stars)
        else:
            lines[i] = _escape(line, stars)
        if stripped.endswith("::"):
            literal_indent = indent


def _docstring(app, what, name, obj, options, lines):
    if name.startswith("robustclust"):
        escape_lines(lines)


def _click_text(app, ctx, lines):
    escape_lines(lines, stars=True, fields=False)


def setup(app):
    app.connect("autodoc-process-docstring", _docstring, priority=100)
    for event in ("sphinx-click-process-description", "sphinx-click-process-options",
                  "sphinx-click-process-arguments", "sphinx-click-process-epilog"):
        app.connect(event, _click_text)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
