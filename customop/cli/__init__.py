"""The ``customop`` command line."""

from customop.cli._main import main

__all__ = ["main"]
