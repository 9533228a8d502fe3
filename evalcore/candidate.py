"""Your own run on the board ("Where would my run land?"): export the shipped tasks' inputs, read a
candidate run, evaluate it tie-aware against the shipped qrels, and see it beside the shipped systems.

The loop, as functions (the CLI ``evalcore tasks export`` / ``evalcore leaderboard --candidate`` and the
dashboard's "Evaluate your run" view both call these):

1. :func:`task_inputs` reads ``<data>/tasks/<benchmark>/`` (written by ``scripts/make_task_texts.py``: queries,
   documents, candidates, qrels; footer key ``tiebreak.tasks``) for one setting (``mcr`` or ``full-pooled``);
   :func:`export_tasks` writes them per task as ``<out>/<task>/queries.jsonl`` (``qid``, ``text``,
   ``instruction``), ``<out>/<task>/candidates.jsonl`` (MCR: ``qid``, ``docid``, ``text`` — each query's own
   candidates; full-pooled: ``docid``, ``text`` — the task's pool, which every query ranks) and
   ``<out>/<task>/qrels.json`` (the task's judgements, ``{qid: {docid: grade}}``), with exactly the ids the shipped
   results use, and ``<out>/README.txt`` (the files and the commands that score a run with the board's metrics).
   It never overwrites a file.
2. The user scores them with any model and writes a run per task in any run format the engine reads (TREC,
   TSV, CSV, JSON lines, parquet; ``.gz`` too): a folder of files named by the task (``ARCChallenge.trec``), or
   one parquet / CSV / TSV / JSON-lines file with a ``task`` column. :func:`read_candidate` reads and checks it
   (from paths, or from uploaded ``(name, bytes)`` pairs): a wrong column count, a non-finite score, a
   duplicate (qid, docid), an unknown qid or docid (MCR: a docid that is not one of that query's candidates),
   a missing or unknown task, an undecodable file, too many bytes or rows — each one
   :class:`~evalcore.errors.InputError` naming the file (as the user named it) and the line.
3. :func:`evaluate_candidate` evaluates it with the tie-aware engine against the shipped qrels, under every
   metric and tie policy the shipped runs of that setting carry (:data:`SETTING_METRICS`,
   :data:`SETTING_TIE_POLICIES`), and returns per-query rows in the ``query_metrics`` schema
   (:data:`evalcore.schema.QUERY_METRICS`). Queries the run leaves out count as 0 (``trec_eval -c``), as the
   shipped runs hold every query. Bounded in time (:data:`EVAL_SECONDS`).
4. ``store.with_overlay(rows, name=...)`` (:meth:`evalcore.store.Store.with_overlay`) is a view of the store with
   those rows in memory: its leaderboard, paired tests and tie statistics include the candidate; nothing is
   written to the data folder.

Nothing here writes anywhere except :func:`export_tasks` into its (new) output files.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence, Union

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalcore import schema
from evalcore.errors import InputError, OutputError

SETTINGS = schema.TASK_SETTINGS
SETTING_METRICS: dict[str, tuple[str, ...]] = {"mcr": ("p@1", "ndcg@10"),
                                               "full-pooled": ("ndcg@10", "mrr@10", "recall@100")}
"""Metrics a candidate is evaluated with: those of the shipped real runs of the setting."""
SETTING_TIE_POLICIES: dict[str, tuple[str, ...]] = {"mcr": ("docid-desc", "input-order"),
                                                    "full-pooled": ("docid-desc",)}
"""Tie policies of the oblivious values: those the shipped real runs of the setting carry (the store ranks by
each)."""
TASK_FILES = ("queries", "documents", "candidates", "qrels")
EXPORT_FILES = ("queries.jsonl", "candidates.jsonl", "qrels.json")
EXPORT_README = "README.txt"
RUN_SUFFIXES = (".trec", ".run", ".res", ".txt", ".tsv", ".csv", ".jsonl", ".ndjson", ".json", ".parquet", ".pq")
TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".jsonl", ".ndjson", ".json")
TASK_COLUMN = "task"
DEFAULT_NAME = "candidate"
SOURCE = "candidate"
NAME_MAX_CHARS = 100


@dataclass(frozen=True)
class Limit:
    """A bound on what one candidate may cost, overridable by an environment variable."""

    variable: str
    default: float
    what: str

    def value(self) -> float:
        text = os.environ.get(self.variable, "").strip()
        if not text:
            return self.default
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (np.isfinite(value) and value > 0):
            raise InputError(f"{self.variable} must be a positive number ({self.what}), got {text!r}")
        return value


UPLOAD_BYTES = Limit("TIEBREAK_MAX_CANDIDATE_BYTES", 200 * 2**20, "bytes of one candidate, all files together")
RUN_ROWS = Limit("TIEBREAK_MAX_CANDIDATE_ROWS", 5_000_000, "rows of one candidate, all tasks together")
EVAL_SECONDS = Limit("TIEBREAK_MAX_CANDIDATE_SECONDS", 300, "seconds one candidate's evaluation may take")


@dataclass(frozen=True)
class TaskInputs:
    """The shipped inputs of one benchmark and setting: what a candidate ranks and is judged against.

    ``queries``: task, qid, text, instruction. ``candidates``: task, qid, docid (MCR: each query's own
    candidates; full-pooled: empty, every query ranks ``documents``). ``documents``: task, docid, text (MCR:
    each candidate docid's text per query is in ``candidates.text``). ``qrels``: task, qid, docid, relevance."""

    benchmark: str
    setting: str
    tasks: tuple[str, ...]
    queries: pd.DataFrame
    candidates: pd.DataFrame
    documents: pd.DataFrame
    qrels: pd.DataFrame
    folder: Path


@dataclass(frozen=True)
class CandidateRun:
    """A checked candidate: one run table (qid, docid, score) per task, every task of the inputs present."""

    benchmark: str
    setting: str
    runs: dict[str, pa.Table]
    files: dict[str, str] = field(default_factory=dict)  # task -> the file (as the user named it) it came from

    @property
    def n_rows(self) -> int:
        return sum(t.num_rows for t in self.runs.values())


Source = Union[str, Path, Sequence[tuple[str, bytes]]]


# -- 1. the shipped inputs ---------------------------------------------------------------------------------
def tasks_folder(data_dir: str | Path, benchmark: str) -> Path:
    from evalcore.store.catalogue import TASKS_DIR

    return Path(data_dir) / TASKS_DIR / benchmark


def task_inputs(data_dir: str | Path, benchmark: str, setting: str) -> TaskInputs:
    """The tasks, queries, candidates/documents and qrels of ``benchmark`` / ``setting`` shipped in
    ``<data_dir>/tasks/<benchmark>/``. InputError when the setting is unknown or the files are missing."""
    import pyarrow.parquet as pq

    if setting not in SETTINGS:
        raise InputError(f"setting {setting!r} has no shipped task inputs: expected one of {', '.join(SETTINGS)}")
    folder = tasks_folder(data_dir, benchmark)
    tables = {}
    for name in TASK_FILES:
        path = folder / f"{name}.parquet"
        if not path.is_file():
            raise InputError(f"no shipped task inputs for benchmark {benchmark!r} (expected {name}.parquet, "
                             "written by scripts/make_task_texts.py)", path)
        try:
            frame = pq.read_table(path).to_pandas()
        except (OSError, pa.ArrowException) as exc:
            from evalcore.errors import one_line

            raise InputError(f"unreadable task inputs: {one_line(exc)}", path) from None
        tables[name] = frame.astype({c: str for c in frame.columns if c not in ("relevance",)})
    qrels = tables["qrels"]
    qrels = qrels[qrels["setting"] == setting].drop(columns=["benchmark", "setting"]).reset_index(drop=True)
    qrels["relevance"] = qrels["relevance"].astype(np.int64)
    tasks = tuple(dict.fromkeys(tables["queries"]["task"]))
    candidates = tables["candidates"].drop(columns=["benchmark"])
    documents = tables["documents"].drop(columns=["benchmark"])
    if setting == "mcr":
        texts = documents.rename(columns={"docid": "pool_docid"})
        candidates = candidates.merge(texts, on=["task", "pool_docid"], how="left", sort=False)
    else:
        candidates = candidates.iloc[0:0]
    return TaskInputs(benchmark, setting, tasks, tables["queries"].drop(columns=["benchmark"]),
                      candidates.reset_index(drop=True), documents, qrels, folder)


def export_tasks(data_dir: str | Path, benchmark: str, setting: str, out_dir: str | Path) -> list[Path]:
    """Write ``<out_dir>/<task>/queries.jsonl`` and ``<out_dir>/<task>/candidates.jsonl`` for every task (see
    the module docstring); returns the files written. Refuses (OutputError, before writing anything) when any
    of them exists; each file is written atomically, and on a failure the files already written are removed."""
    from evalcore import outputs
    from evalcore.formats import atomic_path

    out = Path(out_dir)
    outputs.check_output_folder(out, "--out folder")  # an existing file, a path under a file: before any work
    files = export_files(data_dir, benchmark, setting)
    for relative in files:
        target = out / relative
        if target.exists() or target.is_symlink():
            raise OutputError("exists already: tasks export never overwrites a file (choose a new --out folder)",
                              target)
    written: list[Path] = []
    try:
        for relative, data in files.items():
            target = out / relative
            with outputs.writing(out, "--out folder"):  # a missing or unwritable parent: one line
                target.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(target, f"exported {target.name}") as temporary:
                temporary.write_bytes(data)
            written.append(target)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    return written


def export_files(data_dir: str | Path, benchmark: str, setting: str) -> dict[str, bytes]:
    """What :func:`export_tasks` writes, in memory: ``"<task>/queries.jsonl"`` / ``"<task>/candidates.jsonl"``
    -> UTF-8 JSON lines (one object per line, ``\\n`` ends); ``"<task>/qrels.json"`` -> the task's shipped
    judgements for this setting as nested JSON ``{qid: {docid: grade}}`` (what pytrec_eval, ranx and
    ``evalcore evaluate --qrels`` read, so a run can be scored and checked without the data folder); and
    ``README.txt``: what the files are and the commands that score a run as the board does."""
    from evalcore.formats.nested import nested_lines, run_groups

    inputs = task_inputs(data_dir, benchmark, setting)
    files: dict[str, bytes] = {EXPORT_README: export_readme(inputs).encode("utf-8")}
    for task in inputs.tasks:
        queries = inputs.queries[inputs.queries["task"] == task][["qid", "text", "instruction"]]
        if inputs.setting == "mcr":
            candidates = inputs.candidates[inputs.candidates["task"] == task][["qid", "docid", "text"]]
        else:
            candidates = inputs.documents[inputs.documents["task"] == task][["docid", "text"]]
        for name, frame in (("queries.jsonl", queries), ("candidates.jsonl", candidates)):
            files[f"{task}/{name}"] = "".join(json.dumps(record, ensure_ascii=False) + "\n"
                                              for record in frame.to_dict(orient="records")).encode("utf-8")
        judged = inputs.qrels[inputs.qrels["task"] == task]
        qrels = pa.table({"qid": pa.array(judged["qid"], pa.string()), "docid": pa.array(judged["docid"], pa.string()),
                          "relevance": pa.array(judged["relevance"], pa.int64())})
        files[f"{task}/qrels.json"] = "".join(nested_lines(run_groups(qrels))).encode("utf-8")
    return files


def export_readme(inputs: TaskInputs) -> str:
    """The export's ``README.txt``: its files and the commands that score a run with the board's metrics."""
    metrics = SETTING_METRICS[inputs.setting]
    candidates = ("qid, docid, text: each query's own candidates" if inputs.setting == "mcr"
                  else "docid, text: the task's pool, which every query ranks")
    first = inputs.tasks[0]
    import textwrap

    accuracy = " (multiple-choice accuracy)" if inputs.setting == "mcr" else ""
    prose = textwrap.fill(
        f"Score them with your model and write one run per task named by the task ({first}.trec, or any run "
        f"format evalcore reads: TSV, CSV, JSON lines, nested JSON {{qid: {{docid: score}}}}, parquet; .gz too), "
        f"or one table with a task column. The shipped results of {inputs.setting} carry {metrics[0]}{accuracy} "
        f"and {', '.join(metrics[1:])}. Check one task:", 100)
    return (f"{inputs.benchmark} {inputs.setting}: the inputs of its {len(inputs.tasks)} tasks, written by "
            f"`evalcore tasks export` (tiebreak).\n\n"
            f"Per task (folder TASK/):\n"
            f"  queries.jsonl     qid, text, instruction\n"
            f"  candidates.jsonl  {candidates}\n"
            f"  qrels.json        the judgements {{qid: {{docid: grade}}}} (pytrec_eval, ranx and evalcore read it)\n\n"
            f"{prose}\n\n"
            f"  evalcore evaluate --run {first}.trec --qrels {first}/qrels.json --metrics {','.join(metrics)}\n\n"
            f"and see where the run lands on the board, tie-aware:\n\n"
            f"  evalcore leaderboard --benchmark {inputs.benchmark} --setting {inputs.setting} --metric {metrics[0]} "
            f"--candidate RUNS_FOLDER\n")


def export_zip(data_dir: str | Path, benchmark: str, setting: str) -> bytes:
    """:func:`export_files` as one zip archive (deflated; fixed timestamps, so the same inputs give the same
    bytes), for a download: ``<benchmark>-<setting>/<task>/queries.jsonl`` ..."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for relative, data in export_files(data_dir, benchmark, setting).items():
            info = zipfile.ZipInfo(f"{benchmark}-{setting}/{relative}", date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


# -- 2. reading a candidate --------------------------------------------------------------------------------
MTEB_PREDICTIONS_SUFFIX = "_predictions"  # mteb saves a task's run as {task}_predictions.json


def _task_of(file_name: str, tasks: Sequence[str] = ()) -> str:
    """``ARCChallenge.trec.gz`` -> ``ARCChallenge``; mteb's ``ARCChallenge_predictions.json`` too when the stem
    without ``_predictions`` is one of ``tasks``."""
    name = Path(file_name).name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    stem, dot, suffix = name.rpartition(".")
    task = stem if dot and f".{suffix.lower()}" in RUN_SUFFIXES else name
    if task not in tasks and task.endswith(MTEB_PREDICTIONS_SUFFIX) \
            and task[: -len(MTEB_PREDICTIONS_SUFFIX)] in tasks:
        return task[: -len(MTEB_PREDICTIONS_SUFFIX)]
    return task


def _is_table_file(file_name: str) -> bool:
    name = file_name.lower()
    name = name[:-3] if name.endswith(".gz") else name
    return name.endswith(TABLE_SUFFIXES)


class _Uploads:
    """Uploaded files as readable paths for the format readers, which read paths: each one an anonymous
    in-memory file (Linux ``memfd_create``: ``/proc/self/fd/N``, nothing on disk; a gzip upload is gunzipped in
    memory, within the byte bound), else a private temporary folder. :meth:`close` releases them."""

    def __init__(self) -> None:
        self.descriptors: list[int] = []
        self.scratch: tempfile.TemporaryDirectory | None = None

    def add(self, index: int, shown: str, data: bytes) -> Path:
        if hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir():
            descriptor = os.memfd_create(f"evalcore-candidate-{index}", getattr(os, "MFD_CLOEXEC", 0))
            self.descriptors.append(descriptor)
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view):]
            return Path(f"/proc/self/fd/{descriptor}")
        if self.scratch is None:
            self.scratch = tempfile.TemporaryDirectory(prefix="evalcore-candidate-")
        folder = Path(self.scratch.name) / str(index)
        folder.mkdir()
        target = folder / "upload"
        target.write_bytes(data)
        return target

    def close(self) -> None:
        for descriptor in self.descriptors:
            os.close(descriptor)
        self.descriptors = []
        if self.scratch is not None:
            self.scratch.cleanup()
            self.scratch = None


_GZIP_MAGIC = b"\x1f\x8b"


def _gunzipped(data: bytes, shown: str, limit: float) -> bytes:
    """A gzip upload decompressed in memory, stopped past ``limit`` bytes (a decompression bomb)."""
    import zlib

    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = decompressor.decompress(data, int(limit) + 1)
        if len(out) > limit or decompressor.unconsumed_tail:
            raise InputError(f"too large: more than {limit:,.0f} bytes once decompressed ({UPLOAD_BYTES.variable})",
                             shown)
        out += decompressor.flush()
    except zlib.error as exc:
        raise InputError(f"cannot read file (not a complete gzip file: {exc})", shown) from None
    if not decompressor.eof:
        raise InputError("cannot read file (a truncated gzip file)", shown)
    return out


def _files_of(source: Source, limit: float) -> tuple[list[tuple[str, Path]], _Uploads | None]:
    """(shown name, readable path) of each file of the candidate; uploaded bytes become in-memory files
    (:class:`_Uploads`, released by the caller) so the format readers check them as they check files."""
    if isinstance(source, (str, Path)):
        from evalcore.formats.detection import folder_entries, path_kind

        path = Path(source)
        kind = path_kind(path)  # a folder the user may not enter: one line, not a PermissionError
        if kind == "missing":
            raise InputError("candidate run not found (expected a run file or a folder of runs named by task)",
                             path)
        if kind == "folder":
            files = [p for p, entry in folder_entries(path) if not p.name.startswith(".") and entry == "file"]
            if not files:
                raise InputError("empty folder: expected one run file per task, named by the task "
                                 "(e.g. ARCChallenge.trec)", path)
            return [(str(p), p) for p in files], None
        if kind == "other":  # a FIFO, /dev/stdin, <(command): read once within the input limits, then as a file
            from evalcore.formats.limits import read_bytes

            data = read_bytes(path, text=False)
            if len(data) > limit:
                raise InputError(f"too large: more than {limit:,.0f} bytes ({UPLOAD_BYTES.variable})", path)
            scratch = _Uploads()
            try:
                return [(str(path), scratch.add(0, str(path), data))], scratch
            except BaseException:
                scratch.close()
                raise
        return [(str(path), path)], None
    uploads = list(source)
    if not uploads:
        raise InputError("no file uploaded: expected one run file per task, or one table with a task column")
    total = 0
    for name, data in uploads:
        total += len(data)
        if total > limit:
            raise InputError(f"too large: the candidate's files hold more than {limit:,.0f} bytes "
                             f"({UPLOAD_BYTES.variable})", Path(str(name)).name)
    scratch = _Uploads()
    files = []
    try:
        for index, (name, data) in enumerate(uploads):
            shown = Path(str(name)).name or f"upload-{index}"
            if bytes(data[:2]) == _GZIP_MAGIC:
                data = _gunzipped(bytes(data), shown, limit)
            files.append((shown, scratch.add(index, shown, bytes(data))))
    except BaseException:
        scratch.close()
        raise
    return files, scratch


def _renamed(exc: InputError, real: Path, shown: str) -> InputError:
    """The error of a temporary copy, naming the file as the user named it."""
    if exc.path is not None and exc.path == str(real):
        return InputError(exc.message.replace(str(real), shown), shown, exc.line)
    return InputError(str(exc).replace(str(real), shown))


def _read_parts(path: Path, shown: str, inputs: TaskInputs, task: str | None):
    """One file's run by task, checked by the engine's readers (:func:`evalcore.formats.read_run_parts`: column
    count, ids, finite scores, encoding, size, (qid, docid) once per task): {task: (run, line numbers)}. A file
    of one task (``task``) may have a task column holding only that task; a table's rows are split by its task
    column. ``benchmark`` / ``setting`` columns, where present, select the inputs' own (a file holding other
    settings is read for this one; one without rows of it is refused), so tasks and settings are never pooled."""
    from evalcore.formats import Selection, read_run_parts
    from evalcore.formats.lines import short_repr

    select = Selection(benchmark=inputs.benchmark, task=task, setting=inputs.setting)
    parts = read_run_parts(path, select=select, name=shown)
    if task is not None:
        return {task: parts.single()}
    if TASK_COLUMN not in parts.columns:
        raise InputError(f"expected a {TASK_COLUMN} column (a table of several tasks: columns {TASK_COLUMN}, qid, docid, "
                         f"score), or a file named by its task (e.g. {inputs.tasks[0]}.trec)", path)
    by_task = {}
    at = parts.columns.index(TASK_COLUMN)
    for key, (run, numbers) in parts.tables.items():
        if key[at] not in inputs.tasks:
            raise InputError(f"unknown task {short_repr(key[at])}: expected one of {', '.join(inputs.tasks)}",
                             path, numbers.of(0))
        by_task[key[at]] = (run, numbers)
    return {t: by_task[t] for t in inputs.tasks if t in by_task}


def _first_unknown(values, known: pd.Series) -> int | None:
    """The first row of ``values`` (an Arrow string array) that is not among ``known``, or None."""
    from evalcore.formats.lines import first_true

    value_set = pa.array(known.to_numpy(dtype=object), pa.string())
    return first_true(pc.invert(pc.is_in(values, value_set=value_set)))


def _check_ids(run: pa.Table, task: str, inputs: TaskInputs, path: str, numbers) -> None:
    """Every qid is a query of ``task``; every docid one of its documents (MCR: of that query's candidates; the
    qid is checked first, so joining qid and docid with a separator cannot make a wrong pair look right)."""
    from evalcore.formats.lines import short_repr

    qids = inputs.queries.loc[inputs.queries["task"] == task, "qid"]
    bad = _first_unknown(run["qid"], qids)
    if bad is not None:
        raise InputError(f"unknown qid {short_repr(run['qid'][bad].as_py())}: not a query of {inputs.benchmark} "
                         f"{task} (expected the qids of the exported queries.jsonl, e.g. {qids.iloc[0]})",
                         path, numbers.of(bad))
    if inputs.setting == "mcr":
        known = inputs.candidates[inputs.candidates["task"] == task]
        bad = _first_unknown(pc.binary_join_element_wise(run["qid"], run["docid"], "\x1f"),
                             known["qid"] + "\x1f" + known["docid"])
        if bad is not None:
            qid = run["qid"][bad].as_py()
            own = known.loc[known["qid"] == qid, "docid"].tolist()
            raise InputError(f"unknown docid {short_repr(run['docid'][bad].as_py())} for query {short_repr(qid)}: "
                             f"not one of its MCR candidates (expected one of {', '.join(own)})", path, numbers.of(bad))
        return
    bad = _first_unknown(run["docid"], inputs.documents.loc[inputs.documents["task"] == task, "docid"])
    if bad is not None:
        raise InputError(f"unknown docid {short_repr(run['docid'][bad].as_py())}: not a document of the {task} pool "
                         "(expected the docids of the exported candidates.jsonl)", path, numbers.of(bad))


def read_candidate(source: Source, inputs: TaskInputs) -> CandidateRun:
    """Read and check a candidate run against ``inputs`` (see the module docstring for the layouts).

    ``source``: a folder of per-task run files, one table file with a ``task`` column, or uploaded files as
    ``[(file name, bytes), ...]`` (one table with a task column, or one file per task). Every problem is one
    :class:`InputError` naming the file (its name as given) and line. Nothing is written (uploads are read
    from anonymous in-memory files, released before returning)."""
    byte_limit, row_limit = UPLOAD_BYTES.value(), RUN_ROWS.value()
    files, scratch = _files_of(source, byte_limit)
    try:
        runs: dict[str, pa.Table] = {}
        shown_of: dict[str, str] = {}
        rows = 0
        single_table = len(files) == 1 and _task_of(files[0][0], inputs.tasks) not in inputs.tasks
        for shown, path in files:
            try:
                if single_table:
                    if not _is_table_file(shown) and _task_of(shown) != Path(shown).name:  # .trec, .txt...
                        raise InputError(f"not a run named by a task of {inputs.benchmark} (expected files "
                                         f"{', '.join(t + '.trec' for t in inputs.tasks[:2])}, …) nor a table "
                                         "with a task column (.parquet, .csv, .tsv, .jsonl)", path)
                    pieces = _read_parts(path, shown, inputs, None)
                else:
                    task = _task_of(shown, inputs.tasks)
                    if task not in inputs.tasks:
                        raise InputError(f"not a task of {inputs.benchmark}: expected files named by the task "
                                         f"({', '.join(inputs.tasks)}), e.g. {inputs.tasks[0]}.trec", path)
                    if task in runs:
                        raise InputError(f"a second run of task {task} (the first: {Path(shown_of[task]).name})",
                                         path)
                    pieces = _read_parts(path, shown, inputs, task)
                for task, (run, numbers) in pieces.items():
                    rows += run.num_rows
                    if rows > row_limit:
                        raise InputError(f"too many rows: the candidate holds more than {row_limit:,.0f} "
                                         f"({RUN_ROWS.variable})", path, numbers.of(run.num_rows - 1))
                    _check_ids(run, task, inputs, str(path), numbers)
                    runs[task] = run.select(["qid", "docid", "score"])
                    shown_of[task] = shown
            except InputError as exc:
                raise (_renamed(exc, path, shown) if scratch is not None else exc) from None
        missing = [t for t in inputs.tasks if t not in runs]
        if missing:
            where = files[0][0] if single_table else (str(source) if isinstance(source, (str, Path)) else
                                                       "the uploaded files")
            raise InputError(f"missing task(s) {', '.join(missing)}: expected a run for every task of "
                             f"{inputs.benchmark} {inputs.setting} ({', '.join(inputs.tasks)})", where)
        return CandidateRun(inputs.benchmark, inputs.setting, {t: runs[t] for t in inputs.tasks}, shown_of)
    finally:
        if scratch is not None:
            scratch.close()


# -- 3. evaluating it --------------------------------------------------------------------------------------
def check_name(name: str) -> str:
    """The candidate's system name, stripped: non-empty, printable, at most :data:`NAME_MAX_CHARS`."""
    text = str(name).strip()
    if not text or not text.isprintable() or len(text) > NAME_MAX_CHARS:
        raise InputError(f"candidate name must be 1 to {NAME_MAX_CHARS} printable characters, got {text[:40]!r}")
    return text


