"""Tie-group kernels: oblivious / expected / min / max of every metric, vectorised over queries.

A *block* holds Q queries padded to a common width M: ``scores`` (Q, M) with ``-inf`` padding and
``gains`` (Q, M) with 0 padding (gain = qrels grade, 0 when unjudged). Only the top K positions
(K = the largest cutoff asked for) and the tie group straddling K can change a metric, so the top K are
found with ``np.argpartition`` instead of a full sort; the straddling group is summarised over the whole
row (its size, gain sum and relevant count).

Per query, candidates sorted by score descending form *tie groups* G_j (equal scores compared exactly):
group j holds n_j documents, r_j relevant (grade >= 1), gain sum g_j, and occupies ranks c_j+1 .. c_j+n_j.
Every ordering inside each group is equally likely (McSherry & Najork, ECIR 2008):

- E[DCG@k]  = sum_p [p <= k] (g_j(p) / n_j(p)) / log2(p + 1)            (each rank gets the mean gain)
- E[hits@k] = sum_p [p <= k] r_j(p) / n_j(p)                              (recall@k, P@k)
- E[RR@k]   = sum_i P_i / (c_j + i + 1) over the first group with r_j >= 1, c_j + i + 1 <= k,
              P_i = C(n_j - 1 - i, r_j - 1) / C(n_j, r_j)  (first relevant at offset i; P_0 = r/n,
              P_i / P_(i-1) = (n - i - r + 1) / (n - i))
- E[AP@k]   = (1/R) sum_p [p <= k] (r/n) (1 + R_before + i (r - 1)/(n - 1)) / p, where i is p's offset in
              its group and R_before the relevant documents of earlier groups
              (E[rel_p * sum_{q<=p} rel_q] split into same-position, earlier-group and same-group terms).

min / max place, inside every group, the documents by gain ascending / descending (the worst / best
ordering of every metric at once); *oblivious* orders ties by a policy key (see ``engine``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from evalcore.metrics import Metric

# tie_key(rows, cols) -> float64 or uint64 keys; within a tie group, a smaller key is ranked first.
TieKey = Callable[[np.ndarray, np.ndarray], np.ndarray]
# gain_of(rows, cols) -> float64 grades of those block cells (0 when unjudged)
GainLookup = Callable[[np.ndarray, np.ndarray], np.ndarray]

VALUE_KINDS = ("oblivious", "expected", "min", "max")


@dataclass
class QueryBlock:
    """Q queries padded to width M: scores (-inf pad), gains (0 pad), number of real candidates.

    ``gains`` may be None: :class:`TopK` then asks a :data:`GainLookup` for the cells that can change a
    metric (the top K and the tie group straddling K), typically a few percent of the block.
    """

    scores: np.ndarray  # (Q, M) float64
    gains: np.ndarray | None  # (Q, M) float64, or None (looked up lazily)
    lengths: np.ndarray  # (Q,) int64


@dataclass
class QueryTruth:
    """What the qrels say about each query of a block, independent of the run."""

    n_relevant: np.ndarray  # (Q,) relevant documents (grade >= 1) in the qrels
    ideal_dcg: dict[int | None, np.ndarray]  # cutoff -> (Q,) IDCG@cutoff from the qrels


def discounts(length: int) -> np.ndarray:
    """1 / log2(p + 1) for ranks p = 1 .. length."""
    return 1.0 / np.log2(np.arange(2, length + 2, dtype=np.float64))


def _take(matrix: np.ndarray, index: np.ndarray) -> np.ndarray:
    return np.take_along_axis(matrix, index, axis=1)


class TopK:
    """The top-K structure of a block, shared by every ordering (oblivious, min, max).

    Computed once: the K best candidates sorted by score, the tie groups among them, and for queries
    whose group at rank K extends past K ("straddling") the compacted list of that group's members.
    """

    def __init__(self, block: QueryBlock, k_max: int, gain_of: GainLookup | None = None) -> None:
        scores = block.scores
        n_queries, width = scores.shape
        self.block = block
        self.k = k = max(1, min(k_max, width))
        self.full = k == width
        self.truncated = block.lengths > k  # their last group in the top K may continue past K
        self.straddling_rows = np.zeros(0, dtype=np.int64)
        if self.full:
            self.sorted_index = np.argsort(-scores, axis=1, kind="stable")
            if block.gains is None:
                rows, cols = np.nonzero(np.arange(width)[None, :] < block.lengths[:, None])
                block.gains = self._looked_up(gain_of, rows, cols)
        else:
            candidates = np.argpartition(-scores, k - 1, axis=1)[:, :k]
            candidate_scores = _take(scores, candidates)
            threshold = candidate_scores.min(axis=1)
            in_boundary = scores == threshold[:, None]
            self.n_above = (scores > threshold[:, None]).sum(axis=1)
            self.boundary_size = in_boundary.sum(axis=1)
            straddling = (self.boundary_size > k - self.n_above) & np.isfinite(threshold)
            self.straddling_rows = rows = np.flatnonzero(straddling)
            if rows.size:
                sub_rows, cols = np.nonzero(in_boundary[rows])
                counts = self.boundary_size[rows]
                slot = np.arange(len(sub_rows)) - np.repeat(np.cumsum(counts) - counts, counts)
                self.boundary_cols = np.full((rows.size, int(counts.max())), -1, dtype=np.int64)
                self.boundary_cols[sub_rows, slot] = cols
            if block.gains is None:
                # only the top K and the members of a straddling group can change a metric: a
                # non-straddling group at rank K lies inside the top K, so its members are candidates
                valid = candidate_scores > -np.inf
                cand_rows = np.nonzero(valid)[0]
                need_rows = np.concatenate([cand_rows, rows[sub_rows]]) if rows.size else cand_rows
                need_cols = np.concatenate([candidates[valid], cols]) if rows.size else candidates[valid]
                block.gains = self._looked_up(gain_of, need_rows, need_cols)
            gains = block.gains
            self.boundary_gain = (gains * in_boundary).sum(axis=1)
            self.boundary_relevant = (in_boundary & (gains >= 1)).sum(axis=1)
            by_score = np.argsort(-candidate_scores, axis=1, kind="stable")
            self.sorted_index = _take(candidates, by_score)
        sorted_scores = _take(scores, self.sorted_index)
        positions = np.arange(k)
        starts_group = np.ones(sorted_scores.shape, dtype=bool)
        starts_group[:, 1:] = sorted_scores[:, 1:] != sorted_scores[:, :-1]
        self.group_start = np.maximum.accumulate(np.where(starts_group, positions, 0), axis=1)
        self.sorted_scores = sorted_scores
        equal_next = ~starts_group[:, 1:] & np.isfinite(sorted_scores[:, 1:])
        tied = np.zeros(sorted_scores.shape, dtype=bool)
        tied[:, 1:] |= equal_next
        tied[:, :-1] |= equal_next
        self.tied_rows = np.flatnonzero(tied.any(axis=1))
        self.tied_cells = np.nonzero(tied)

    def _looked_up(self, gain_of: GainLookup | None, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """A (Q, M) gain matrix holding ``gain_of`` at the given cells and 0 elsewhere."""
        if gain_of is None:
            raise ValueError("a QueryBlock without gains needs a gain look-up")
        gains = np.zeros(self.block.scores.shape, dtype=np.float64)
        gains[rows, cols] = gain_of(rows, cols)
        return gains

    def order(self, tie_key: TieKey) -> np.ndarray:
        """(Q, K) column indices of the first K candidates under (score desc, tie_key asc)."""
        index = self.sorted_index
        rows = self.straddling_rows
        if rows.size:
            index = index.copy()
            index[rows] = self._fill_boundary(tie_key)
        if self.tied_rows.size:
            if index is self.sorted_index:
                index = index.copy()
            cell_rows, cell_positions = self.tied_cells
            cell_keys = tie_key(cell_rows, index[cell_rows, cell_positions])
            keys = np.zeros(index.shape, dtype=cell_keys.dtype)
            keys[cell_rows, cell_positions] = cell_keys
            tied = self.tied_rows
            within = np.lexsort((keys[tied], self.group_start[tied]), axis=-1)
            index[tied] = _take(index[tied], within)
        return index

    def _fill_boundary(self, tie_key: TieKey) -> np.ndarray:
        """Straddling queries: give the boundary slots (ranks n_above+1 .. K) to the members of the
        group at rank K with the smallest tie keys."""
        k, rows, cols = self.k, self.straddling_rows, self.boundary_cols
        present = cols >= 0
        sub_rows, slots = np.nonzero(present)
        cell_keys = tie_key(rows[sub_rows], cols[sub_rows, slots])
        keys = np.zeros(cols.shape, dtype=cell_keys.dtype)
        keys[sub_rows, slots] = cell_keys
        n_above = self.n_above[rows][:, None]
        need = int((k - n_above).max())
        # members by (present first, key): keys may span their dtype's whole range, so empty slots are
        # ordered by the presence flag rather than by a sentinel key
        best = np.lexsort((keys, ~present), axis=-1)[:, :need]
        chosen = _take(cols, best)
        positions = np.arange(k)[None, :]
        pick = _take(chosen, np.clip(positions - n_above, 0, chosen.shape[1] - 1))
        return np.where(positions >= n_above, pick, self.sorted_index[rows])


def _ranked_values(
    gains_ranked: np.ndarray, valid: np.ndarray, metrics: list[Metric], truth: QueryTruth, k_top: int,
    lengths: np.ndarray,
) -> dict[Metric, np.ndarray]:
    """Metric values of one concrete ranking (gains in rank order, (Q, K))."""
    names = {metric.name for metric in metrics}  # only the running sums some metric needs
    gains_ranked = np.where(valid, gains_ranked, 0.0)
    relevant = gains_ranked >= 1
    positions = np.arange(1, k_top + 1, dtype=np.float64)
    dcg = np.cumsum(gains_ranked * discounts(k_top), axis=1) if "ndcg" in names else None
    hits = np.cumsum(relevant, axis=1) if names & {"recall", "p", "ap"} else None
    first = np.where(relevant.any(axis=1), relevant.argmax(axis=1), k_top) if "mrr" in names else None
    ap_sum = np.cumsum(np.where(relevant, hits / positions, 0.0), axis=1) if "ap" in names else None
    out: dict[Metric, np.ndarray] = {}
    for metric in metrics:
        cut = k_top if metric.k is None else min(metric.k, k_top)
        j = cut - 1
        out[metric] = _finish(metric, _column(dcg, j), _column(hits, j, np.float64),
                              None if first is None else np.where(first <= j, 1.0 / (first + 1.0), 0.0),
                              _column(ap_sum, j), truth, lengths)
    return out


def _column(matrix: np.ndarray | None, j: int, dtype=None) -> np.ndarray | None:
    """Column j of a running-sum matrix (None when no requested metric needs that sum)."""
    if matrix is None:
        return None
    return matrix[:, j] if dtype is None else matrix[:, j].astype(dtype)


def _finish(metric: Metric, dcg, hits, rr, ap_sum, truth: QueryTruth, lengths) -> np.ndarray:
    """Turn cut-off sums into the metric: normalise by IDCG, relevant count or k."""
    n_rel = truth.n_relevant.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric.name == "ndcg":
            ideal = truth.ideal_dcg[metric.k]
            return np.where(ideal > 0, dcg / ideal, 0.0)
        if metric.name == "mrr":
            return rr
        if metric.name == "recall":
            return np.where(n_rel > 0, hits / n_rel, 0.0)
        if metric.name == "p":
            denominator = lengths.astype(np.float64) if metric.k is None else float(metric.k)
            return np.where(denominator > 0, hits / denominator, 0.0)
        if metric.name == "ap":
            return np.where(n_rel > 0, ap_sum / n_rel, 0.0)
    raise ValueError(f"unknown metric {metric}")


def _expected_values(
    top: TopK, metrics: list[Metric], truth: QueryTruth,
) -> tuple[dict[Metric, np.ndarray], dict[Metric, np.ndarray]]:
    """Expected metric values over all orderings of ties, and whether a tie straddles each cutoff."""
    block, k = top.block, top.k
    n_queries = block.scores.shape[0]
    positions0 = np.arange(k)
    valid = positions0[None, :] < block.lengths[:, None]
    scores = top.sorted_scores
    gains = np.where(valid, _take(block.gains, top.sorted_index), 0.0)
    relevant = (gains >= 1).astype(np.float64)

    start = top.group_start
    ends_group = np.ones((n_queries, k), dtype=bool)
    ends_group[:, :-1] = scores[:, 1:] != scores[:, :-1]
    end = np.minimum.accumulate(np.where(ends_group, positions0, k - 1)[:, ::-1], axis=1)[:, ::-1]

    gain_cum = np.cumsum(gains, axis=1)
    rel_cum = np.cumsum(relevant, axis=1)

    def before(cum: np.ndarray, at: np.ndarray) -> np.ndarray:
        return np.where(at > 0, _take(cum, np.maximum(at - 1, 0)), 0.0)

    size = (end - start + 1).astype(np.float64)
    gain_sum = _take(gain_cum, end) - before(gain_cum, start)
    rel_sum = _take(rel_cum, end) - before(rel_cum, start)
    rel_before_group = before(rel_cum, start)

    if not top.full and top.truncated.any():
        in_last = top.truncated[:, None] & (start == start[:, -1:])
        size = np.where(in_last, top.boundary_size[:, None], size)
        gain_sum = np.where(in_last, top.boundary_gain[:, None], gain_sum)
        rel_sum = np.where(in_last, top.boundary_relevant[:, None], rel_sum)

    size = np.where(valid, size, 1.0)
    mean_gain = np.where(valid, gain_sum / size, 0.0)
    mean_rel = np.where(valid, rel_sum / size, 0.0)
    offset = positions0[None, :] - start
    ranks = positions0 + 1.0

    names = {metric.name for metric in metrics}  # only the expectations some metric needs
    dcg = np.cumsum(mean_gain * discounts(k), axis=1) if "ndcg" in names else None
    hits = np.cumsum(mean_rel, axis=1) if names & {"recall", "p"} else None

    rr = None
    if "mrr" in names:  # reciprocal rank: only the first group holding a relevant document matters
        has_rel_group = valid & (rel_sum >= 1)
        any_rel = has_rel_group.any(axis=1)
        first_pos = has_rel_group.argmax(axis=1)
        first_start = _take(start, first_pos[:, None])
        in_first = valid & any_rel[:, None] & (start == first_start)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(offset == 0, rel_sum / size, (size - offset - rel_sum + 1) / (size - offset))
        p_first = np.cumprod(np.where(in_first, step, 1.0), axis=1) * in_first
        rr = np.cumsum(p_first / ranks, axis=1)

    ap_sum = None
    if "ap" in names:
        with np.errstate(divide="ignore", invalid="ignore"):
            same_group = np.where(size > 1, (rel_sum - 1) / (size - 1), 0.0)
        ap_terms = mean_rel * (1.0 + rel_before_group + offset * same_group) / ranks
        ap_sum = np.cumsum(ap_terms, axis=1)

    expected: dict[Metric, np.ndarray] = {}
    straddles: dict[Metric, np.ndarray] = {}
    for metric in metrics:
        cut = k if metric.k is None else min(metric.k, k)
        j = cut - 1
        expected[metric] = _finish(metric, _column(dcg, j), _column(hits, j), _column(rr, j), _column(ap_sum, j),
                                   truth, block.lengths)
        if metric.k is None or metric.k > k:
            straddles[metric] = np.zeros(n_queries, dtype=bool)
        else:
            straddles[metric] = (block.lengths > metric.k) & (start[:, j] + size[:, j] > metric.k)
    return expected, straddles


def evaluate_block(
    block: QueryBlock, metrics: list[Metric], truth: QueryTruth, oblivious_key: TieKey,
    gain_of: GainLookup | None = None,
) -> dict[str, dict[Metric, np.ndarray]]:
    """All four values of every metric for one block: ``{kind: {metric: (Q,) array}}`` plus
    ``{"tied_at_cutoff": {metric: (Q,) bool}}``. ``gain_of`` supplies gains when ``block.gains`` is None."""
    k_max = max(block.scores.shape[1] if m.k is None else m.k for m in metrics)
    top = TopK(block, k_max, gain_of)
    gains = block.gains
    valid = np.arange(top.k)[None, :] < block.lengths[:, None]

    def gain_descending(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return -gains[rows, cols]

    def gain_ascending(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return gains[rows, cols]

    result: dict[str, dict[Metric, np.ndarray]] = {}
    for kind, key in (("oblivious", oblivious_key), ("min", gain_ascending), ("max", gain_descending)):
        index = top.order(key)
        result[kind] = _ranked_values(_take(gains, index), valid, metrics, truth, top.k, block.lengths)
    expected, result["tied_at_cutoff"] = _expected_values(top, metrics, truth)
    # min <= E <= max holds exactly; clip the last-bit noise of summing in a different order
    result["expected"] = {m: np.clip(expected[m], result["min"][m], result["max"][m]) for m in metrics}
    return result
