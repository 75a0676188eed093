"""The ``robustclust`` command line (fit, predict, path, demo, reproduce).

``robustclust --help`` and ``--version`` (and no arguments) are answered
without loading the commands (:mod:`robustclust.cli._commands`, which import
scikit-learn, pandas and the estimators): the group's help lists each
command's first help line from :data:`COMMANDS`, which a test keeps equal to
the commands' own.
"""

import sys

#: The group's description and its commands' one-line help, as ``--help`` shows them.
DESCRIPTION = """Cluster a table of numbers and flag its outliers in one pass.

Robust K-means and robust Gaussian mixtures with outlier-sparsity
regularization (Forero, Kekatos and Giannakis, IEEE TSP 2012).
Run 'robustclust COMMAND --help' for the options of a command."""
COMMANDS = {
    "demo": "Reproduce Table I of the paper (centre RMSE on synthetic blobs).",
    "fit": "Cluster the rows of INPUT and flag its outliers.",
    "path": "Number of outliers of INPUT along the warm-started lambda path.",
    "predict": "Label the rows of INPUT with a saved model (-1 for outliers).",
    "reproduce": "Reproduce Section VI of the paper into DIR (tables, figures, README.md).",
}
#: The arguments answered without the commands (nor the libraries they load).
LIGHT_ARGS = ([], ["--help"], ["-h"], ["--version"])


def main(argv=None):
    """Run the ``robustclust`` command line (see :func:`robustclust.cli._commands.main`)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args in LIGHT_ARGS:
        return _light(args)
    from ._commands import main as run

    return run(args)


def _light(args):
    import click

    from .. import __version__

    if args == ["--version"]:
        click.echo(f"robustclust, version {__version__}")
        return 0
    group = click.Group("robustclust", help=DESCRIPTION,
                        context_settings={"help_option_names": ["-h", "--help"]})
    click.version_option(__version__, prog_name="robustclust")(group)
    for name, short in COMMANDS.items():
        group.add_command(click.Command(name, help=short))
    click.echo(group.get_help(click.Context(group, info_name="robustclust")))
    return 0


def __getattr__(name):
    if name == "cli":  # the click group itself, with every command
        from ._commands import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["cli", "main"]
