"""Command-line entry point: ``python -m robustclust`` or ``robustclust``.

Commands
--------
demo
    Reproduce Table I of the paper (see :func:`robustclust._demo.run_demo`).
"""

import argparse
import sys

PROG = "robustclust"


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are a single line on stderr (exit code 2)."""

    def error(self, message):
        """Print ``prog: error: message`` to stderr and exit with status 2.

        Parameters
        ----------
        message : str
            The error message built by argparse.
        """
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive_int(text):
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _build_parser():
    """The argument parser of the ``robustclust`` command."""
    parser = _Parser(
        prog=PROG,
        description="Robust clustering with outlier-sparsity regularization.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="reproduce Table I of the paper (centre RMSE on synthetic blobs)",
        description=(
            "Cluster the four-blob data set with 40 and 80 outliers by hard/soft "
            "K-means and robust K-means, and print the mean centre RMSE next to "
            "the paper's Table I."
        ),
    )
    demo.add_argument("--runs", type=_positive_int, default=100, metavar="N",
                      help="initialisations per method and data set (default: 100)")
    demo.add_argument("--seed", type=int, default=0, metavar="S",
                      help="random_state of the data generator (default: 0)")
    return parser


def main(argv=None):
    """Run the ``robustclust`` command line.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments after the program name; None means ``sys.argv[1:]``.

    Returns
    -------
    status : int
        Exit status: 0 on success. Usage errors (an unknown command or a bad
        option) exit with status 2 from inside argparse, after one line on
        stderr; with no command the usage is printed and 0 returned.
    """
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "demo":
        from ._demo import run_demo

        run_demo(n_runs=args.runs, data_seed=args.seed)
        return 0
    raise AssertionError(f"unhandled command {args.command!r}")  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
