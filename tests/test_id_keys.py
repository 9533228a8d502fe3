"""Integer keys for string ids: equal ids give equal keys, slicing is handled, and the engine stays
exact when keys collide (forced here with a deliberately weak key function)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import evalcore
from evalcore import id_keys

pytrec_eval = pytest.importorskip("pytrec_eval")


@given(st.lists(st.text(min_size=0, max_size=40), min_size=1, max_size=60))
def test_equal_strings_equal_keys_and_slices_agree(values):
    array = pa.array(values + values)
    keys = id_keys.string_keys(array)
    assert np.array_equal(keys[: len(values)], keys[len(values):])
    sliced = id_keys.string_keys(array.slice(1))
    assert np.array_equal(sliced, keys[1:])
    large = id_keys.string_keys(array.cast(pa.large_string()))
    assert np.array_equal(large, keys)


def test_distinct_short_ids_get_distinct_keys():
    values = [f"d{i}" for i in range(200_000)] + ["", "a", "ab", "doc-1", "doc-10", "doc-1\x00"]
    keys = id_keys.string_keys(pa.array(values))
    assert len(np.unique(keys)) == len(values)


def test_engine_is_exact_under_forced_key_collisions(monkeypatch):
    rng = np.random.default_rng(0)
    run = {f"q{q}": {f"doc{int(d)}": float(rng.integers(0, 4)) for d in rng.choice(500, 40, replace=False)}
           for q in range(30)}
    qrels = {q: {f"doc{int(d)}": int(rng.integers(0, 3)) for d in rng.choice(500, 25, replace=False)} for q in run}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.5"}).evaluate(run)
    real_combine = id_keys.combine
    monkeypatch.setattr(id_keys, "combine", lambda q, k: real_combine(q, k) % np.uint64(3))
    ours = evalcore.evaluate(run, qrels, ["ndcg@10", "p@5"]).set_index(["qid", "metric"])
    for qid, values in reference.items():
        assert ours.loc[(qid, "ndcg@10"), "oblivious"] == pytest.approx(values["ndcg_cut_10"], abs=1e-12)
        assert ours.loc[(qid, "p@5"), "oblivious"] == pytest.approx(values["P_5"], abs=1e-12)
