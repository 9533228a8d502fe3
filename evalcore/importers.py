"""Readers for published result files → ``task_scores`` and ``systems`` tables (docs/CONTRACTS.md § Data contract).

MTEB results tree (``results/<org__model>/<revision>/<Task>.json`` + ``model_meta.json``):
- Both JSON layouts are read: mteb ≥ 1.11 (``scores: {split: [{hf_subset, ndcg_at_10, ...}]}``) and the
  older flat one (``{split: {ndcg_at_10, ...}}`` or ``{split: {subset: {...}}}``).
- Split ``test``; subset ``default``, else ``en``, else the only subset, else one whose ``languages`` is
  exactly ``eng-Latn`` (all RAR-b/R2MED files in the shipped tree are test/default).
- One system per model name (``model_meta.name``, else the folder name with ``__`` → ``/``). For each
  task the newest revision that has the task is used; newest = latest ``date`` field in its result files,
  then highest mteb version, then revision string. The revision used is kept per row (``revision``).
- ``instruction`` is decided once per model (:func:`decide_instructions`), never per revision: the
  ``use_instructions`` of its ``model_meta.json`` files, a null or missing value counting as unknown (not as
  false); revisions that disagree (true / false) are settled by the newest revision that says. A model none of
  whose revisions says is stored with ``instruction`` NULL (unknown). MTEB runs instruction models with their
  instructions. ``precision`` = ``fp32`` meaning "as published" (the files do not record the dtype).
  ``n_queries`` is not in the files (NULL).
- ``tie_policy`` per metric and file (:func:`mteb_tie_policy`): nDCG, MAP, recall and precision come from
  pytrec_eval (``docid-desc``); ``mrr_at_k`` was computed by MTEB itself with a stable sort on the score, tied
  documents keeping the order the results dict listed them in (``input-order``), in every release before
  2.18.19 (mteb issue #5092, fixed by PR #5136 in 2.18.19; p-MRR, not imported, followed in PR #5241, 2.19.5).
- Values are validated (:func:`checked_value`): every imported metric lies in [0, 1]; a value that is not a
  finite number in that range (NaN, inf, negative, or a percentage such as 45.3) is not imported, with a
  warning naming the file. A negative or non-finite ``n_parameters`` is dropped the same way.

R2MED paper results (``results/{base retriever,reranker,gar}/…/<Task>.json``): systems are named from the
pipeline: ``NV-Embed-v2`` (retriever), ``NV-Embed-v2>>bge-reranker`` (reranking the retriever's top 10),
``HyDE(qwen-7b)+BGE-Large-en-v1.5`` (LLM query rewriting, then the retriever). The files do not say
whether instructions were used: rows are stored with ``instruction`` NULL (unknown).
"""
from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path
from typing import Callable, Iterator

import pandas as pd

from evalcore import schema
from evalcore.errors import InputError

log = logging.getLogger(__name__)
Warn = Callable[[str], None]

RARB_TASKS = (
    "ARCChallenge", "AlphaNLI", "HellaSwag", "WinoGrande", "PIQA", "SIQA", "Quail", "SpartQA", "TempReasonL1",
    "TempReasonL2Pure", "TempReasonL2Fact", "TempReasonL2Context", "TempReasonL3Pure", "TempReasonL3Fact",
    "TempReasonL3Context", "RARbCode", "RARbMath",
)
R2MED_TASKS = (
    "R2MEDBiologyRetrieval", "R2MEDBioinformaticsRetrieval", "R2MEDMedicalSciencesRetrieval",
    "R2MEDMedXpertQAExamRetrieval", "R2MEDMedQADiagRetrieval", "R2MEDPMCTreatmentRetrieval",
    "R2MEDPMCClinicalRetrieval", "R2MEDIIYiClinicalRetrieval",
)
BENCHMARK_OF_TASK = {**{t: "rar-b" for t in RARB_TASKS}, **{t: "r2med" for t in R2MED_TASKS}}

# result key (MTEB / BEIR style, and the R2MED reranker style) -> canonical metric name (evalcore.metrics)
METRIC_KEYS = {
    "ndcg_at_10": "ndcg@10", "NDCG@10": "ndcg@10",
    "mrr_at_10": "mrr@10",
    "recall_at_10": "recall@10", "Recall@10": "recall@10",
    "recall_at_100": "recall@100", "Recall@100": "recall@100",
    "map_at_10": "ap@10", "MAP@10": "ap@10",
    "precision_at_1": "p@1", "P@1": "p@1",
    "precision_at_10": "p@10", "P@10": "p@10",
}
# the first mteb release whose mrr_at_k breaks score ties by document id like pytrec_eval (release notes of
# 2.18.19, 2026-08-13: "fix: break MRR ties by doc id to match pytrec_eval (#5136)"); before it, MTEB's own
# MRR sorted by score alone with Python's stable sort, so tied documents kept the results dict's order
MTEB_MRR_TIES_FIXED = (2, 18, 19)
PYTREC_EVAL_POLICY = "docid-desc"
STABLE_SORT_POLICY = "input-order"

