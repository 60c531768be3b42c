"""The command line, ``compile-studio-cli``: run, sweep, show, compare, why, targets."""

from .commands import build_parser, main

__all__ = ["build_parser", "main"]
