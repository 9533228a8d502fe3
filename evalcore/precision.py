"""Low-precision emulation, High-Precision Scoring (HPS) and tie statistics.

A low-precision pipeline (PyTorch autocast, ``model.to(torch.bfloat16)``) computes each operation in FP32
and rounds its result to the storage dtype. We emulate that with ``ml_dtypes`` (round-to-nearest-even, as
PyTorch casts), without torch:

- **no HPS**: the inputs of the final scoring step are low precision *and* its result is rounded,
  e.g. ``round(sigmoid(round(z)))``;
- **HPS** (Yang et al., ACL 2026, arXiv 2508.03306): the final scoring step is upcast to FP32 — its
  low-precision inputs are upcast and the FP32 result is kept, e.g. ``sigmoid(round(z))`` in FP32.

Rounded values are returned as ``float32`` arrays holding exactly the low-precision numbers. Scores written
to runs are ``float64`` holding exactly those ``float32`` values, so ties compare exactly as stored.

Tie statistics (per query: tie groups, largest group, share of the top k in a tie, ties straddling the
cutoff) follow the tie-group definition of docs/DESIGN.md (McSherry & Najork, ECIR 2008).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import ml_dtypes
import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import ArrayLike

from evalcore.errors import InputError

# canonical precision name -> numpy dtype (ml_dtypes for the formats numpy lacks)
FLOAT_DTYPES: dict[str, np.dtype] = {
    "fp32": np.dtype(np.float32),
    "fp16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "fp8-e4m3": np.dtype(ml_dtypes.float8_e4m3fn),  # torch.float8_e4m3fn: no inf, overflow -> NaN
    "fp8-e5m2": np.dtype(ml_dtypes.float8_e5m2),
}
LOW_PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp8-e4m3", "fp8-e5m2")
SCORINGS: tuple[str, ...] = ("score", "sigmoid")

_DTYPE_ALIASES: dict[str, str] = {
    "float32": "fp32", "f32": "fp32", "single": "fp32",
    "float16": "fp16", "f16": "fp16", "half": "fp16",
    "bfloat16": "bf16",
    "float8-e4m3fn": "fp8-e4m3", "float8-e4m3": "fp8-e4m3", "fp8-e4m3fn": "fp8-e4m3", "e4m3": "fp8-e4m3",
    "e4m3fn": "fp8-e4m3",
    "float8-e5m2": "fp8-e5m2", "e5m2": "fp8-e5m2",
}

PRECISION_LABELS: tuple[str, ...] = (
    "fp32", "fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "fp16+hps", "bf16+hps", "fp8-e4m3+hps", "fp8-e5m2+hps",
    "int8", "q4", "binary",
)
"""The precision labels of the data contract (``query_metrics.precision``): a float format (inference or stored
scores), the same with High-Precision Scoring (``+hps``: low-precision embeddings scored in FP32), int8 / binary
embeddings, q4 weights."""
_LABEL_ALIASES: dict[str, str] = {"ubinary": "binary", "bin": "binary", "int-8": "int8", "i8": "int8"}


def canonical_precision(label: str, extra=()) -> str:
    """The canonical spelling of a precision label: case, spaces and ``_`` ignored, dtype aliases resolved
    (``FP32``, `` float32 `` -> ``fp32``; ``BF16 + HPS`` -> ``bf16+hps``). ValueError unless the result is in
    :data:`PRECISION_LABELS` or ``extra`` (labels already in a data folder, taken as they are)."""
    text = str(label)
    key = "".join(text.split()).lower().replace("_", "-")
    base, plus, rest = key.partition("+")
    if base in _DTYPE_ALIASES or base in FLOAT_DTYPES:
        base = _DTYPE_ALIASES.get(base, base)
    base = _LABEL_ALIASES.get(base, base)
    canonical = base + (plus + rest if plus else "")
    if canonical in PRECISION_LABELS:
        return canonical
    for known in extra:  # a label of the data folder, in the data's own spelling
        if known and "".join(str(known).split()).lower().replace("_", "-") == key:
            return str(known)
    raise ValueError(f"unknown precision {text!r}: expected one of {', '.join(PRECISION_LABELS)}")


RUN_COLUMNS = ("qid", "docid", "score")
TIE_STATS_COLUMNS = (
    "qid", "n_candidates", "n_distinct_scores", "n_tie_groups", "largest_group", "topk_tied_share",
    "tied_at_cutoff",
)


# --------------------------------------------------------------------------------------------- rounding
def canonical_dtype(name: str) -> str:
    """Canonical precision name ('fp32', 'fp16', 'bf16', 'fp8-e4m3', 'fp8-e5m2') of a name or alias."""
    key = str(name).strip().lower().replace("_", "-")
    key = _DTYPE_ALIASES.get(key, key)
    if key not in FLOAT_DTYPES:
        valid = ", ".join(FLOAT_DTYPES)
        raise ValueError(f"unknown dtype {name!r}; expected one of: {valid} (or aliases such as 'float16')")
    return key


def quantize(x: ArrayLike, dtype: str) -> np.ndarray:
    """Round ``x`` to ``dtype`` (round-to-nearest-even) and return the rounded values as float32.

    The input is first taken to FP32 (the value an FP32 pipeline holds), then cast with ml_dtypes, as
    ``tensor.to(dtype)`` does in PyTorch. NaN stays NaN; FP8-E4M3 has no infinity, so overflow gives NaN.
    """
    target = FLOAT_DTYPES[canonical_dtype(dtype)]
    with np.errstate(over="ignore", invalid="ignore"):
        as_fp32 = np.asarray(x).astype(np.float32)
        if target == np.float32:
            return as_fp32
        return as_fp32.astype(target).astype(np.float32)


def _sigmoid_fp32(logits_fp32: np.ndarray) -> np.ndarray:
    """Logistic function evaluated in FP32, in the overflow-free form exp(-|z|) / (1 + exp(-|z|))."""
    one = np.float32(1.0)
    decay = np.exp(-np.abs(logits_fp32))
    return np.where(logits_fp32 >= 0, one / (one + decay), decay / (one + decay)).astype(np.float32)


# ------------------------------------------------------------------------------------ scoring functions
def model_output_scores(scores: ArrayLike, dtype: str, hps: bool = False) -> np.ndarray:
    """The score is the model output: low precision = ``round(score)``.

    With ``hps`` the final score is kept in FP32, which from a score file alone equals the FP32 score —
    an upper bound on what HPS recovers, since upstream low-precision activations are not visible here.
    """
    return quantize(scores, "fp32" if hps else dtype)


def sigmoid_scores(logits: ArrayLike, dtype: str, hps: bool = False) -> np.ndarray:
    """Pointwise reranker probability (bge-reranker style).

    no HPS: ``round(sigmoid(round(z)))``; HPS: ``sigmoid(round(z))`` in FP32 (arXiv 2508.03306, §HPS).
    """
    probabilities = _sigmoid_fp32(quantize(logits, dtype))
    return probabilities if hps else quantize(probabilities, dtype)


def softmax_pair(yes_logits: ArrayLike, no_logits: ArrayLike, dtype: str, hps: bool = False) -> np.ndarray:
    """P(yes) from a softmax over the (yes, no) logit pair (Qwen3-Reranker style).

    softmax([yes, no])[yes] = sigmoid(yes - no), computed in FP32 from the rounded logits; without HPS the
    probability is rounded to ``dtype`` too.
    """
    yes = quantize(yes_logits, dtype)
    no = quantize(no_logits, dtype)
    if yes.shape != no.shape:
        raise ValueError(f"yes_logits {yes.shape} and no_logits {no.shape} must have the same shape")
    probabilities = _sigmoid_fp32(yes - no)
    return probabilities if hps else quantize(probabilities, dtype)


def _pairwise_dot(query: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """(q, d) · (n, d) -> (q, n), or per-query candidates (q, d) · (q, n, d) -> (q, n)."""
    if query.ndim != 2 or docs.ndim not in (2, 3) or query.shape[-1] != docs.shape[-1]:
        raise ValueError(
            f"expected query (q, d) and docs (n, d) or (q, n, d); got {query.shape} and {docs.shape}"
        )
    if docs.ndim == 2:
        return query @ docs.T
    if docs.shape[0] != query.shape[0]:
        raise ValueError(f"per-query docs {docs.shape} do not match {query.shape[0]} queries")
    return np.einsum("qd,qnd->qn", query, docs)


def dot_scores(query_emb: ArrayLike, doc_emb: ArrayLike, dtype: str, hps: bool = False) -> np.ndarray:
    """Bi-encoder dot products: embeddings rounded to ``dtype``, accumulated in FP32.

    no HPS: ``round(round(q) · round(d))``; HPS: ``round(q) · round(d)`` kept in FP32.
    Shapes: query (q, d) with docs (n, d) or per-query candidates (q, n, d) -> scores (q, n).
    """
    products = _pairwise_dot(quantize(query_emb, dtype), quantize(doc_emb, dtype)).astype(np.float32)
    return products if hps else quantize(products, dtype)


def quantize_int8(
    embeddings: ArrayLike, calibration: ArrayLike | None = None, ranges: ArrayLike | None = None
) -> np.ndarray:
    """int8 scalar quantization as sentence-transformers ``quantize_embeddings(..., precision="int8")``.

    Per dimension j: start_j = min, step_j = (max − min) / 255 over ``calibration`` (default: the embeddings
    themselves) or the given ``ranges`` (2, d); value = trunc((x − start_j) / step_j − 128) as int8.
    Deviations where sentence-transformers' cast is undefined: values outside the calibration range are
    clipped to [−128, 127] (instead of wrapping) and zero-range dimensions map to 0 (what their NaN casts
    to on x86).
    """
    values = np.asarray(embeddings)
    if values.ndim != 2 or values.dtype.kind != "f":
        raise ValueError(f"embeddings must be a 2-D float array, got {values.dtype} {values.shape}")
    if ranges is None:
        source = values if calibration is None else np.asarray(calibration)
        ranges = np.vstack((np.min(source, axis=0), np.max(source, axis=0)))
    ranges = np.asarray(ranges)
    if ranges.shape != (2, values.shape[1]):
        raise ValueError(f"ranges must have shape (2, {values.shape[1]}), got {ranges.shape}")
    starts = ranges[0, :]
    steps = (ranges[1, :] - ranges[0, :]) / 255
    with np.errstate(divide="ignore", invalid="ignore"):
        buckets = (values - starts) / steps - 128
    buckets = np.where(steps > 0, buckets, 0)
    return np.clip(buckets, -128, 127).astype(np.int8)


def int8_scores(query_int8: ArrayLike, doc_int8: ArrayLike) -> np.ndarray:
    """Integer dot products of int8 embeddings, (q, d) · (n, d) or (q, n, d) -> int64 (q, n).

    Computed through float64 BLAS, exact while d · 128² < 2⁵³.
    """
    products = _pairwise_dot(np.asarray(query_int8, np.float64), np.asarray(doc_int8, np.float64))
    return np.rint(products).astype(np.int64)


def quantize_binary(embeddings: ArrayLike) -> np.ndarray:
    """sentence-transformers ``ubinary``: bit = (x > 0), packed 8 per uint8 along the last axis.

    Rows are packed separately (sentence-transformers packs the flattened array, identical when d % 8 == 0).
    """
    return np.packbits(np.asarray(embeddings) > 0, axis=-1)


def hamming_similarity(q_bits: ArrayLike, d_bits: ArrayLike, n_dims: int | None = None) -> np.ndarray:
    """n_dims − Hamming distance between packed bit vectors, (q, B) · (n, B) or (q, n, B) -> int64 (q, n).

    Hamming(a, b) = |a| + |b| − 2 a·b on the unpacked bits (one BLAS product, exact below 2²⁴ bits).
    ``n_dims`` defaults to 8·B; padding bits are zero on both sides and never differ.
    """
    query = np.unpackbits(np.asarray(q_bits, np.uint8), axis=-1).astype(np.float32)
    docs = np.unpackbits(np.asarray(d_bits, np.uint8), axis=-1).astype(np.float32)
    total_bits = query.shape[-1]
    n_dims = total_bits if n_dims is None else int(n_dims)
    if not 0 < n_dims <= total_bits:
        raise ValueError(f"n_dims must be in 1..{total_bits}, got {n_dims}")
    shared = _pairwise_dot(query, docs)
    query_ones = query.sum(axis=-1)[:, None]
    doc_ones = docs.sum(axis=-1) if docs.ndim == 3 else docs.sum(axis=-1)[None, :]
    hamming = query_ones + doc_ones - 2 * shared
    return (n_dims - np.rint(hamming)).astype(np.int64)


# ------------------------------------------------------------------------------------ runs
def simulate_scores(
    scores: ArrayLike, to: str, scoring: Literal["score", "sigmoid"] = "score", hps: bool = False
) -> np.ndarray:
    """The float32 scores a pipeline at precision ``to`` would have produced from FP32 ``scores``.

    ``scoring='score'``: scores are model outputs (see :func:`model_output_scores`); ``'sigmoid'``: scores are
    logits and the output is a probability (see :func:`sigmoid_scores`).
    """
    if scoring == "score":
        return model_output_scores(scores, to, hps)
    if scoring == "sigmoid":
        return sigmoid_scores(scores, to, hps)
    raise ValueError(f"unknown scoring {scoring!r}; expected one of: {', '.join(SCORINGS)}")


def _as_run_table(run: pa.Table | pd.DataFrame | str | Path) -> pa.Table:
    """A run as a pyarrow table with qid, docid, score (paths are read with evalcore.formats)."""
    if isinstance(run, (str, Path)):
        from evalcore import formats

        return formats.read_run(run)
    if isinstance(run, pd.DataFrame):
        run = pa.Table.from_pandas(run, preserve_index=False)
    if not isinstance(run, pa.Table):
        raise TypeError(f"run must be a path, pyarrow Table or pandas DataFrame, got {type(run).__name__}")
    missing = [name for name in RUN_COLUMNS if name not in run.column_names]
    if missing:
        raise InputError(f"run is missing column(s) {', '.join(missing)}; expected qid, docid, score")
    return run


def simulate_run(
    run: pa.Table | pd.DataFrame, to: str, scoring: Literal["score", "sigmoid"] = "score", hps: bool = False
) -> pa.Table:
    """The run with its scores replaced by :func:`simulate_scores` (qid, docid, score float64)."""
    table = _as_run_table(run)
    scores = table.column("score").to_numpy()
    simulated = simulate_scores(np.asarray(scores, np.float64), to, scoring, hps).astype(np.float64)
    return pa.table({
        "qid": table.column("qid"),
        "docid": table.column("docid"),
        "score": pa.array(simulated, pa.float64()),
    })


# ------------------------------------------------------------------------------------ tie statistics
def _query_codes_and_scores(run: pa.Table | pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(per-row query code in order of first appearance, qid of each code, float64 scores)."""
    columns = run.column_names if isinstance(run, pa.Table) else list(run.columns)
    missing = [name for name in ("qid", "score") if name not in columns]
    if missing:
        raise InputError(f"run is missing column(s) {', '.join(missing)}")
    if isinstance(run, pa.Table):
        import pyarrow.compute as pc

        qid_column = run.column("qid")
        if qid_column.null_count:
            raise InputError("run has rows without a qid")
        encoded = pc.dictionary_encode(qid_column.combine_chunks())
        query_codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        query_names = np.asarray(encoded.dictionary.cast(pa.string()).to_pylist(), dtype=object)
        scores = run.column("score").to_numpy()
    else:
        query_codes, query_names = pd.factorize(run["qid"].to_numpy(), sort=False)
        if (query_codes < 0).any():
            raise InputError("run has rows without a qid")
        scores = run["score"].to_numpy()
    return query_codes, np.asarray(query_names, dtype=object), np.asarray(scores, np.float64)