MTEB_SOURCE = "mteb-results@f4cc6c8"
R2MED_SOURCE = "r2med-paper@62b7074"
R2MED_REFERENCE = "https://github.com/R2MED/R2MED"

# the data contract's columns (evalcore.schema), and the revision each task score comes from
TASK_SCORE_COLUMNS = [*schema.TASK_SCORES, *schema.TASK_SCORES_OPTIONAL, "revision"]
SYSTEM_COLUMNS = [*schema.SYSTEMS, *schema.SYSTEMS_OPTIONAL]


# -- MTEB ----------------------------------------------------------------------------------------------
def _load_json(path: Path) -> dict:
    """A JSON object from ``path``, or InputError naming the file."""
    try:
        with open(path, encoding="utf-8") as handle:
            loaded = json.load(handle)
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable JSON file ({exc})", path) from exc
    except RecursionError as exc:  # json.load on an object nested too deeply for Python's stack
        raise InputError("not a readable JSON file (nested too deeply)", path) from exc
    if not isinstance(loaded, dict):
        raise InputError("expected a JSON object", path)
    return loaded


def _pick_subset(entries: dict[str, dict]) -> dict | None:
    """The subset used: 'default', else 'en', else the only one, else the English-only one."""
    for name in ("default", "en"):
        if name in entries:
            return entries[name]
    if len(entries) == 1:
        return next(iter(entries.values()))
    english = [e for e in entries.values() if list(e.get("languages") or []) == ["eng-Latn"]]
    return english[0] if len(english) == 1 else None


def checked_value(value: object) -> tuple[float | None, str]:
    """(the value, '') when ``value`` is a number in [0, 1] (every imported metric is bounded by 1), else
    (None, why not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"{value!r} is not a number"
    number = float(value)
    if not math.isfinite(number):
        return None, f"{number} is not a finite number"
    if number < 0:
        return None, f"{number} is negative"
    if number > 1:
        hint = " (a percentage?)" if number <= 100 else ""
        return None, f"{number} is above 1{hint}"
    return number, ""


def mteb_tie_policy(metric: str, mteb_version: object) -> str:
    """The tie policy behind a published MTEB number: ``input-order`` for ``mrr@k`` from an mteb release
    before :data:`MTEB_MRR_TIES_FIXED` (or a file without a version), ``docid-desc`` otherwise."""
    if metric.startswith("mrr@"):
        version = _version_key(mteb_version)
        if not version or version < MTEB_MRR_TIES_FIXED:
            return STABLE_SORT_POLICY
    return PYTREC_EVAL_POLICY


def mteb_test_scores(result: dict, warn: Warn | None = None, where: object = "") -> dict[str, float] | None:
    """Metric values of the test split (canonical names) from either MTEB JSON layout; None if absent.
    Values outside [0, 1] are left out, each reported through ``warn`` (naming ``where``)."""
    if isinstance(result.get("scores"), dict):  # mteb >= 1.11
        split = result["scores"].get("test")
        if not isinstance(split, list):
            return None
        entries = {str(e.get("hf_subset", "default")): e for e in split if isinstance(e, dict)}
    else:  # older layout: {"test": {metric: value}} or {"test": {subset: {metric: value}}}
        split = result.get("test")
        if not isinstance(split, dict):
            return None
        if any(key in split for key in METRIC_KEYS):
            entries = {"default": split}
        else:
            entries = {str(k): v for k, v in split.items() if isinstance(v, dict)}
    chosen = _pick_subset(entries)
    if chosen is None:
        return None
    return _checked_metrics(chosen, warn, where)


def _checked_metrics(values: dict, warn: Warn | None, where: object) -> dict[str, float]:
    """{canonical metric: value} of the :data:`METRIC_KEYS` present in ``values`` whose value passes
    :func:`checked_value`; the others reported through ``warn``."""
    found = {}
    for key, metric in METRIC_KEYS.items():
        if key not in values or values[key] is None:
            continue
        number, problem = checked_value(values[key])
        if number is None:
            (warn or log.warning)(f"{where}: skipped {key}: {problem}, expected a score in [0, 1]")
        else:
            found[metric] = number
    return found


def _version_key(version: object) -> tuple[int, ...]:
    """'1.12.27' → (1, 12, 27), for ordering mteb versions."""
    return tuple(int(part) for part in re.findall(r"\d+", str(version or "")))


def _revision_results(revision_dir: Path) -> Iterator[tuple[str, dict, Path]]:
    """(task name, parsed JSON, file) of the RAR-b / R2MED result files in one revision folder."""
    for path in sorted(revision_dir.glob("*.json")):
        if path.name == "model_meta.json":
            continue
        result = _load_json(path)
        task = str(result.get("task_name") or result.get("mteb_dataset_name") or path.stem)
        if task in BENCHMARK_OF_TASK:
            yield task, result, path


def _family(model_name: str) -> str:
    """Family = the organisation part of ``org/model`` (the whole name when there is none)."""
    return model_name.split("/", 1)[0] if "/" in model_name else model_name


def _meta_instructions(meta: dict) -> bool | None:
    """``use_instructions`` of one ``model_meta.json`` (also the misspelt old key); None = not said."""
    value = meta.get("use_instructions", meta.get("use_instuctions"))
    return None if value is None else bool(value)


def decide_instructions(stated: list[tuple[tuple, bool | None]]) -> bool | None:
    """Whether a model uses instructions, from (newest key, ``use_instructions``) of each of its revisions.

    A property of the model, decided once: None (unknown) when no revision says; the value when the
    revisions that say agree; else what the newest revision that says says.
    """
    said = sorted((key, value) for key, value in stated if value is not None)
    return said[-1][1] if said else None


def _n_parameters(value: object, warn: Warn, where: object) -> float | None:
    """A parameter count: a finite number >= 0, else None (reported through ``warn`` when present)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)) \
            or float(value) < 0:
        warn(f"{where}: ignored n_parameters {value!r}: expected a parameter count >= 0")
        return None
    return float(value)