def evaluate_candidate(inputs: TaskInputs, run: CandidateRun, *, name: str = DEFAULT_NAME,
                       precision: str = "fp32", instruction: bool = False, source: str = SOURCE) -> pd.DataFrame:
    """Per-query rows of ``run`` in the ``query_metrics`` schema (columns :data:`evalcore.schema.QUERY_METRICS`):
    every query of every task, every metric of :data:`SETTING_METRICS` under every tie policy of
    :data:`SETTING_TIE_POLICIES`, tie-aware (oblivious / expected / min / max, n_candidates, tied_at_cutoff).
    A query the run leaves out scores 0. InputError when it takes longer than :data:`EVAL_SECONDS`."""
    from evalcore.engine import evaluate
    from evalcore.schema import QUERY_METRICS

    if (run.benchmark, run.setting) != (inputs.benchmark, inputs.setting):
        raise InputError(f"the run was read for {run.benchmark} {run.setting}, not {inputs.benchmark} "
                         f"{inputs.setting}")
    name = check_name(name)
    precision = str(precision).strip()
    if not precision:
        raise InputError("candidate precision must not be empty (e.g. fp32)")
    seconds = EVAL_SECONDS.value()
    started = time.monotonic()
    metrics = list(SETTING_METRICS[inputs.setting])
    from evalcore.progress import iterate

    frames = []
    for task in iterate(inputs.tasks, "candidate", unit="task"):  # a bar only for the CLI or the upload worker
        qrels = inputs.qrels[inputs.qrels["task"] == task][["qid", "docid", "relevance"]]
        for policy in SETTING_TIE_POLICIES[inputs.setting]:
            per_query = evaluate(run.runs[task], qrels, metrics, policy, include_missing=True)
            frames.append(per_query.assign(task=task, tie_policy=policy))
            if time.monotonic() - started > seconds:
                raise InputError(f"evaluation stopped after {seconds:g} s at task {task} "
                                 f"({EVAL_SECONDS.variable}): try fewer rows per query", run.files.get(task))
    rows = pd.concat(frames, ignore_index=True).assign(
        system=name, benchmark=inputs.benchmark, setting=inputs.setting, instruction=bool(instruction),
        precision=precision, source=source)
    return rows[list(QUERY_METRICS)]
