"""One task at a time: a run or qrels file whose ``benchmark``, ``task`` or ``setting`` column holds more than one
value holds several evaluations, whose judgements must never be pooled.

The shipped ``data/tasks/rar-b/qrels.parquet`` holds 8 tasks × 2 settings with query ids (``q00000``…) that repeat
in every task: read as one qrels file, a run of one task was judged by the other tasks' labels too (a random
ARCChallenge MCR run scored p@1 0.7346 instead of 0.2372). So a file's rows are split by these *partition
columns* (:data:`PARTITION_COLUMNS`, where present; case-insensitive names) into :class:`Parts`, after an optional
:class:`Selection` (``--task`` / ``--setting`` / ``--benchmark``; a value the file lacks is an error naming the
values it has). A reader that needs one evaluation (:meth:`Parts.single`) refuses several with one line saying
how to select one; the engine evaluates each part against the same part of a run that names its parts too
(:func:`evalcore.engine.evaluate_table`). Duplicate and conflicting judgements are checked within a part.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import arrow_np
from evalcore.errors import InputError
from evalcore.formats.lines import LineNumbers, short_repr

PARTITION_COLUMNS = ("benchmark", "task", "setting")
OPTIONS = {"benchmark": "--benchmark", "task": "--task", "setting": "--setting"}
_SHOWN_VALUES = 4


@dataclass(frozen=True)
class Selection:
    """The part of a file to evaluate: a value per partition column (None: any)."""

    benchmark: str | None = None
    task: str | None = None
    setting: str | None = None

    def items(self) -> list[tuple[str, str]]:
        return [(name, getattr(self, name)) for name in PARTITION_COLUMNS if getattr(self, name) is not None]

    def with_values(self, **values: str | None) -> "Selection":
        """This selection with the given columns set (None leaves a column as it is)."""
        merged = {name: getattr(self, name) for name in PARTITION_COLUMNS}
        merged.update({name: value for name, value in values.items() if value is not None})
        return Selection(**merged)


@dataclass
class Parts:
    """A file's rows by the partition columns it holds: ``columns`` (those present, in
    :data:`PARTITION_COLUMNS` order), one ``(table, line numbers)`` per distinct value tuple in first-seen order."""

    path: Path
    what: str  # "run" or "qrels"
    columns: tuple[str, ...] = ()
    tables: dict[tuple[str, ...], tuple[pa.Table, LineNumbers]] = field(default_factory=dict)

    @property
    def keys(self) -> list[tuple[str, ...]]:
        return list(self.tables)

    def values(self, column: str) -> list[str]:
        """The distinct values of ``column`` among the parts, in first-seen order."""
        at = self.columns.index(column)
        return list(dict.fromkeys(key[at] for key in self.tables))

    def varying(self) -> tuple[str, ...]:
        """The partition columns with more than one value."""
        return tuple(c for c in self.columns if len(self.values(c)) > 1)

    def single(self) -> tuple[pa.Table, LineNumbers]:
        """The one part; InputError saying how to select one when there are several."""
        if len(self.tables) != 1:
            raise several_parts(self)
        return next(iter(self.tables.values()))

    def value_of(self, column: str) -> str | None:
        """The column's value when the file has the column with one value, else None."""
        return self.values(column)[0] if column in self.columns and len(self.values(column)) == 1 else None


def _listed(values: list[str]) -> str:
    shown = ", ".join(map(str, values[:_SHOWN_VALUES]))
    return shown + (f", … ({len(values)} in all)" if len(values) > _SHOWN_VALUES else "")


def several_parts(parts: Parts, extra: str = "", select: tuple[str, ...] | None = None) -> InputError:
    """The one-line refusal of a file that holds several evaluations, naming them and the options that select
    one (``select``: those columns only; the first part's values as the example)."""
    varying = parts.varying()
    held = " and ".join(f"{len(parts.values(c))} {c}s ({_listed(parts.values(c))})" for c in varying)
    example = " ".join(f"{OPTIONS[c]} {parts.values(c)[0]}" for c in (select or varying))
    return InputError(f"holds {held}: their {parts.what} must not be pooled into one evaluation; select one with "
                      f"{example}{extra}", parts.path)


def partition_names(found: list[str]) -> dict[str, int]:
    """The index of each partition column among ``found`` column names (compared lower-case)."""
    lowered = [name.lower() for name in found]
    return {name: lowered.index(name) for name in PARTITION_COLUMNS if name in lowered}


