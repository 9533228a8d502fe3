"""Errors that the CLI reports as one line and exit code 2 (bad input, never a traceback)."""
from __future__ import annotations

from pathlib import Path


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
        text = where + self.message
        # the CLI prints one line: no line break or control character from a path or a value
        return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class OutputError(InputError):
    """An output could not be written (a full disk, an unwritable or missing folder, an output that is an
    input...): reported by the CLI like bad input, as one line ``<path>: cannot write ...`` and exit code 2."""
