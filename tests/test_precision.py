"""Tests of evalcore.precision against references written here (bit tricks, brute force, plain loops)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from evalcore import precision
from evalcore.errors import InputError


# ----------------------------------------------------------------------------- independent references
def reference_bf16_bits(values_fp32: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bfloat16 on bit patterns: (u + 0x7FFF + lsb) & 0xFFFF0000."""
    bits = values_fp32.view(np.uint32).astype(np.uint64)
    lsb = (bits >> 16) & 1
    return ((bits + 0x7FFF + lsb) & 0xFFFF0000).astype(np.uint32)


def fp8_grid(exponent_bits: int, mantissa_bits: int, has_inf: bool) -> tuple[np.ndarray, np.ndarray]:
    """All finite non-negative values of an IEEE-like 8-bit float, decoded from their bit patterns by the
    textbook formula, with the codes (used for ties-to-even)."""
    bias = 2 ** (exponent_bits - 1) - 1
    values, codes = [], []
    for code in range(2 ** (exponent_bits + mantissa_bits)):
        exponent, mantissa = code >> mantissa_bits, code & (2**mantissa_bits - 1)
        top = 2**exponent_bits - 1
        if has_inf and exponent == top:
            continue  # inf / NaN (E5M2)
        if not has_inf and exponent == top and mantissa == 2**mantissa_bits - 1:
            continue  # the single NaN (E4M3FN)
        if exponent == 0:
            value = mantissa / 2**mantissa_bits * 2.0 ** (1 - bias)
        else:
            value = (1 + mantissa / 2**mantissa_bits) * 2.0 ** (exponent - bias)
        values.append(value)
        codes.append(code)
    return np.array(values), np.array(codes)