def split_parts(table: pa.Table, partitions: dict[str, pa.Array], numbers: LineNumbers, path: Path, what: str,
                select: Selection | None = None) -> Parts:
    """``table``'s rows (aligned with the ``partitions`` arrays and ``numbers``) split by the partition columns,
    after ``select``; a selected value the file lacks is an InputError naming the values it has."""
    from evalcore.formats.values import as_id

    columns = tuple(name for name in PARTITION_COLUMNS if name in partitions)
    if not columns:
        return Parts(path, what, (), {(): (table, numbers)})
    arrays = {name: as_id(partitions[name], name, path, numbers) for name in columns}
    keep = None
    for name, value in (select or Selection()).items():
        if name not in arrays:
            continue
        hit = pc.equal(arrays[name], pa.scalar(str(value), pa.string()))
        if not pc.any(hit).as_py():
            present = list(dict.fromkeys(pc.unique(arrays[name]).to_pylist()))
            raise InputError(f"no {what} row of {name} {short_repr(str(value))}: its {name}s are "
                             f"{_listed(sorted(present))}", path)
        keep = hit if keep is None else pc.and_(keep, hit)
    if keep is not None and not pc.any(keep).as_py():
        chosen = ", ".join(f"{n} {v}" for n, v in (select or Selection()).items() if n in arrays)
        raise InputError(f"no {what} row of {chosen} together", path)
    lines = numbers.first + np.arange(table.num_rows, dtype=np.int64) if numbers.array is None else numbers.array
    if keep is not None:
        rows = np.flatnonzero(np.asarray(arrow_np.to_numpy(keep), dtype=bool))
        taken = arrow_np.from_numpy(rows)
        table, lines = table.take(taken), lines[rows]
        arrays = {name: array.take(taken) for name, array in arrays.items()}
    codes = np.zeros(table.num_rows, dtype=np.int64)
    for name in columns:
        encoded = pc.dictionary_encode(arrays[name])
        codes = codes * len(encoded.dictionary) + arrow_np.to_numpy(encoded.indices).astype(np.int64)
    _, first_rows, inverse = np.unique(codes, return_index=True, return_inverse=True)
    tables: dict[tuple[str, ...], tuple[pa.Table, LineNumbers]] = {}
    for position in np.argsort(first_rows, kind="stable"):
        rows = np.flatnonzero(inverse == position)
        first = int(first_rows[position])
        key = tuple(str(arrays[name][first].as_py()) for name in columns)
        tables[key] = (table.take(arrow_np.from_numpy(rows)), LineNumbers(0, lines[rows]))
    return Parts(path, what, columns, tables)


def check_parts_agree(run: Parts, qrels: Parts, per_part: bool = True) -> tuple[str, ...]:
    """The partition columns to evaluate the run by, part by part, against ``qrels``: those in which the qrels
    vary (the run must name them too; ``per_part=False``: none may vary); every other partition column the run
    has must hold one value, the same as the qrels' where they have it. InputError otherwise, saying how to
    select."""
    varying = qrels.varying()
    missing = [c for c in varying if c not in run.columns]
    if missing and per_part:
        columns = " and ".join(missing)
        raise several_parts(qrels, f" (or give a run with a {columns} column to evaluate each)" if len(missing) == 1
                            else f" (or give a run with {columns} columns to evaluate each)", tuple(missing))
    if varying and not per_part:
        raise several_parts(qrels)
    for column in run.columns:
        if column in varying:
            continue
        values = run.values(column)
        if len(values) > 1:
            raise several_parts(run)
        theirs = qrels.value_of(column)
        if theirs is not None and values[0] != theirs:
            raise InputError(f"the run is of {column} {short_repr(values[0])}, the qrels {qrels.path} of "
                             f"{short_repr(theirs)}: expected a run of the qrels' {column}", run.path)
    return varying


def project(parts: Parts, columns: tuple[str, ...]) -> dict[tuple[str, ...], tuple[pa.Table, LineNumbers]]:
    """``parts`` keyed by ``columns`` only (the other partition columns hold one value each)."""
    at = [parts.columns.index(c) for c in columns]
    return {tuple(key[i] for i in at): value for key, value in parts.tables.items()}

