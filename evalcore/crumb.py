"""CRUMB's official evaluation procedure, tie-aware: which qrels judge which metric, where MaxP applies, and
the per-query rows (``query_metrics``) of a folder of runs.

The procedure is ``crumb_eval``'s (github.com/jfkback/crumb, ``crumb_eval/src/crumb_eval/eval/eval.py``),
which hands integer-cast labels to ``ir_measures.calc_aggregate``:

- **nDCG** on the graded labels cast to integers; **P, R, RR** on the binary qrels where a task has them
  (``paper_retrieval``), else on the graded ones (the same integer cast; relevant = label >= 1).
- **MaxP** exactly for ``clinical_trial``, ``set_operation_entity_retrieval`` and ``tip_of_the_tongue`` on
  the passage collection ("auto"): each document keeps its best passage and is judged with the
  ``full_document_qrels``. Never on full documents.
- The **full-document** setting exists for ``clinical_trial``, ``legal_qa``, ``set_operation_entity_retrieval``,
  ``stack_exchange`` and ``tip_of_the_tongue`` (judged with ``full_document_qrels``); the other three tasks
  have one collection, and crumb_eval evaluates them as in the passage setting whatever the flag.
- A task score is the mean over every query the qrels judge (under the metric's key): a judged query the run
  lacks, or lists with no items, scores 0 in the official value and in the expected value, min and max, as in
  crumb_eval (ir_measures fills in its pytrec_eval results with 0 for every qrels query the run lacks); a run
  none of whose queries is judged is an error. The headline numbers are **nDCG@10** and **R@100**, averaged
  over the eight tasks (the arithmetic mean).
- The oblivious value breaks score ties as crumb_eval's numbers do (:func:`official_tie_policy`):
  ``docid-desc`` (pytrec_eval) except RR with a cutoff, ``docid-asc`` (ir_measures' MS MARCO provider).

**Ties after MaxP.** A document's score is the maximum of its passages' scores, a deterministic function of
the passage scores: two passages of one document with the same score give that same maximum, whichever of
them crumb_eval's stable sort keeps, so MaxP itself is never ambiguous. Ties that matter are between
*documents* whose maxima are equal; the tie-aware values (expected, min, max) are over all orderings of tied
documents after MaxP, computed by the engine's closed forms on the document-level run.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from evalcore.crumb_files import CrumbRun, labels_path, max_passage, read_query_labels, read_run
from evalcore.errors import InputError

BENCHMARK = "crumb"
TASKS = (
    "clinical_trial", "code_retrieval", "legal_qa", "paper_retrieval", "set_operation_entity_retrieval",
    "stack_exchange", "theorem_retrieval", "tip_of_the_tongue",
)
MAXP_TASKS = frozenset({"clinical_trial", "set_operation_entity_retrieval", "tip_of_the_tongue"})
FULL_DOCUMENT_TASKS = frozenset({"clinical_trial", "legal_qa", "set_operation_entity_retrieval", "stack_exchange",
                                 "tip_of_the_tongue"})
BINARY_QRELS_TASKS = frozenset({"paper_retrieval"})
SETTINGS = ("passage", "full-document")
BINARY_METRIC_NAMES = frozenset({"p", "recall", "mrr"})  # ir_measures P, R, RR: judged on the binary qrels
# crumb_eval's default metrics (nDCG@10, nDCG@5, P@10, P@5, R@10, MRR, R@1000, R@100, MRR@10) in evalcore names
OFFICIAL_METRICS = ("ndcg@10", "recall@100", "ndcg@5", "p@10", "p@5", "recall@10", "recall@1000", "mrr@10", "mrr")
HEADLINE_METRICS = ("ndcg@10", "recall@100")
SOURCE = "crumb-import"
OFFICIAL = "official"  # the tie policy argument meaning: each metric under the order crumb_eval's numbers use


@dataclass(frozen=True)
class Procedure:
    """How one task is evaluated in one setting: MaxP or not, and the qrels key of each metric family."""

    task: str
    setting: str
    maxp: bool
    graded_key: str
    binary_key: str

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.graded_key, self.binary_key)))

    def key_of(self, metric: str) -> str:
        """The qrels key judging ``metric`` (``ndcg@10`` -> graded, ``recall@100`` -> binary where present)."""
        from evalcore.metrics import parse_metric

        return self.binary_key if parse_metric(metric).name in BINARY_METRIC_NAMES else self.graded_key


def official_tie_policy(metric: str) -> str:
    """The order in which crumb_eval's numbers break score ties for ``metric``: ir_measures (0.4.x) computes
    RR with a cutoff (``RR@10``) by its MS MARCO provider, which sorts by (score descending, document id
    ascending): ``docid-asc``; every other official metric (nDCG, P, R, RR without cutoff) by pytrec_eval,
    which breaks ties by document id descending: ``docid-desc``."""
    from evalcore.metrics import parse_metric

    parsed = parse_metric(metric)
    return "docid-asc" if parsed.name == "mrr" and parsed.k is not None else "docid-desc"


def procedure(task: str, setting: str = "passage") -> Procedure:
    """The official procedure of ``task`` in ``setting`` (``passage`` or ``full-document``)."""
    if task not in TASKS:
        raise InputError(f"unknown CRUMB task {task!r}: expected one of {', '.join(TASKS)}")
    if setting not in SETTINGS:
        raise InputError(f"unknown CRUMB setting {setting!r}: expected one of {', '.join(SETTINGS)}")
    full_documents = setting == "full-document" and task in FULL_DOCUMENT_TASKS
    if full_documents:
        return Procedure(task, setting, False, "full_document_qrels", "full_document_qrels")
    if task in MAXP_TASKS:
        return Procedure(task, setting, True, "full_document_qrels", "full_document_qrels")
    binary = "passage_binary_qrels" if task in BINARY_QRELS_TASKS else "passage_qrels"
    return Procedure(task, setting, False, "passage_qrels", binary)


def task_of_file(path: str | Path) -> str:
    """The task a run file is for, from its name's prefix as crumb_eval infers it (``clinical_trial_bm25.jsonl``
    -> ``clinical_trial``); the longest matching task name wins."""
    name = Path(path).name
    matches = [task for task in TASKS if name.startswith(task)]
    if not matches:
        raise InputError(f"cannot tell the task from the file name: expected it to start with one of "
                         f"{', '.join(TASKS)}", path)
    return max(matches, key=len)


def document_run(run: CrumbRun, plan: Procedure) -> pa.Table:
    """The run the metrics see: the documents after MaxP where the procedure uses it, else the run itself."""
    return max_passage(run) if plan.maxp else run.table


def evaluate_task(run_path: str | Path, crumb_dir: str | Path, task: str, setting: str = "passage", *,
                  split: str = "eval", metrics=OFFICIAL_METRICS, tie_policy: str = OFFICIAL) -> pa.Table:
    """Per-query tie-aware rows (``evalcore.engine.RESULT_SCHEMA`` plus ``tie_policy``) of one task's run, by
    the official procedure; ``tie_policy`` ``official`` (:func:`official_tie_policy` per metric) or one named
    policy for every metric. InputError when no query of the run is judged."""
    from evalcore.engine import evaluate_table

    plan = procedure(task, setting)
    labels = read_query_labels(labels_path(crumb_dir, task, split), plan.keys)
    run = read_run(run_path)
    documents = document_run(run, plan)
    groups: dict[tuple[str, str], list[str]] = {}
    for metric in metrics:
        policy = official_tie_policy(metric) if tie_policy == OFFICIAL else tie_policy
        groups.setdefault((plan.key_of(metric), policy), []).append(metric)
    judged = pa.concat_arrays([labels.qrels[key]["qid"].combine_chunks() for key in plan.keys])
    if not pc.any(pc.is_in(documents["qid"], value_set=pc.unique(judged))).as_py():
        raise InputError(f"no query of the run is judged in {labels.path} (expected CRUMB query ids of {task})",
                         run_path)
    tables = []
    for (key, policy), wanted in groups.items():  # a judged query the run lacks scores 0, as in crumb_eval
        table = evaluate_table(documents, labels.qrels[key], wanted, policy, include_missing=True)
        tables.append(table.append_column("tie_policy", pa.array([policy] * table.num_rows, pa.string())))
    return pa.concat_tables(tables)


def run_files(folder: str | Path) -> dict[str, Path]:
    """{task: run file} of a folder (or one file): every file must name its task, at most one file per task."""
    from evalcore.formats.detection import folder_entries, path_kind

    folder = Path(folder)
    kind = path_kind(folder)  # a folder the user may not enter: one line, not a PermissionError
    if kind == "file":
        return {task_of_file(folder): folder}
    if kind != "folder":
        raise InputError("expected a folder of run files (or one run file)", folder)
    found: dict[str, Path] = {}
    for path in (p for p, entry in folder_entries(folder) if entry == "file" and not p.name.startswith(".")):
        task = task_of_file(path)
        if task in found:
            raise InputError(f"a second run for {task} (the first is {found[task].name}): expected one file per task",
                             path)
        found[task] = path
    if not found:
        raise InputError("no run file in this folder", folder)
    return found


def evaluate_folder(runs: str | Path, crumb_dir: str | Path, *, system: str, setting: str = "passage",
                    instruction: bool = False, precision: str = "fp32", split: str = "eval",
                    tie_policy: str = OFFICIAL, source: str = SOURCE, metrics=OFFICIAL_METRICS):
    """Every task run of a folder evaluated by the official procedure, as ``query_metrics`` rows (a pandas
    DataFrame, columns :data:`evalcore.schema.QUERY_METRICS`). Nothing is written."""
    import pandas as pd

    from evalcore.schema import QUERY_METRICS

    from evalcore.progress import iterate

    frames = []
    for task, path in iterate(list(run_files(runs).items()), "import-crumb", unit="task"):  # a bar for the CLI
        rows = evaluate_task(path, crumb_dir, task, setting, split=split, metrics=metrics,
                             tie_policy=tie_policy).to_pandas()
        frames.append(rows.assign(system=system, benchmark=BENCHMARK, task=task, setting=setting,
                                  instruction=instruction, precision=precision, source=source))
    frame = pd.concat(frames, ignore_index=True)
    return frame.astype({"qid": str, "metric": str})[list(QUERY_METRICS)]


def task_means(rows) -> "object":
    """Mean over queries per (task, metric) of oblivious / expected / min / max, plus CRUMB's mean over tasks
    (row ``task == "mean"``), as a pandas DataFrame."""
    import pandas as pd

    values = ["oblivious", "expected", "min", "max"]
    per_task = rows.groupby(["task", "metric"], sort=True)[values].mean().reset_index()
    overall = per_task.groupby("metric", sort=False)[values].mean().reset_index().assign(task="mean")
    return pd.concat([per_task, overall[per_task.columns]], ignore_index=True)
