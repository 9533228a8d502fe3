"""What the upload worker (``ui/upload_worker.py``) runs: the engine's candidate loop
(:mod:`evalcore.candidate`: the shipped task inputs, read and check the uploaded files, evaluate tie-aware)
for one upload, returning Arrow rows for the pipe. No Streamlit here; this module only adapts."""
from __future__ import annotations

import os

import pyarrow as pa

SOURCE = "dashboard upload"
"""The ``source`` of an uploaded run's rows (and of the rows ``Add to the leaderboard`` writes)."""
SOURCE_WORDS = {SOURCE: "your upload"}
"""What a "Sources:" line calls an uploaded run's ``source`` (it has no provenance record):
:func:`ui.data.provenance` names it so."""


def evaluate_uploads(files: list[tuple[str, bytes]], *, benchmark: str, setting: str, instruction: bool,
                     precision: str, system: str, max_rows: int) -> tuple[pa.Table, dict]:
    """(per-query rows in the ``query_metrics`` schema, a summary for the view) of the uploaded ``files``
    against ``$TIEBREAK_DATA``'s shipped tasks. Raises :class:`evalcore.errors.InputError` (one line naming
    the file as uploaded and the line) for a bad upload."""
    from evalcore import candidate

    inputs = candidate.task_inputs(os.environ["TIEBREAK_DATA"], benchmark, setting)
    run = candidate.read_candidate(files, inputs)
    if run.n_rows > max_rows:  # the reader's own limit is set from the same number; this says it plainly
        from evalcore.errors import InputError

        raise InputError(f"too many rows: {run.n_rows:,} (at most {max_rows:,} per upload)")
    frame = candidate.evaluate_candidate(inputs, run, name=system, precision=precision, instruction=instruction,
                                         source=SOURCE)
    summary = {"run_rows": run.n_rows, "tasks": list(inputs.tasks), "files": run.files}
    return pa.Table.from_pandas(frame, preserve_index=False), summary