def tie_stats(run: pa.Table | pd.DataFrame, k: int = 10) -> pd.DataFrame:
    """Per-query tie statistics (vectorised: one sort by (qid, score desc), then run lengths).

    Tie groups are maximal runs of equal scores (compared exactly as stored; NaNs form one group, ranked
    last). Columns: qid, n_candidates, n_distinct_scores (= number of groups), n_tie_groups (groups of
    size ≥ 2), largest_group, topk_tied_share (share of the min(k, n) top-ranked documents that sit in a
    group of size ≥ 2, the group may extend past k), tied_at_cutoff (ranks k and k+1 share a group).
    Queries appear in order of first appearance; ``attrs['k']`` holds k.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    query_codes, query_names, scores = _query_codes_and_scores(run)
    n_queries = len(query_names)
    order = np.lexsort((-scores, query_codes))  # lexsort puts NaN last
    sorted_queries = query_codes[order]
    sorted_scores = scores[order]
    n_rows = len(order)
    cut = min(int(k), n_rows + 1)  # a k past every list acts like n_rows + 1 (and stays a machine integer)

    starts_query = np.ones(n_rows, bool)
    starts_query[1:] = sorted_queries[1:] != sorted_queries[:-1]
    equal_to_previous = np.zeros(n_rows, bool)
    equal_to_previous[1:] = (sorted_scores[1:] == sorted_scores[:-1]) | (
        np.isnan(sorted_scores[1:]) & np.isnan(sorted_scores[:-1])
    )
    starts_group = starts_query | ~equal_to_previous
    row_group = np.cumsum(starts_group) - 1
    group_sizes = np.bincount(row_group)
    group_query = sorted_queries[starts_group]
    row_in_tie = group_sizes[row_group] >= 2

    query_first_row = np.flatnonzero(starts_query)
    n_candidates = np.diff(np.append(query_first_row, n_rows))
    rank0 = np.arange(n_rows) - np.repeat(query_first_row, n_candidates)

    n_distinct = np.bincount(group_query, minlength=n_queries)
    n_tie_groups = np.bincount(group_query, weights=group_sizes >= 2, minlength=n_queries)
    query_first_group = np.flatnonzero(np.diff(group_query, prepend=-1) != 0)
    largest_group = (
        np.maximum.reduceat(group_sizes, query_first_group) if n_queries else np.zeros(0, np.int64)
    )
    topk_tied = np.bincount(sorted_queries, weights=(rank0 < cut) & row_in_tie, minlength=n_queries)
    topk_tied_share = topk_tied / np.maximum(np.minimum(n_candidates, cut), 1)

    cutoff_rows = np.flatnonzero((rank0 == cut - 1)[:-1]) if n_rows else np.zeros(0, np.int64)
    straddles = row_group[cutoff_rows] == row_group[cutoff_rows + 1]  # same group => same query
    tied_at_cutoff = np.zeros(n_queries, bool)
    tied_at_cutoff[sorted_queries[cutoff_rows[straddles]]] = True

    per_query = pd.DataFrame({
        "qid": pd.Series(query_names, dtype=str),
        "n_candidates": n_candidates.astype(np.int64),
        "n_distinct_scores": n_distinct.astype(np.int64),
        "n_tie_groups": n_tie_groups.astype(np.int64),
        "largest_group": np.asarray(largest_group, np.int64),
        "topk_tied_share": topk_tied_share.astype(np.float64),
        "tied_at_cutoff": tied_at_cutoff,
    })
    per_query.attrs["k"] = int(k)
    return per_query


def summarize_ties(per_query: pd.DataFrame) -> dict[str, float | int]:
    """Run-level tie summary of :func:`tie_stats`: means over queries, the largest group overall, and the
    share of queries with any tie / with a tie straddling the cutoff."""
    n_queries = len(per_query)

    def mean_of(values: pd.Series) -> float:
        return float(values.mean()) if n_queries else float("nan")

    def mean(column: str) -> float:
        return mean_of(per_query[column])

    summary: dict[str, float | int] = {"n_queries": n_queries}
    if "k" in per_query.attrs:
        summary["k"] = int(per_query.attrs["k"])
    summary.update({
        "mean_candidates": mean("n_candidates"),
        "mean_distinct_scores": mean("n_distinct_scores"),
        "mean_tie_groups": mean("n_tie_groups"),
        "mean_largest_group": mean("largest_group"),
        "max_largest_group": int(per_query["largest_group"].max()) if n_queries else 0,
        "mean_topk_tied_share": mean("topk_tied_share"),
        "share_queries_with_ties": mean_of(per_query["n_tie_groups"] > 0),
        "share_tied_at_cutoff": mean("tied_at_cutoff"),
    })
    return summary


# ------------------------------------------------------------------------------------ what-if
def what_if(
    run: pa.Table | pd.DataFrame | str | Path,
    qrels: pa.Table | pd.DataFrame | str | Path | dict,
    to: str = "bf16",
    scoring: Literal["score", "sigmoid"] = "score",
    metrics: Sequence[str] | str = ("ndcg@10", "mrr@10"),
    tie_policy: str = "docid-desc",
) -> pd.DataFrame:
    """Tie-aware metric summaries of a run at FP32, at ``to`` without HPS and at ``to`` with HPS.

    Returns ``evalcore.summarize`` rows stacked with a leading ``condition`` column
    ('fp32', '<to>', '<to>+hps'); see Yang et al. (ACL 2026, arXiv 2508.03306) for HPS and TRM.
    """
    from evalcore import engine

    to = canonical_dtype(to)
    if to == "fp32":
        raise ValueError(f"to must be a low precision ({', '.join(LOW_PRECISIONS)}), got 'fp32'")
    metrics = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    if isinstance(qrels, (str, Path)):
        from evalcore import formats

        qrels = formats.read_qrels(qrels)
    table = _as_run_table(run)
    conditions = {
        "fp32": simulate_run(table, "fp32", scoring),
        to: simulate_run(table, to, scoring, hps=False),
        f"{to}+hps": simulate_run(table, to, scoring, hps=True),
    }
    summaries = []
    for condition, condition_run in conditions.items():
        summary = engine.summarize(
            engine.evaluate(condition_run, qrels, metrics=metrics, tie_policy=tie_policy)
        )
        summary.insert(0, "condition", condition)
        summaries.append(summary)
    return pd.concat(summaries, ignore_index=True)
