"""Closed bounds at their edge: rank intervals from score intervals that touch or have zero width, and the
store's size filter at a model's exact size. A strict comparison in place of an inclusive one passed every
other test of the suite; these fail on it.
"""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from evalcore import aggregate
from evalcore.cli import main
from evalcore.store import Store


# -- rank intervals ----------------------------------------------------------------------------------------
def test_rank_intervals_of_touching_and_zero_width_intervals_worked_by_hand():
    #            E           B           A (zero width)  C           D
    lo = np.array([0.8, 0.5, 0.5, 0.2, 0.1])
    hi = np.array([0.9, 0.7, 0.5, 0.5, 0.2])
    rank_lo, rank_hi = aggregate.rank_intervals(lo, hi)
    # E: nobody can be above it and nobody reaches 0.8. B, A, C: only E is surely above; the three share the
    # point 0.5, so each can fall behind the other two, and C also behind D (D's hi 0.2 = C's lo: a tie counts
    # against the worst rank). D: E, B and A are surely above; C is not (C's lo 0.2 = D's hi).
    assert rank_lo.tolist() == [1, 2, 2, 2, 4]
    assert rank_hi.tolist() == [1, 4, 4, 5, 5]


def test_a_system_with_a_zero_width_interval_is_not_ranked_below_its_best_rank():
    rank_lo, rank_hi = aggregate.rank_intervals(np.array([0.9, 0.6, 0.5]), np.array([0.95, 0.7, 0.5]))
    assert rank_lo.tolist() == [1, 2, 3] and rank_hi.tolist() == [1, 2, 3]