def _system_row(model_name: str, meta: dict, revision: str, uses_instructions: bool | None = None,
                warn: Warn | None = None, where: object = "") -> dict:
    """One ``systems`` row from ``model_meta.json`` (old and new key spellings)."""
    open_weights = meta.get("open_weights", meta.get("open_source"))
    return {
        "system": model_name,
        "display_name": model_name.split("/", 1)[-1],
        "family": _family(model_name),
        "n_parameters": _n_parameters(meta.get("n_parameters"), warn or log.warning, where),
        "license": meta.get("license"),
        "open_weights": None if open_weights is None else bool(open_weights),
        "uses_instructions": uses_instructions,
        "release_date": None if meta.get("release_date") is None else str(meta.get("release_date")),
        "reference": meta.get("reference"),
        "source": MTEB_SOURCE,
        "revision": revision,
    }


def read_mteb_results(
    root: str | Path, source: str = MTEB_SOURCE, warn: Warn | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(task_scores, systems) for the RAR-b and R2MED tasks of an MTEB results tree.

    ``root`` is the ``results`` folder or its parent. ``warn`` receives one line per value left out (default:
    the ``evalcore.importers`` logger).
    """
    warn = warn or log.warning
    root = Path(root)
    if (root / "results").is_dir():
        root = root / "results"
    if not root.is_dir():
        raise InputError("expected an MTEB results folder (results/<org__model>/<revision>/<Task>.json)", root)
    # (model, task) -> (newest key, revision, scores, mteb version); model -> (newest key, meta, revision)
    chosen: dict[tuple[str, str], tuple[tuple, str, dict[str, float], object]] = {}
    models: dict[str, tuple[tuple, dict, str, Path]] = {}
    stated: dict[str, list[tuple[tuple, bool | None]]] = {}
    from evalcore.progress import iterate

    revisions = sorted(p for p in root.glob("*/*") if p.is_dir())
    for revision_dir in iterate(revisions, "import-mteb", unit="revision"):  # a bar only for the CLI
        meta_path = revision_dir / "model_meta.json"
        meta = _load_json(meta_path) if meta_path.is_file() else {}
        model_name = str(meta.get("name") or revision_dir.parent.name.replace("__", "/", 1))
        revision = revision_dir.name
        results = list(_revision_results(revision_dir))
        if not results:
            continue
        dates = [r.get("date") for _, r, _ in results if isinstance(r.get("date"), (int, float))]
        newest_key = (
            max(dates) if dates else float("-inf"),
            max(_version_key(r.get("mteb_version")) for _, r, _ in results),
            str(meta.get("release_date") or ""),
            revision,
        )
        if model_name not in models or newest_key > models[model_name][0]:
            models[model_name] = (newest_key, meta, revision, meta_path)
        stated.setdefault(model_name, []).append((newest_key, _meta_instructions(meta)))
        for task, result, path in results:
            scores = mteb_test_scores(result, warn, path)
            if not scores:
                continue
            previous = chosen.get((model_name, task))
            if previous is None or newest_key > previous[0]:
                chosen[(model_name, task)] = (newest_key, revision, scores, result.get("mteb_version"))
    instructions = {model: decide_instructions(said) for model, said in stated.items()}
    rows = [
        {
            "system": model, "benchmark": BENCHMARK_OF_TASK[task], "task": task, "setting": "full",
            "instruction": instructions[model], "precision": "fp32", "metric": metric, "value": value,
            "expected": None, "min": None, "max": None, "n_queries": None, "source": source,
            "tie_policy": mteb_tie_policy(metric, mteb_version), "revision": revision,
        }
        for (model, task), (_, revision, scores, mteb_version) in sorted(chosen.items())
        for metric, value in scores.items()
    ]
    systems = [_system_row(model, meta, revision, instructions[model], warn, meta_path)
               for model, (_, meta, revision, meta_path) in sorted(models.items())]
    for row in systems:
        row["source"] = source
    return _typed_task_scores(rows), _typed_systems(systems)


# -- R2MED paper ---------------------------------------------------------------------------------------
R2MED_RETRIEVERS = {
    "bge": "BGE-Large-en-v1.5", "bm25": "BM25", "bmr-2b": "BMRetriever-2B", "bmr-410m": "BMRetriever-410M",
    "bmr-7b": "BMRetriever-7B", "contriever": "Contriever", "e5": "E5-mistral-7b-instruct", "grit": "GritLM-7B",
    "inst-l": "InstructOR-L", "inst-xl": "InstructOR-XL", "medcpt": "MedCPT", "nv": "NV-Embed-v2",
    "openai": "Text-embedding-3-large", "sfr": "SFR-Embedding-Mistral", "voyage": "Voyage-3",
}
R2MED_REWRITE_METHODS = {
    "hyde": "HyDE", "lamer": "LameR", "query2doc": "Query2doc", "search-o1": "Search-O1", "search-r1": "Search-R1",
}
CLOSED_R2MED_RETRIEVERS = {"openai", "voyage"}


def r2med_task_name(dataset_name: str) -> str:
    """'MedQA-Diag' → 'R2MEDMedQADiagRetrieval' (the MTEB task name)."""
    return "R2MED" + dataset_name.replace("-", "").replace(" ", "") + "Retrieval"


def r2med_pipeline(relative: Path, result: dict) -> tuple[str, str]:
    """(system name, family) of one R2MED result file from its path under ``results/``."""
    parts = relative.parts[:-1]
    kind = parts[0] if parts else ""
    if kind == "base retriever" and len(parts) >= 2:
        key = str(result.get("model_name") or parts[1])
        return R2MED_RETRIEVERS.get(key, key), "R2MED paper: retriever"
    if kind == "reranker" and len(parts) >= 3:
        reranker = str(result.get("reranker_name") or parts[1])
        retriever = str(result.get("retriever_name") or parts[2])
        return f"{R2MED_RETRIEVERS.get(retriever, retriever)}>>{reranker}", "R2MED paper: retriever + reranker"
    if kind == "gar" and len(parts) >= 4:
        method = str(result.get("gar_method") or parts[1])
        llm = str(result.get("gar_llm") or parts[2])
        retriever = str(result.get("retriever_name") or parts[3])
        name = f"{R2MED_REWRITE_METHODS.get(method, method)}({llm})+{R2MED_RETRIEVERS.get(retriever, retriever)}"
        return name, "R2MED paper: query rewriting + retriever"
    raise InputError("unexpected location: expected base retriever/<r>, reranker/<m>/<r>/… or gar/<m>/<llm>/<r>",
                     relative)


def read_r2med_results(
    root: str | Path, source: str = R2MED_SOURCE, warn: Warn | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(task_scores, systems) from the R2MED paper's ``results/`` folder (or its parent). ``warn`` receives one
    line per value left out (default: the ``evalcore.importers`` logger)."""
    root = Path(root)
    if (root / "results").is_dir():
        root = root / "results"
    if not root.is_dir():
        raise InputError("expected the R2MED results folder", root)
    from evalcore.progress import iterate

    rows, systems = [], {}
    for path in iterate(sorted(root.rglob("*.json")), "import-r2med", unit="file"):  # a bar only for the CLI
        result = _load_json(path)
        relative = path.relative_to(root)
        system, family = r2med_pipeline(relative, result)
        task = r2med_task_name(str(result.get("dataset_name") or path.stem))
        if task not in R2MED_TASKS:
            raise InputError(f"unknown R2MED dataset {result.get('dataset_name')!r}", path)
        scores = result.get("test")
        if not isinstance(scores, dict):
            raise InputError("expected a 'test' object of metric values", path)
        for metric, value in _checked_metrics(scores, warn, path).items():
            rows.append({
                "system": system, "benchmark": "r2med", "task": task, "setting": "full", "instruction": None,
                "precision": "fp32", "metric": metric, "value": value, "expected": None, "min": None,
                "max": None, "n_queries": None, "source": source, "tie_policy": PYTREC_EVAL_POLICY,
                "revision": None,
            })
        retriever_key = relative.parts[1] if relative.parts[0] == "base retriever" else None
        systems.setdefault(system, {
            "system": system, "display_name": system, "family": family, "n_parameters": None, "license": None,
            "open_weights": (retriever_key not in CLOSED_R2MED_RETRIEVERS) if retriever_key else None,
            "uses_instructions": None, "release_date": None, "reference": R2MED_REFERENCE, "source": source,
            "revision": None,
        })
    table = _typed_task_scores(rows)
    duplicated = table.duplicated(["system", "task", "metric"])
    if duplicated.any():
        first = table[duplicated].iloc[0]
        raise InputError(f"two result files map to system {first['system']!r}, task {first['task']!r}", root)
    return table, _typed_systems(list(systems.values()))


# -- typing & writing ----------------------------------------------------------------------------------
def _typed_task_scores(rows: list[dict]) -> pd.DataFrame:
    """task_scores rows with the contract's column order and dtypes."""
    frame = pd.DataFrame(rows, columns=TASK_SCORE_COLUMNS)
    return frame.astype({
        "system": "string", "benchmark": "string", "task": "string", "setting": "string",
        "instruction": "boolean", "precision": "string", "metric": "string", "value": "float64",
        "expected": "float64", "min": "float64",
        "max": "float64", "n_queries": "Int64", "source": "string", "tie_policy": "string", "revision": "string",
    })


def _typed_systems(rows: list[dict]) -> pd.DataFrame:
    """systems rows with the contract's column order and dtypes."""
    frame = pd.DataFrame(rows, columns=SYSTEM_COLUMNS)
    return frame.astype({
        "system": "string", "display_name": "string", "family": "string", "n_parameters": "float64",
        "license": "string", "open_weights": "boolean", "uses_instructions": "boolean", "release_date": "string",
        "reference": "string", "source": "string", "revision": "string",
    })


def write_compact_parquet(frame: pd.DataFrame, path: str | Path) -> None:
    """Write ``frame`` as zstd parquet (dictionary-encoded strings) via a temp file and rename."""
    write_compact_parquet_files({path: frame})


def write_compact_parquet_files(frames: dict[str | Path, pd.DataFrame]) -> None:
    """Write several frames as zstd parquet so that a crash leaves either the old or the new version of the
    set: every file is written under a hidden temp name and synced before the first of them is renamed into
    place (:func:`evalcore.formats.atomic_paths`; all removed on any exception), so the renames follow one
    another with nothing in between (an importer's task_scores and systems come from one import; only a kill
    between two ``rename`` calls could split them). Afterwards, temporary files that killed writers left in
    those folders over an hour ago are removed (:func:`evalcore.outputs.sweep_temporaries`)."""
    from evalcore.formats import atomic_paths
    from evalcore.outputs import sweep_temporaries

    paths = [Path(path) for path in frames]
    with atomic_paths(paths, "results") as temporaries:
        for temporary, frame in zip(temporaries, frames.values()):
            write_compact_table(frame, temporary)
    for folder in {path.parent for path in paths}:  # what killed writers left there earlier
        sweep_temporaries(folder)


def write_compact_table(frame: pd.DataFrame, path: str | Path) -> None:
    """``frame`` as zstd parquet (level 9, dictionary-encoded strings) at ``path``, as it is (not atomically:
    the writers above stage it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, compression="zstd", compression_level=9)
