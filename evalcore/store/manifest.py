"""The declared task set of each benchmark and setting: ``<data>/benchmarks.json``.

A board ranks over the tasks its benchmark declares, not over whatever tasks happen to have rows: a per-query
file that became unreadable must not turn a 17-task G into a 16-task one without a word. A task declared here
with no rows under a condition is named on the board (and a system missing a declared task is not ranked on
the complete board). Without a manifest (a user's own data folder), or for a benchmark or setting it does not
list, the tasks present in the data are the board's tasks, and the board says so.

Format (``"format": 1``)::

    {"format": 1, "benchmarks": {"rar-b": {"full": ["ARCChallenge", …], "mcr": […]}, "r2med": {"full": […]}}}

Any other top-level keys (``about``, ``sources``) are documentation. A file that cannot be read or does not
have this shape is reported (a :class:`~evalcore.store.answers.SkippedFile`) and no task set is declared.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from evalcore.errors import one_line

FILE_NAME = "benchmarks.json"
FORMAT = 1


@dataclass(frozen=True)
class Manifest:
    """What ``benchmarks.json`` declares: {benchmark: {setting: tasks}}; ``path`` the file (None: no file);
    ``problem`` why a file that exists was not used (None: used or absent)."""

    tasks: dict = field(default_factory=dict)
    path: str | None = None
    problem: str | None = None

    def declared(self, benchmark: str, setting: str) -> list[str] | None:
        """The tasks declared for ``benchmark`` / ``setting``, or None when none are."""
        found = self.tasks.get(benchmark, {}).get(setting)
        return list(found) if found is not None else None


def read(data_dir: str | Path) -> Manifest:
    """The manifest of ``data_dir`` (an empty one when the file does not exist)."""
    path = Path(data_dir) / FILE_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return Manifest()
    except OSError as exc:  # a folder the user may not read or enter: said, never a traceback
        return Manifest(path=str(path), problem=f"unreadable task manifest: {exc.strerror or one_line(exc)}")
    except UnicodeDecodeError as exc:
        return Manifest(path=str(path), problem=f"unreadable task manifest: {one_line(exc)}")
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:  # not JSON, or nested past Python's parser
        return Manifest(path=str(path), problem=f"unreadable task manifest: {one_line(exc)[:200]}")
    problem = _shape_problem(document)
    if problem is not None:
        return Manifest(path=str(path), problem=f"task manifest: {problem}")
    tasks = {benchmark: {setting: list(names) for setting, names in settings.items()}
             for benchmark, settings in document["benchmarks"].items()}
    return Manifest(tasks=tasks, path=str(path))


def _shape_problem(document) -> str | None:
    if not isinstance(document, dict):
        return "expected a JSON object"
    if document.get("format") != FORMAT:
        return f"expected \"format\": {FORMAT}, got {document.get('format')!r}"
    benchmarks = document.get("benchmarks")
    if not isinstance(benchmarks, dict):
        return "expected \"benchmarks\": {benchmark: {setting: [task, …]}}"
    for benchmark, settings in benchmarks.items():
        if not isinstance(settings, dict):
            return f"benchmark {benchmark!r}: expected {{setting: [task, …]}}"
        for setting, names in settings.items():
            if (not isinstance(names, list) or not names
                    or not all(isinstance(name, str) and name.strip() for name in names)):
                return f"{benchmark!r} / {setting!r}: expected a non-empty list of task names"
            if len(set(names)) != len(names):
                return f"{benchmark!r} / {setting!r}: a task is listed twice"
    return None