def _reference_rank_interval(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Brute force: every system takes an end of its interval (the extremes of any ranking are reached at
    the ends); best rank = scipy's 'min' rank at the best placement, worst = its 'max' rank at the worst."""
    n = lo.size
    best = np.full(n, np.inf)
    worst = np.full(n, -np.inf)
    for ends in itertools.product((0, 1), repeat=n):
        points = np.where(np.array(ends) == 1, hi, lo)
        best = np.minimum(best, stats.rankdata(-points, method="min"))
        worst = np.maximum(worst, stats.rankdata(-points, method="max"))
    return best, worst


grid = st.integers(0, 6).map(lambda x: x / 6)  # few values: touching and zero-width intervals are common


@given(st.lists(st.tuples(grid, grid), min_size=1, max_size=7))
def test_rank_intervals_match_the_enumeration_of_interval_ends(bounds):
    lo = np.array([min(a, b) for a, b in bounds])
    hi = np.array([max(a, b) for a, b in bounds])
    rank_lo, rank_hi = aggregate.rank_intervals(lo, hi)
    best, worst = _reference_rank_interval(lo, hi)
    np.testing.assert_array_equal(rank_lo, best)
    np.testing.assert_array_equal(rank_hi, worst)
    assert (rank_lo <= rank_hi).all()


def test_overlapping_pairs_count_touching_intervals_as_overlapping():
    pairs = aggregate.overlapping_pairs(["a", "b", "c", "d"], np.array([0.2, 0.5, 0.5, 0.8]),
                                       np.array([0.5, 0.5, 0.7, 0.9]))
    assert {frozenset(p) for p in zip(pairs.system_1, pairs.system_2)} == {
        frozenset("ab"), frozenset("ac"), frozenset("bc")}


# -- size filter -------------------------------------------------------------------------------------------
SIZES = {"tiny": 22_000_000, "base": 110_000_000, "large": 335_000_000, "huge": 7_000_000_000}


def _imported_store(root, models: dict[str, dict]) -> Store:
    """An MTEB results tree (model name -> n_parameters, use_instructions, tasks), imported as a user would."""
    for name, spec in models.items():
        folder = root / "results" / f"org__{name}" / "rev1"
        folder.mkdir(parents=True)
        meta = {"name": f"org/{name}", "revision": "rev1", "open_weights": True,
                "use_instructions": spec.get("instructions", False)}
        if spec.get("size") is not None:
            meta["n_parameters"] = spec["size"]
        (folder / "model_meta.json").write_text(json.dumps(meta))
        for task in spec.get("tasks", ["PIQA"]):
            score = {"hf_subset": "default", "languages": ["eng-Latn"], "ndcg_at_10": 0.3, "main_score": 0.3}
            (folder / f"{task}.json").write_text(json.dumps(
                {"task_name": task, "mteb_version": "2.1.0", "scores": {"test": [score]}}))
    out = root / "data"
    assert main(["import-mteb", str(root), "--out", str(out)]) == 0
    return Store(out)


@pytest.fixture(scope="module")
def sized_store(tmp_path_factory) -> Store:
    """Four models of known size and one without a size."""
    return _imported_store(tmp_path_factory.mktemp("sized"),
                           {**{name: {"size": size} for name, size in SIZES.items()}, "unknown": {}})


def _names(frame) -> set[str]:
    return {s.split("/", 1)[1] for s in frame["system"]}


@pytest.mark.parametrize("bounds, expected", [
    ({"min_parameters": 335e6}, {"large", "huge"}),
    ({"max_parameters": 335e6}, {"tiny", "base", "large"}),
    ({"min_parameters": 335e6, "max_parameters": 335e6}, {"large"}),
    ({"min_parameters": 22e6, "max_parameters": 110e6}, {"tiny", "base"}),
    ({"min_parameters": 110e6 + 1, "max_parameters": 7e9 - 1}, {"large"}),
    ({"min_parameters": 0}, {"tiny", "base", "large", "huge"}),  # a bound excludes the unknown size
    ({}, {"tiny", "base", "large", "huge", "unknown"}),
])
def test_size_bounds_include_a_model_of_exactly_that_size(sized_store, bounds, expected):
    assert _names(sized_store.systems(**bounds)) == expected


# -- the other system filters --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory) -> Store:
    """Instruction-tuned or not, with RAR-b results, R2MED results or both."""
    return _imported_store(tmp_path_factory.mktemp("mixed"), {
        "plain-rarb": {"tasks": ["PIQA"]},
        "tuned-rarb": {"instructions": True, "tasks": ["PIQA", "SIQA"]},
        "tuned-r2med": {"instructions": True, "tasks": ["R2MEDBiologyRetrieval"]},
        "plain-both": {"tasks": ["PIQA", "R2MEDBiologyRetrieval"]},
    })


@pytest.mark.parametrize("filters, expected", [
    ({"uses_instructions": True}, {"tuned-rarb", "tuned-r2med"}),
    ({"uses_instructions": False}, {"plain-rarb", "plain-both"}),
    ({"benchmark": "rar-b"}, {"plain-rarb", "tuned-rarb", "plain-both"}),
    ({"benchmark": "r2med"}, {"tuned-r2med", "plain-both"}),
    ({"benchmark": "r2med", "uses_instructions": False}, {"plain-both"}),
    ({"search": "TUNED", "benchmark": "rar-b"}, {"tuned-rarb"}),
])
def test_instruction_and_benchmark_filters(mixed_store, filters, expected):
    assert _names(mixed_store.systems(**filters)) == expected


def test_a_system_listed_without_results_stays_in_the_unfiltered_list_only(tmp_path):
    """A systems file may name a model that has no result yet (e.g. metadata written ahead of its runs): the
    unfiltered list still offers it, a benchmark's list does not (it has nothing on that benchmark)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _imported_store(tmp_path, {"scored": {"tasks": ["PIQA"]}})
    listed = pq.read_table(tmp_path / "data" / "mteb_systems.parquet")
    rows = listed.to_pylist()
    rows[0]["system"] = "org/listed-only"
    pq.write_table(pa.Table.from_pylist(rows, schema=listed.schema), tmp_path / "data" / "extra_systems.parquet")
    store = Store(tmp_path / "data")
    assert _names(store.systems()) == {"scored", "listed-only"}
    assert _names(store.systems(benchmark="rar-b")) == {"scored"}