def reference_round_to_grid(x: np.ndarray, grid: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Nearest grid value to |x|, ties to the even code, sign restored (x inside the finite range)."""
    magnitude = np.abs(x.astype(np.float64))
    upper = np.clip(np.searchsorted(grid, magnitude), 1, len(grid) - 1)
    lower = upper - 1
    below, above = magnitude - grid[lower], grid[upper] - magnitude
    pick_upper = (above < below) | ((above == below) & (codes[upper] % 2 == 0))
    rounded = np.where(pick_upper, grid[upper], grid[lower])
    return np.copysign(rounded, x)


def sigmoid64(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z.astype(np.float64)))


# ----------------------------------------------------------------------------- quantize
def special_float32_inputs(rng: np.random.Generator) -> np.ndarray:
    random_bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    subnormal_bits = rng.integers(1, 2**23, size=20_000, dtype=np.uint64).astype(np.uint32)
    subnormal_bits[::2] |= np.uint32(0x80000000)
    # exact halfway cases between two bf16 values (low half == 0x8000), both parities of the kept lsb
    halfway_bits = (rng.integers(0, 2**16, size=20_000, dtype=np.uint64).astype(np.uint32) << 16) | 0x8000
    edge_bits = np.array(
        [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x807FFFFF,
         0x3F808000, 0x3F818000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF],
        dtype=np.uint32,
    )
    return np.concatenate([random_bits, subnormal_bits, halfway_bits, edge_bits]).view(np.float32)


def test_bf16_bit_exact_against_rounding_trick():
    values = special_float32_inputs(np.random.default_rng(3))
    rounded = precision.quantize(values, "bf16")
    assert rounded.dtype == np.float32
    nan = np.isnan(values)
    assert nan.sum() > 500 and np.isnan(rounded[nan]).all()  # NaN stays NaN (the trick would make some inf)
    np.testing.assert_array_equal(rounded[~nan].view(np.uint32), reference_bf16_bits(values[~nan]))


def test_bf16_keeps_signed_zero_and_infinities():
    values = np.array([0.0, -0.0, np.inf, -np.inf, 3.4e38], np.float32)
    rounded = precision.quantize(values, "bfloat16")
    assert np.signbit(rounded[1]) and not np.signbit(rounded[0])
    assert rounded[2] == np.inf and rounded[3] == -np.inf and rounded[4] == np.inf  # 3.4e38 rounds up


def test_fp16_matches_numpy_half():
    values = special_float32_inputs(np.random.default_rng(4))
    rounded = precision.quantize(values, "fp16")
    with np.errstate(over="ignore"):
        expected = values.astype(np.float16).astype(np.float32)
    nan = np.isnan(values)
    assert np.isnan(rounded[nan]).all()
    np.testing.assert_array_equal(rounded[~nan].view(np.uint32), expected[~nan].view(np.uint32))


@pytest.mark.parametrize(
    "dtype, exponent_bits, mantissa_bits, has_inf",
    [("fp8-e4m3", 4, 3, False), ("fp8-e5m2", 5, 2, True)],
)
def test_fp8_matches_formula_grid(dtype, exponent_bits, mantissa_bits, has_inf):
    grid, codes = fp8_grid(exponent_bits, mantissa_bits, has_inf)
    rng = np.random.default_rng(5)
    largest = grid[-1]
    values = np.concatenate([
        rng.uniform(-largest, largest, 50_000),
        rng.normal(0, 1, 50_000) * rng.choice([1e-3, 1e-2, 1, 10], 50_000),
        np.concatenate([grid, -grid]),
        (grid[1:] + grid[:-1]) / 2,  # every halfway point
    ]).astype(np.float32)
    values = values[np.abs(values) <= largest]
    expected = reference_round_to_grid(values, grid, codes)
    np.testing.assert_array_equal(precision.quantize(values, dtype), expected)


def test_fp8_overflow_follows_torch_conventions():
    assert np.isnan(precision.quantize(np.float32(1e4), "fp8-e4m3"))  # E4M3FN has no infinity
    assert precision.quantize(np.float32(1e6), "fp8-e5m2") == np.inf


def test_fp32_is_float32_cast():
    values = np.random.default_rng(6).normal(size=1000)
    np.testing.assert_array_equal(precision.quantize(values, "float32"), values.astype(np.float32))


@pytest.mark.parametrize("alias, canonical", [
    ("float16", "fp16"), ("HALF", "fp16"), ("bfloat16", "bf16"), ("float8_e4m3fn", "fp8-e4m3"),
    ("fp8_e5m2", "fp8-e5m2"), ("float32", "fp32"),
])
def test_aliases(alias, canonical):
    assert precision.canonical_dtype(alias) == canonical
    x = np.linspace(-3, 3, 101)
    np.testing.assert_array_equal(precision.quantize(x, alias), precision.quantize(x, canonical))


def test_unknown_dtype_lists_valid_names():
    with pytest.raises(ValueError) as info:
        precision.quantize([1.0], "int4")
    for name in ("fp32", "fp16", "bf16", "fp8-e4m3", "fp8-e5m2"):
        assert name in str(info.value)


# ----------------------------------------------------------------------------- known facts
def test_bf16_has_128_values_in_half_open_unit_interval():
    first_bits, end_bits = np.float32(0.5).view(np.uint32), np.float32(1.0).view(np.uint32)
    every_float32 = np.arange(first_bits, end_bits, dtype=np.uint32)
    rounded = precision.quantize(every_float32.view(np.float32), "bf16")
    inside = np.unique(rounded[(rounded >= 0.5) & (rounded < 1.0)])
    assert len(inside) == 128
    np.testing.assert_array_equal(inside, 0.5 + np.arange(128) / 256)  # spacing 2^-8


def test_bf16_sigmoid_saturates_at_about_6_24():
    def saturates(z: float) -> bool:
        return bool(precision.sigmoid_scores(np.float32(z), "bf16") == 1.0)

    low, high = np.float32(0.0), np.float32(20.0)
    assert not saturates(low) and saturates(high)
    while np.nextafter(low, high) < high:  # bisection over float32 values
        middle = np.float32((low + high) / 2)
        if middle in (low, high):
            middle = np.nextafter(low, high)
        low, high = (low, middle) if saturates(middle) else (middle, high)
    threshold = float(high)
    print(f"\nbf16 sigmoid reaches 1.0 from logit {threshold!r} (ln 511 = {math.log(511):.6f})")
    assert 6.2 <= threshold <= 6.3
    # sigmoid(z) >= 1 - 2^-9 (half a bf16 step below 1) <=> z >= ln(511); z itself moves by one bf16 step
    assert abs(threshold - math.log(511)) <= 2.0**-5
    below = np.linspace(-30, threshold, 20_001, dtype=np.float32)[:-1]
    above = np.linspace(threshold, 60, 20_001, dtype=np.float32)
    assert (precision.sigmoid_scores(below, "bf16") < 1.0).all()
    assert (precision.sigmoid_scores(above, "bf16") == 1.0).all()
    assert (precision.sigmoid_scores(above, "bf16", hps=True) < 1.0).any()  # HPS keeps them apart


def test_sigmoid_hps_is_fp32_sigmoid_of_rounded_logits():
    logits = np.random.default_rng(7).normal(0, 5, 10_000)
    rounded_logits = reference_bf16_bits(logits.astype(np.float32)).view(np.float32)
    hps = precision.sigmoid_scores(logits, "bf16", hps=True)
    assert hps.dtype == np.float32
    np.testing.assert_allclose(hps, sigmoid64(rounded_logits), rtol=1e-6, atol=1e-7)
    no_hps = precision.sigmoid_scores(logits, "bf16")
    np.testing.assert_array_equal(no_hps.view(np.uint32), reference_bf16_bits(hps))


def test_softmax_pair_matches_two_way_softmax():
    rng = np.random.default_rng(8)
    yes, no = rng.normal(0, 4, 5000), rng.normal(0, 4, 5000)
    round16 = lambda x: x.astype(np.float32).astype(np.float16).astype(np.float64)  # noqa: E731
    both = np.stack([round16(yes), round16(no)])
    expected = np.exp(both[0] - both.max(0)) / np.exp(both - both.max(0)).sum(0)
    hps = precision.softmax_pair(yes, no, "fp16", hps=True)
    np.testing.assert_allclose(hps, expected, rtol=2e-6, atol=1e-7)
    no_hps = precision.softmax_pair(yes, no, "fp16")
    np.testing.assert_array_equal(no_hps, hps.astype(np.float16).astype(np.float32))


def test_dot_scores_round_embeddings_and_product():
    rng = np.random.default_rng(9)
    queries, docs = rng.normal(size=(4, 32)), rng.normal(size=(50, 32))
    rounded_q = reference_bf16_bits(queries.astype(np.float32)).view(np.float32).astype(np.float64)
    rounded_d = reference_bf16_bits(docs.astype(np.float32)).view(np.float32).astype(np.float64)
    exact = rounded_q @ rounded_d.T
    hps = precision.dot_scores(queries, docs, "bf16", hps=True)
    np.testing.assert_allclose(hps, exact, rtol=1e-5, atol=1e-5)  # FP32 accumulation of rounded inputs
    no_hps = precision.dot_scores(queries, docs, "bf16")
    np.testing.assert_array_equal(no_hps.view(np.uint32), reference_bf16_bits(hps))
    per_query = precision.dot_scores(queries, np.broadcast_to(docs, (4, 50, 32)), "bf16", hps=True)
    np.testing.assert_allclose(per_query, hps, rtol=1e-5, atol=1e-6)  # einsum may sum in another order


def distinct_per_row(scores: np.ndarray) -> np.ndarray:
    return np.array([len(set(row.tolist())) for row in scores])


@settings(max_examples=60, deadline=None)
@given(
    logits=hnp.arrays(np.float64, (3, 40), elements=st.floats(-30, 30, allow_nan=False)),
    dtype=st.sampled_from(precision.LOW_PRECISIONS),
    scoring=st.sampled_from(precision.SCORINGS),
)
def test_hps_never_has_fewer_distinct_scores(logits, dtype, scoring):
    with_hps = precision.simulate_scores(logits, dtype, scoring, hps=True)
    without = precision.simulate_scores(logits, dtype, scoring, hps=False)
    assert (distinct_per_row(with_hps) >= distinct_per_row(without)).all()


@settings(max_examples=30, deadline=None)
@given(
    yes=hnp.arrays(np.float64, (2, 30), elements=st.floats(-20, 20)),
    no=hnp.arrays(np.float64, (2, 30), elements=st.floats(-20, 20)),
    dtype=st.sampled_from(precision.LOW_PRECISIONS),
)
def test_hps_softmax_pair_never_has_fewer_distinct_scores(yes, no, dtype):
    with_hps = precision.softmax_pair(yes, no, dtype, hps=True)
    without = precision.softmax_pair(yes, no, dtype, hps=False)
    assert (distinct_per_row(with_hps) >= distinct_per_row(without)).all()


# ----------------------------------------------------------------------------- int8 / binary
def st_int8_loop(embeddings: np.ndarray, calibration: np.ndarray) -> np.ndarray:
    """sentence-transformers' int8 recipe written element by element (same numpy scalar dtypes)."""
    n_rows, n_dims = embeddings.shape
    out = np.zeros((n_rows, n_dims), np.int8)
    for j in range(n_dims):
        start = np.min(calibration[:, j])
        step = (np.max(calibration[:, j]) - start) / 255
        for i in range(n_rows):
            value = (embeddings[i, j] - start) / step - 128
            out[i, j] = max(-128, min(127, int(value)))  # int() truncates toward zero like astype
    return out


@pytest.mark.parametrize("float_type", [np.float32, np.float64])
def test_int8_matches_sentence_transformers_recipe(float_type):
    rng = np.random.default_rng(10)
    embeddings = rng.normal(size=(9, 6)).astype(float_type)
    np.testing.assert_array_equal(precision.quantize_int8(embeddings), st_int8_loop(embeddings, embeddings))
    calibration = rng.normal(size=(30, 6)).astype(float_type)
    np.testing.assert_array_equal(
        precision.quantize_int8(embeddings, calibration), st_int8_loop(embeddings, calibration)
    )
    ranges = np.vstack([calibration.min(0), calibration.max(0)])
    np.testing.assert_array_equal(
        precision.quantize_int8(embeddings, ranges=ranges), st_int8_loop(embeddings, calibration)
    )


def test_int8_extremes_and_scores():
    embeddings = np.array([[0.0, -1.0], [1.0, 1.0], [0.5, 0.0]], np.float32)
    quantized = precision.quantize_int8(embeddings)
    assert quantized.dtype == np.int8
    # the minimum lands in bucket -128; the maximum in 127, or 126 when (max - min) / step rounds below 255
    assert quantized[0].tolist() == [-128, -128] and set(quantized[1].tolist()) <= {126, 127}
    np.testing.assert_array_equal(quantized, st_int8_loop(embeddings, embeddings))
    rng = np.random.default_rng(11)
    q = rng.integers(-128, 128, size=(3, 7)).astype(np.int8)
    d = rng.integers(-128, 128, size=(5, 7)).astype(np.int8)
    expected = [[sum(int(a) * int(b) for a, b in zip(q[i], d[j])) for j in range(5)] for i in range(3)]
    assert precision.int8_scores(q, d).tolist() == expected


def test_binary_packing_and_hamming_similarity_brute_force():
    rng = np.random.default_rng(12)
    queries, docs = rng.normal(size=(3, 24)), rng.normal(size=(6, 24))
    q_bits, d_bits = precision.quantize_binary(queries), precision.quantize_binary(docs)
    for row, packed in zip(queries, q_bits):
        expected_bytes = [
            sum((1 << (7 - position)) for position, x in enumerate(row[start:start + 8]) if x > 0)
            for start in range(0, 24, 8)
        ]
        assert packed.tolist() == expected_bytes
    expected = [
        [24 - sum(bin(int(a) ^ int(b)).count("1") for a, b in zip(qb, db)) for db in d_bits] for qb in q_bits
    ]
    assert precision.hamming_similarity(q_bits, d_bits).tolist() == expected
    per_query = precision.hamming_similarity(q_bits, np.broadcast_to(d_bits, (3, 6, 3)))
    assert per_query.tolist() == expected
    assert (precision.hamming_similarity(q_bits, d_bits, n_dims=20) == np.array(expected) - 4).all()


def test_binary_scores_create_massive_ties():
    rng = np.random.default_rng(13)
    q_bits = precision.quantize_binary(rng.normal(size=(20, 64)))
    d_bits = precision.quantize_binary(rng.normal(size=(500, 64)))
    scores = precision.hamming_similarity(q_bits, d_bits)
    assert distinct_per_row(scores).max() <= 65  # at most n_dims + 1 distinct values for 500 documents


# ----------------------------------------------------------------------------- runs
def random_logit_run(n_queries: int, n_docs: int, seed: int) -> pa.Table:
    logits = np.random.default_rng(seed).normal(0, 3, (n_queries, n_docs))
    return pa.table({
        "qid": np.repeat([f"q{i}" for i in range(n_queries)], n_docs),
        "docid": np.tile([f"d{j}" for j in range(n_docs)], n_queries),
        "score": logits.ravel(),
    })


def test_simulate_run_keeps_ids_and_holds_float32_values():
    run = random_logit_run(5, 20, 14)
    out = precision.simulate_run(run, "bf16", "sigmoid")
    assert out.column_names == ["qid", "docid", "score"] and out.schema.field("score").type == pa.float64()
    assert out.column("qid").equals(run.column("qid")) and out.column("docid").equals(run.column("docid"))
    scores = out.column("score").to_numpy()
    expected_bits = reference_bf16_bits(sigmoid64(
        reference_bf16_bits(run.column("score").to_numpy().astype(np.float32)).view(np.float32)
    ).astype(np.float32))
    np.testing.assert_array_equal(scores.astype(np.float32).view(np.uint32), expected_bits)
    assert (scores.astype(np.float32).astype(np.float64) == scores).all()
    with pytest.raises(InputError):
        precision.simulate_run(run.drop(["score"]), "bf16")
    with pytest.raises(ValueError):
        precision.simulate_scores([1.0], "bf16", scoring="tanh")


def test_tie_share_at_cutoff_fp32_lt_hps_lt_bf16():
    run = random_logit_run(1000, 100, 15)
    shares = {}
    conditions = {"fp32": ("fp32", False), "bf16+hps": ("bf16", True), "bf16": ("bf16", False)}
    for condition, (to, hps) in conditions.items():
        stats = precision.tie_stats(precision.simulate_run(run, to, "sigmoid", hps), k=10)
        shares[condition] = float(stats["tied_at_cutoff"].mean())
        shares[condition + " topk_tied_share"] = float(stats["topk_tied_share"].mean())
    print("\ntie share at cutoff 10, 1000 queries x 100 N(0,3) logits, sigmoid scoring:", shares)
    assert shares["fp32"] < shares["bf16+hps"] < shares["bf16"]


# ----------------------------------------------------------------------------- tie statistics
def brute_force_tie_stats(rows: list[tuple[str, float]], k: int) -> pd.DataFrame:
    """Per query, in order of first appearance, with plain Python sorting and groupby."""
    by_query: dict[str, list[float]] = {}
    for qid, score in rows:
        by_query.setdefault(qid, []).append(score)
    records = []
    for qid, scores in by_query.items():
        ranked = sorted(scores, reverse=True)
        sizes = [len(list(group)) for _, group in itertools.groupby(ranked)]
        size_at_rank = [size for size in sizes for _ in range(size)]
        top = min(k, len(ranked))
        records.append({
            "qid": qid,
            "n_candidates": len(ranked),
            "n_distinct_scores": len(sizes),
            "n_tie_groups": sum(size >= 2 for size in sizes),
            "largest_group": max(sizes),
            "topk_tied_share": sum(size_at_rank[r] >= 2 for r in range(top)) / top,
            "tied_at_cutoff": len(ranked) > k and ranked[k - 1] == ranked[k],
        })
    return pd.DataFrame.from_records(records)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("k", [1, 3, 5, 10])
def test_tie_stats_matches_brute_force(seed, k):
    rng = np.random.default_rng(seed)
    n_per_query = rng.integers(1, 16, size=25)
    qids = np.repeat([f"q{i}" for i in range(25)], n_per_query)
    scores = rng.integers(0, 4, size=len(qids)) / rng.choice([1.0, 3.0, 7.0])  # heavy ties
    shuffle = rng.permutation(len(qids))  # queries interleaved
    qids, scores = qids[shuffle], scores[shuffle]
    frame = pd.DataFrame({"qid": qids, "docid": [f"d{i}" for i in range(len(qids))], "score": scores})
    expected = brute_force_tie_stats(list(zip(qids.tolist(), scores.tolist())), k)
    for run in (frame, pa.Table.from_pandas(frame, preserve_index=False)):
        actual = precision.tie_stats(run, k=k)
        assert list(actual.columns) == list(precision.TIE_STATS_COLUMNS)
        pd.testing.assert_frame_equal(
            actual.astype({"qid": object}), expected.astype({"qid": object}), check_dtype=False
        )


def test_tie_stats_edge_cases():
    empty = precision.tie_stats(pd.DataFrame({"qid": [], "score": []}), k=10)
    assert len(empty) == 0 and list(empty.columns) == list(precision.TIE_STATS_COLUMNS)
    assert precision.summarize_ties(empty)["n_queries"] == 0
    empty_table = pa.table({"qid": pa.array([], pa.string()), "score": pa.array([], pa.float64())})
    assert len(precision.tie_stats(empty_table)) == 0
    with pytest.raises(InputError):
        precision.tie_stats(pa.table({"qid": ["a", None], "score": [1.0, 2.0]}))
    nan_run = pd.DataFrame({"qid": ["a"] * 4, "score": [np.nan, 1.0, np.nan, 2.0]})
    stats = precision.tie_stats(nan_run, k=2).iloc[0]
    assert stats["n_distinct_scores"] == 3 and stats["largest_group"] == 2  # NaNs tie with each other
    assert not stats["tied_at_cutoff"] and stats["topk_tied_share"] == 0.0
    with pytest.raises(ValueError):
        precision.tie_stats(nan_run, k=0)
    with pytest.raises(InputError):
        precision.tie_stats(pd.DataFrame({"qid": ["a"]}), k=1)


def test_summarize_ties_against_hand_means():
    frame = pd.DataFrame({
        "qid": list("aaaabbbccd"),
        "score": [3, 3, 2, 1, 5, 5, 5, 1, 2, 7],
    })
    per_query = precision.tie_stats(frame, k=2)
    summary = precision.summarize_ties(per_query)
    # a: groups 2,1,1 -> top2 tied both, cutoff: rank2=3, rank3=2 no; b: group 3 -> tied, cutoff yes;
    # c: 1,1 -> none; d: single
    assert summary["k"] == 2 and summary["n_queries"] == 4
    assert summary["mean_topk_tied_share"] == pytest.approx((1 + 1 + 0 + 0) / 4)
    assert summary["share_tied_at_cutoff"] == pytest.approx(1 / 4)
    assert summary["max_largest_group"] == 3
    assert summary["mean_distinct_scores"] == pytest.approx((3 + 1 + 2 + 1) / 4)
    assert summary["share_queries_with_ties"] == pytest.approx(2 / 4)


# ----------------------------------------------------------------------------- what-if (needs the engine)
def test_what_if_stacks_three_conditions():
    from evalcore import engine
    run = random_logit_run(40, 30, 16)
    rng = np.random.default_rng(17)
    qrels = pa.table({
        "qid": np.repeat([f"q{i}" for i in range(40)], 3),
        "docid": [f"d{j}" for j in rng.integers(0, 30, 120)],
        "relevance": rng.integers(1, 3, 120),
    })
    qrels = pa.Table.from_pandas(qrels.to_pandas().drop_duplicates(["qid", "docid"]), preserve_index=False)
    result = precision.what_if(run, qrels, to="bf16", scoring="sigmoid", metrics=["ndcg@10", "mrr@10"])
    assert result.columns[0] == "condition"
    assert result["condition"].tolist() == ["fp32"] * 2 + ["bf16"] * 2 + ["bf16+hps"] * 2
    for condition, to, hps in [("fp32", "fp32", False), ("bf16", "bf16", False), ("bf16+hps", "bf16", True)]:
        direct = engine.summarize(engine.evaluate(
            precision.simulate_run(run, to, "sigmoid", hps), qrels, metrics=("ndcg@10", "mrr@10")
        ))
        mine = result[result["condition"] == condition].drop(columns="condition").reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, direct.reset_index(drop=True))
    ties_share = result.set_index(["condition", "metric"])["tied_share"]
    assert ties_share["bf16", "ndcg@10"] >= ties_share["bf16+hps", "ndcg@10"] >= ties_share["fp32", "ndcg@10"]
    with pytest.raises(ValueError):
        precision.what_if(run, qrels, to="fp32")
