"""The ``ragindex`` command."""

from __future__ import annotations


def main() -> None:
    """Entry point of the ``ragindex`` console script."""
    from ragindex.cli.app import run

    run()
