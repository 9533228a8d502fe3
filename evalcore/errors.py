"""Errors that the CLI reports as one line and exit code 2 (bad input, never a traceback), and the one
sanitiser every one-line message goes through (:func:`one_line`, :func:`printable`)."""
from __future__ import annotations

from pathlib import Path


def printable(text: str) -> str:
    """``text`` with every unprintable character (a line break, a control character) escaped as in a Python
    string literal, so that a path or a value never breaks a one-line message."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def one_line(message: object) -> str:
    """An exception's (or any object's) text on one line: runs of white space, line breaks included, folded
    to one space (DuckDB, Arrow and thrift messages span several lines), then :func:`printable`."""
    return printable(" ".join(str(message).split()))


class InputError(ValueError):
    """Bad user input: names the file, the 1-based line (when known) and what was expected.

    ``str(err)`` is ``"<path>:<line>: <message>"`` (or ``"<path>: <message>"`` without a line).
    """

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        # the CLI prints one line: no line break or control character from a path or a value
        return printable(where + self.message)


class OutputError(InputError):
    """An output could not be written (a full disk, an unwritable or missing folder, an output that is an
    input...): reported by the CLI like bad input, as one line ``<path>: cannot write ...`` and exit code 2."""
