"""evalcore.store over hand-made parquet files in tmp_path: every number is checked against pandas /
scipy computed from the raw rows written by the test (never against the store's own output)."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from evalcore.store import Condition, Store

TASKS = ["T1", "T2", "T3"]
SYSTEMS = ["alpha", "beta", "gamma"]
PRECISIONS = ["fp32", "bf16"]
N_QUERIES = 30


def make_query_metrics(seed: int = 0, systems=SYSTEMS, tasks=TASKS, precisions=PRECISIONS, benchmark="bench",
                       n_queries: int = N_QUERIES) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for s, system in enumerate(systems):
        for precision in precisions:
            for instruction in (False, True):
                for task in tasks:
                    for q in range(n_queries):
                        low = float(rng.uniform(0, 0.6)) + 0.05 * s
                        high = low + float(rng.uniform(0, 0.3)) * (rng.random() < 0.4)
                        rows.append({
                            "system": system, "benchmark": benchmark, "task": task, "setting": "full",
                            "instruction": instruction, "precision": precision, "qid": f"{task}-q{q}",
                            "metric": "ndcg@10", "oblivious": low + (high - low) * float(rng.random()),
                            "expected": (low + high) / 2, "min": low, "max": high, "tie_policy": "docid-desc",
                            "n_candidates": 100, "tied_at_cutoff": high > low, "source": "test",
                        })
    return pd.DataFrame(rows)


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "computed").mkdir()
    make_query_metrics().to_parquet(tmp_path / "computed" / "qm.parquet")
    published = pd.DataFrame([
        {"system": "published-model", "benchmark": "bench", "task": t, "setting": "full", "instruction": False,
         "precision": "fp32", "metric": "ndcg@10", "value": v, "expected": None, "min": None, "max": None,
         "n_queries": 100, "source": "paper"}
        for t, v in zip(TASKS, [0.5, 0.4, 0.3])
    ] + [  # an incomplete published system and one with a zero task
        {"system": "partial-model", "benchmark": "bench", "task": "T1", "setting": "full", "instruction": False,
         "precision": "fp32", "metric": "ndcg@10", "value": 0.9, "expected": None, "min": None, "max": None,
         "n_queries": 100, "source": "paper"}
    ] + [
        {"system": "zero-model", "benchmark": "bench", "task": t, "setting": "full", "instruction": False,
         "precision": "fp32", "metric": "ndcg@10", "value": v, "expected": None, "min": None, "max": None,
         "n_queries": 100, "source": "paper"}
        for t, v in zip(TASKS, [0.8, 0.0, 0.7])
    ])
    published.to_parquet(tmp_path / "published.parquet")
    pd.DataFrame([
        {"system": "published-model", "display_name": "Published Model", "family": "pub", "n_parameters": 1e8,
         "license": "mit", "open_weights": True, "uses_instructions": False, "release_date": "2024-01-01",
         "reference": "https://example.org", "source": "paper"},
        {"system": "alpha", "display_name": "Alpha", "family": "greek", "n_parameters": 3e9,
         "license": None, "open_weights": False, "uses_instructions": True, "release_date": None,
         "reference": None, "source": "test"},
    ]).to_parquet(tmp_path / "systems.parquet")
    return tmp_path


def expected_task_means(frame: pd.DataFrame, **filters) -> pd.DataFrame:
    mask = np.ones(len(frame), dtype=bool)
    for column, value in filters.items():
        mask &= (frame[column] == value).to_numpy()
    return frame[mask].groupby(["system", "task"])[["oblivious", "expected", "min", "max"]].mean()


def write_query_counts(data_dir: Path, counts: dict[str, int], benchmark: str = "bench", setting: str = "full"):
    """data/query_counts.json for ``benchmark`` / ``setting``: what the queries lens bounds published rows with."""
    (data_dir / "query_counts.json").write_text(json.dumps({
        "format": 1, "sources": {"test": "written by the test"},
        "benchmarks": {benchmark: {setting: {task: {"queries": n, "source": "test"} for task, n in counts.items()}}}}))


def queries_lens_reference(rows: pd.DataFrame, systems: list[str], tasks: list[str], level: float = 0.95):
    """The queries lens' G interval of per-query ``rows`` recomputed with pandas / numpy / scipy: per task the
    systems' task means, their sample covariance over the task's queries (numpy.cov) / n, carried to
    θ = (1/T) Σ log x by the delta method; the interval exp(θ⁻ − z se) … exp(θ⁺ + z se), θ⁻ / θ⁺ the same
    over the tie range's ends (the means of per-query min / max), clipped to [0, 1]. Also the S × S
    covariance of the θ̂."""
    cov = np.zeros((len(systems), len(systems)))
    logs, low, high = [], [], []
    for task in tasks:
        part = rows[rows.task == task]
        wide = part.pivot(index="qid", columns="system", values="oblivious")[systems]
        x = wide.mean().to_numpy()
        cov += np.cov(wide.to_numpy().T) / len(wide) / np.outer(x, x)
        logs.append(np.log(x))
        low.append(np.log(part.groupby("system")["min"].mean()[systems].to_numpy()))
        high.append(np.log(part.groupby("system")["max"].mean()[systems].to_numpy()))
    cov /= len(tasks) ** 2
    z = stats.norm.isf((1 - level) / 2)
    se = np.sqrt(np.diagonal(cov))
    lo = np.exp(np.mean(low, axis=0) - z * se)
    hi = np.minimum(np.exp(np.mean(high, axis=0) + z * se), 1.0)
    return lo, hi, np.mean(logs, axis=0), np.mean(low, axis=0), np.mean(high, axis=0), cov


# -- loading ---------------------------------------------------------------------------------------------
def test_corrupt_foreign_and_wrongly_typed_files_are_skipped(data_dir: Path):
    good = data_dir / "computed" / "qm.parquet"
    (data_dir / "truncated.parquet").write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    (data_dir / "not_parquet.parquet").write_text("hello")
    pd.DataFrame({"a": [1, 2]}).to_parquet(data_dir / "foreign.parquet")
    bad_types = make_query_metrics(seed=9).astype({"oblivious": str})
    bad_types.to_parquet(data_dir / "bad_types.parquet")
    store = Store(data_dir)
    skipped = {Path(s.path).name: s.reason for s in store.skipped}
    assert set(skipped) == {"truncated.parquet", "not_parquet.parquet", "foreign.parquet", "bad_types.parquet"}
    assert "oblivious" in skipped["bad_types.parquet"]
    assert "missing columns" in skipped["foreign.parquet"]
    assert len(store.task_table(Condition("bench"))) > 0


def test_corrupt_data_page_with_valid_footer_is_skipped(data_dir: Path):
    path = data_dir / "late_corruption.parquet"
    table = pa.Table.from_pandas(make_query_metrics(seed=3, systems=["delta"]), preserve_index=False)
    pq.write_table(table, path, compression="none")
    raw = bytearray(path.read_bytes())
    footer_start = len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")
    raw[4:footer_start] = bytes(footer_start - 4)  # wipe the data pages, keep the footer intact
    path.write_bytes(bytes(raw))
    store = Store(data_dir)
    assert any(Path(s.path).name == "late_corruption.parquet" for s in store.skipped)
    assert "delta" not in store.task_table(Condition("bench"))["system"].tolist()


def test_sums_read_in_one_scan_or_file_by_file_match_pandas(data_dir: Path):
    # new query_metrics files are summed in one scan; a file that breaks that scan (a 'filename' column, a
    # corrupt data page) makes every file be read on its own: same means either way, only the bad file skipped
    cond = Condition("bench", precision="bf16", instruction=True)
    frames = [pd.read_parquet(data_dir / "computed" / "qm.parquet"), make_query_metrics(seed=6, systems=["delta"])]
    frames[1].to_parquet(data_dir / "computed" / "more.parquet")
    frames[1].iloc[:0].to_parquet(data_dir / "computed" / "empty.parquet")

    def check(store: Store) -> None:
        table = store.task_table(cond).set_index(["system", "task"])
        expected = expected_task_means(pd.concat(frames), precision="bf16", instruction=True)
        assert set(table.index) == set(expected.index)
        np.testing.assert_allclose(table.loc[expected.index, "value"], expected["oblivious"], rtol=1e-12)
        np.testing.assert_allclose(table.loc[expected.index, "max"], expected["max"], rtol=1e-12)

    store = Store(data_dir)
    assert not store.skipped
    check(store)
    frames.append(make_query_metrics(seed=7, systems=["epsilon"]).assign(filename="x"))
    frames[2].to_parquet(data_dir / "with_filename_column.parquet")
    corrupt = data_dir / "late_corruption.parquet"
    pq.write_table(pa.Table.from_pandas(make_query_metrics(seed=8, systems=["zeta"]), preserve_index=False),
                   corrupt, compression="none")
    raw = bytearray(corrupt.read_bytes())
    footer_start = len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")
    raw[4:footer_start] = bytes(footer_start - 4)  # wipe the data pages, keep the footer intact
    corrupt.write_bytes(bytes(raw))
    store = Store(data_dir)
    assert [Path(s.path).name for s in store.skipped] == ["late_corruption.parquet"]
    check(store)


def test_task_table_means_match_pandas(data_dir: Path):
    raw = pd.read_parquet(data_dir / "computed" / "qm.parquet")
    store = Store(data_dir)
    cond = Condition("bench", precision="bf16", instruction=True)
    table = store.task_table(cond).set_index(["system", "task"])
    expected = expected_task_means(raw, precision="bf16", instruction=True)
    assert set(table.index) == set(expected.index)
    for column, mine in (("oblivious", "value"), ("expected", "expected"), ("min", "min"), ("max", "max")):
        np.testing.assert_allclose(table.loc[expected.index, mine], expected[column], rtol=1e-12)
    shares = raw[(raw.precision == "bf16") & raw.instruction].groupby(["system", "task"])["tied_at_cutoff"].mean()
    np.testing.assert_allclose(table.loc[shares.index, "tied_share"], shares)
    assert (table["n_queries"] == N_QUERIES).all() and table["has_query_data"].all()


def test_published_rows_and_priority_of_query_data(data_dir: Path):
    # the same system/task/condition published too: the per-query data wins
    pd.DataFrame([{"system": "alpha", "benchmark": "bench", "task": "T1", "setting": "full", "instruction": False,
                   "precision": "fp32", "metric": "ndcg@10", "value": 0.01, "expected": None, "min": None,
                   "max": None, "n_queries": 5, "source": "paper"}]).to_parquet(data_dir / "dup.parquet")
    store = Store(data_dir)
    table = store.task_table(Condition("bench")).set_index(["system", "task"])
    assert table.loc[("alpha", "T1"), "source"] == "test"
    assert table.loc[("published-model", "T2"), "value"] == 0.4
    assert np.isnan(table.loc[("published-model", "T2"), "expected"])
    assert not table.loc[("published-model", "T2"), "has_query_data"]


def test_instruction_any_uses_one_state_per_system(data_dir: Path):
    raw = pd.read_parquet(data_dir / "computed" / "qm.parquet")
    store = Store(data_dir)
    table = store.task_table(Condition("bench", instruction=None)).set_index(["system", "task"])
    with_instruction = expected_task_means(raw, precision="fp32", instruction=True)
    np.testing.assert_allclose(table.loc[with_instruction.index, "value"], with_instruction["oblivious"])
    assert table.loc["alpha", "instruction"].all()
    assert not table.loc["published-model", "instruction"].any()  # only has without-instruction rows


# -- leaderboard ----------------------------------------------------------------------------------------
def test_leaderboard_g_mean_ranks_incomplete_and_zero(data_dir: Path):
    raw = pd.read_parquet(data_dir / "computed" / "qm.parquet")
    write_query_counts(data_dir, {"T1": 100, "T2": 100, "T3": 100})
    store = Store(data_dir)
    board = store.leaderboard(Condition("bench"))
    ranked = board.ranked.set_index("system")
    means = expected_task_means(raw, precision="fp32", instruction=False)
    for system in SYSTEMS:
        task_values = means.loc[system]
        assert ranked.loc[system, "G"] == pytest.approx(stats.gmean(task_values["oblivious"]))
        assert ranked.loc[system, "G_min"] == pytest.approx(stats.gmean(task_values["min"]))
        assert ranked.loc[system, "G_max"] == pytest.approx(stats.gmean(task_values["max"]))
        assert ranked.loc[system, "G_expected"] == pytest.approx(stats.gmean(task_values["expected"]))
        assert ranked.loc[system, "mean"] == pytest.approx(task_values["oblivious"].mean())
    for system in [*SYSTEMS, "published-model"]:
        for lens in ("queries", "tasks"):
            assert ranked.loc[system, f"{lens}_lo"] <= ranked.loc[system, "G"] <= ranked.loc[system, f"{lens}_hi"]
            assert ranked.loc[system, f"{lens}_rank_lo"] <= ranked.loc[system, "rank"] <= ranked.loc[system,
                                                                                                  f"{lens}_rank_hi"]
    assert ranked.loc["published-model", "G"] == pytest.approx((0.5 * 0.4 * 0.3) ** (1 / 3))
    # a published row is bounded from its tasks' query counts: 100 queries each, Bhatia–Davis, delta method
    x = np.array([0.5, 0.4, 0.3])
    adjusted = (100 * x + 2) / 104
    se = np.sqrt((adjusted * (1 - adjusted) / 100 / x ** 2).sum()) / 3
    z = stats.norm.isf(0.025)
    assert ranked.loc["published-model", "queries_lo"] == pytest.approx(np.exp(np.log(x).mean() - z * se), rel=1e-12)
    assert ranked.loc["published-model", "queries_hi"] == pytest.approx(np.exp(np.log(x).mean() + z * se), rel=1e-12)
    assert ranked.loc["zero-model", "G"] == 0 and board.zero_task_systems == ["zero-model"]
    zero = ranked.loc["zero-model"]
    assert np.isnan(zero["queries_lo"]) and np.isnan(zero["tasks_hi"]), "G = 0 by definition is no estimate"
    assert (zero["queries_rank_lo"], zero["queries_rank_hi"]) == (5, 5), "outside the model: below every row"
    assert board.incomplete["system"].tolist() == ["partial-model"]
    assert board.incomplete["missing_tasks"].iloc[0] == ["T2", "T3"]
    np.testing.assert_array_equal(board.ranked["rank"], stats.rankdata(-board.ranked["G"], method="min"))
    assert board.tasks == TASKS and list(board.ranked.columns[-3:]) == TASKS
    assert (board.level, board.ranks, list(board.lenses)) == (0.95, "marginal", ["queries", "tasks"])


def test_leaderboard_needs_a_query_count_for_a_published_row_and_no_seed(data_dir: Path):
    """Without data/query_counts.json the queries lens says why it cannot bound the published row; the numbers
    never depend on a seed (there is none): two stores give the same board, bit for bit."""
    board = Store(data_dir).leaderboard(Condition("bench"))
    queries = board.lens("queries")
    assert not queries.available and "T1" in queries.reason
    assert board.ranked["queries_lo"].isna().all() and board.ranked["tasks_lo"].notna().sum() == 4
    alone = Store(data_dir).leaderboard(Condition("bench"), systems=SYSTEMS)
    assert alone.lens("queries").available and alone.ranked["queries_lo"].notna().all()
    pd.testing.assert_frame_equal(Store(data_dir).leaderboard(Condition("bench")).ranked, board.ranked,
                                  check_exact=True)


def test_leaderboard_is_the_same_from_two_stores(data_dir: Path):
    write_query_counts(data_dir, {"T1": 100, "T2": 100, "T3": 100})
    first = Store(data_dir).leaderboard(Condition("bench")).ranked
    second = Store(data_dir).leaderboard(Condition("bench")).ranked
    assert first["queries_lo"].notna().sum() == 4
    pd.testing.assert_frame_equal(first, second, check_exact=True)


def test_leaderboard_queries_lens_matches_the_raw_rows(data_dir: Path):
    # per-query values aligned by qid across systems whatever order the file holds them in; the interval, the
    # adjacent pairs' statistics and the rank sets recomputed from the raw rows (queries_lens_reference)
    raw = pd.read_parquet(data_dir / "computed" / "qm.parquet")
    raw = raw.sample(frac=1.0, random_state=3)  # a file order that is not the canonical one
    rows = raw[(raw.precision == "fp32") & ~raw.instruction]
    raw.to_parquet(data_dir / "computed" / "qm.parquet")
    board = Store(data_dir).leaderboard(Condition("bench"), systems=SYSTEMS)
    order = board.ranked["system"].tolist()
    lo, hi, points, low, high, cov = queries_lens_reference(rows, order, TASKS)
    np.testing.assert_allclose(board.ranked["queries_lo"], lo, rtol=1e-10)
    np.testing.assert_allclose(board.ranked["queries_hi"], hi, rtol=1e-10)
    adjacent = board.lens("queries").adjacent
    assert adjacent["system_1"].tolist() == order[:-1] and adjacent["system_2"].tolist() == order[1:]
    for k in range(len(order) - 1):  # upper k over lower k + 1, the least favourable tie order
        se = np.sqrt(cov[k, k] + cov[k + 1, k + 1] - 2 * cov[k, k + 1])
        assert adjacent["statistic"].iloc[k] == pytest.approx((low[k] - high[k + 1]) / se, rel=1e-9)
        two_sided = min(1.0, 2 * stats.norm.sf((low[k] - high[k + 1]) / se))  # differs only with the upper ahead
        assert adjacent["p_value"].iloc[k] == pytest.approx(two_sided, rel=1e-8, abs=1e-15)
    assert (np.diff(points) <= 0).all()


def _one_file_per_system(data_dir: Path, raw: pd.DataFrame, drop=None, extra_column: str | None = None) -> None:
    """Replace computed/qm.parquet by one file per system (as ``evalcore ingest`` writes them)."""
    (data_dir / "computed" / "qm.parquet").unlink()
    for system, rows in raw.groupby("system", sort=False):
        if drop is not None:
            rows = rows[~drop(rows)]
        if extra_column:
            rows = rows.assign(**{extra_column: 0})
        rows.to_parquet(data_dir / "computed" / f"qm_{system}.parquet")


def _no_generic_scan(monkeypatch) -> None:
    from evalcore.store import queries

    def refuse(*args, **kwargs):
        raise AssertionError("the per-row system filter ran although every file holds one system")
    monkeypatch.setattr(queries, "per_query", refuse)


@pytest.mark.parametrize("instruction", [False, True, None])
def test_per_query_values_read_one_file_per_system_by_file(data_dir: Path, tmp_path_factory, monkeypatch,
                                                            instruction):
    # the same rows, one file holding every system vs one file per system (gamma: no with-instruction rows,
    # so under instruction=None it keeps its without-instruction rows while alpha and beta keep theirs)
    raw = pd.read_parquet(data_dir / "computed" / "qm.parquet")
    write_query_counts(data_dir, {"T1": 100, "T2": 100, "T3": 100})
    gamma_with = (raw.system == "gamma") & raw.instruction
    # with-instruction rows first in each file, so a scan that kept both states would differ ("last row wins")
    raw = raw[~gamma_with].sort_values(["system", "instruction"], ascending=[True, False], kind="stable")
    raw = raw.reset_index(drop=True)
    raw.to_parquet(data_dir / "computed" / "qm.parquet")
    cond = Condition("bench", instruction=instruction)
    calls = [dict(), dict(systems=["gamma", "alpha", "published-model"]), dict(tasks=["T3", "T1"])]
    together = [Store(data_dir).leaderboard(cond, **kw).ranked for kw in calls]
    _one_file_per_system(data_dir, raw)
    _no_generic_scan(monkeypatch)
    apart = [Store(data_dir).leaderboard(cond, **kw).ranked for kw in calls]
    for first, second in zip(together, apart):
        pd.testing.assert_frame_equal(first, second)
        assert first["queries_lo"].notna().tolist() == (first["G"] > 0).tolist()  # the zero-G row: outside
        assert first["system"].isin(SYSTEMS).any()
    if instruction is None:  # against the raw rows with each system's own state
        rows = raw[(raw.precision == "fp32") & (raw.instruction | (raw.system == "gamma"))]
        ranked = apart[0].set_index("system")
        lo, hi, *_ = queries_lens_reference(rows, SYSTEMS, TASKS)
        np.testing.assert_allclose(ranked.loc[SYSTEMS, "queries_lo"], lo, rtol=1e-10)
        np.testing.assert_allclose(ranked.loc[SYSTEMS, "queries_hi"], hi, rtol=1e-10)


def test_per_query_values_fall_back_to_per_row_systems(data_dir: Path, monkeypatch):
    # a data column named file_index would shadow DuckDB's virtual column: the rows must carry their system
    raw = pd.read_parquet(data_dir / "computed" / "qm.parquet")
    write_query_counts(data_dir, {"T1": 100, "T2": 100, "T3": 100})
    expected = Store(data_dir).leaderboard(Condition("bench")).ranked
    assert expected["queries_lo"].notna().sum() == 4
    _one_file_per_system(data_dir, raw, extra_column="file_index")
    from evalcore.store import queries

    generic = []
    original = queries.per_query
    monkeypatch.setattr(queries, "per_query", lambda *a, **k: generic.append(1) or original(*a, **k))
    pd.testing.assert_frame_equal(Store(data_dir).leaderboard(Condition("bench")).ranked, expected)
    assert generic


def test_query_matrix_matches_a_plain_python_alignment():
    from hypothesis import given, strategies as st

    from evalcore.store import query_matrix

    @given(st.integers(1, 4), st.lists(st.integers(0, 5), min_size=0, max_size=6, unique=True),
           st.data())
    def check(n_systems, keys, data):
        # blocks per system: usually the same keys in the same order (the stacked path), sometimes not
        rows = []
        for system in data.draw(st.permutations(range(n_systems))):
            block = list(keys)
            if data.draw(st.booleans()) and block:
                block = data.draw(st.lists(st.sampled_from(keys), max_size=len(keys) + 1))
            rows += [(system, key) for key in block]
        if data.draw(st.booleans()):
            rows = data.draw(st.permutations(rows))
        system_code = np.array([r[0] for r in rows], dtype=np.int64)
        query_key = np.array([r[1] * 7919 for r in rows], dtype=np.uint64)
        task_code = np.array([r[1] % 3 for r in rows], dtype=np.int32)
        values = np.arange(len(rows), dtype=np.float64) / 10
        matrix, key_task = query_matrix(system_code, task_code, query_key, values, n_systems)
        columns: dict[int, int] = {}  # canonical order: by task code, then key, whatever the row order
        for key in sorted({key for _, key in rows}, key=lambda key: (key % 3, key * 7919)):
            columns.setdefault(key, len(columns))
        reference = np.full((n_systems, len(columns)), np.nan)
        for i, (system, key) in enumerate(rows):
            reference[system, columns[key]] = values[i]  # a repeated (system, key): the last row wins
        np.testing.assert_array_equal(matrix, reference)
        np.testing.assert_array_equal(key_task, [key % 3 for key in columns])

    check()


def test_task_subset_and_system_filter(data_dir: Path):
    store = Store(data_dir)
    board = store.leaderboard(Condition("bench"), systems=["alpha", "partial-model"], tasks=["T1"], uncertainty=False)
    assert sorted(board.ranked["system"]) == ["alpha", "partial-model"]
    assert board.incomplete.empty and board.tasks == ["T1"]


# -- tie summary, flips, gaps, compare --------------------------------------------------------------------
def test_tie_summary_matches_pandas(data_dir: Path):
    raw = pd.read_parquet(data_dir / "computed" / "qm.parquet")
    store = Store(data_dir)
    summary = store.tie_summary(Condition("bench", instruction=False)).set_index(["system", "precision"])
    subset = raw[~raw.instruction]
    task_means = subset.groupby(["system", "precision", "task"])[["oblivious", "expected", "min", "max"]].mean()
    expected = task_means.groupby(["system", "precision"]).mean()
    np.testing.assert_allclose(summary.loc[expected.index, "oblivious"], expected["oblivious"])
    np.testing.assert_allclose(summary.loc[expected.index, "range"], expected["max"] - expected["min"])
    np.testing.assert_allclose(summary.loc[expected.index, "bias"], expected["oblivious"] - expected["expected"])
    tied = subset.groupby(["system", "precision"])["tied_at_cutoff"].mean()
    np.testing.assert_allclose(summary.loc[tied.index, "tied_share"], tied)
    assert set(summary.index.get_level_values("precision")) == set(PRECISIONS)


def _write_two_conditions(tmp_path: Path) -> Path:
    """fp32 order: a > b > c > d; bf16 order: b > a > d > c with overlapping tie intervals for a/b."""
    values = {"fp32": {"a": 0.60, "b": 0.55, "c": 0.30, "d": 0.20},
              "bf16": {"a": 0.50, "b": 0.56, "c": 0.18, "d": 0.21}}
    rows = []
    for precision, by_system in values.items():
        for system, value in by_system.items():
            for task in TASKS:
                for q in range(4):
                    spread = 0.08 if system in ("a", "b") else 0.0
                    rows.append({"system": system, "benchmark": "flip", "task": task, "setting": "full",
                                 "instruction": False, "precision": precision, "qid": f"q{q}", "metric": "ndcg@10",
                                 "oblivious": value, "expected": value, "min": value - spread, "max": value + spread,
                                 "tie_policy": "docid-desc", "n_candidates": 10, "tied_at_cutoff": spread > 0,
                                 "source": "test"})
    pd.DataFrame(rows).to_parquet(tmp_path / "flip.parquet")
    return tmp_path


def test_rank_flips_constructed(tmp_path: Path):
    store = Store(_write_two_conditions(tmp_path))
    flips = store.rank_flips(Condition("flip", precision="fp32"), Condition("flip", precision="bf16"))
    ranks = flips.ranks.set_index("system")
    assert ranks["rank_a"].to_dict() == {"a": 1, "b": 2, "c": 3, "d": 4}
    assert ranks["rank_b"].to_dict() == {"b": 1, "a": 2, "d": 3, "c": 4}
    assert set(zip(flips.flipped_pairs["system_1"], flips.flipped_pairs["system_2"])) == {("a", "b"), ("c", "d")}
    overlap = flips.flipped_pairs.set_index(["system_1", "system_2"])["intervals_overlap"]
    assert overlap[("a", "b")] and not overlap[("c", "d")]
    reference = stats.kendalltau([0.60, 0.55, 0.30, 0.20], [0.50, 0.56, 0.18, 0.21], variant="b").statistic
    assert flips.kendall_tau_b == pytest.approx(reference)
    overlapping = flips.overlapping_pairs[["condition", "system_1", "system_2"]].values
    pairs = {(c, frozenset((s1, s2))) for c, s1, s2 in overlapping}
    assert pairs == {("a", frozenset("ab")), ("b", frozenset("ab"))}


def test_instruction_gap_and_mcr_vs_full(data_dir: Path):
    raw = pd.read_parquet(data_dir / "computed" / "qm.parquet")
    store = Store(data_dir)
    gap = store.instruction_gap(Condition("bench"))
    without = expected_task_means(raw, precision="fp32", instruction=False)["oblivious"]
    with_instruction = expected_task_means(raw, precision="fp32", instruction=True)["oblivious"]
    per_task = gap.per_task.set_index(["system", "task"])
    np.testing.assert_allclose(per_task.loc[without.index, "gap"], with_instruction - without)
    per_system = gap.per_system.set_index("system")
    for system in SYSTEMS:
        assert per_system.loc[system, "gap"] == pytest.approx(
            stats.gmean(with_instruction.loc[system]) - stats.gmean(without.loc[system]))
    mcr = raw[raw.system == "alpha"].assign(setting="mcr", metric="p@1", oblivious=0.5, expected=0.5, min=0.5, max=0.5)
    mcr.to_parquet(data_dir / "mcr.parquet")
    store.reload()
    versus = store.mcr_vs_full(Condition("bench"), mcr_metric="p@1")
    assert versus.per_task["system"].unique().tolist() == ["alpha"]
    np.testing.assert_allclose(versus.per_task["b"], 0.5)
    np.testing.assert_allclose(versus.per_task.set_index("task")["a"], without.loc["alpha"])


def test_query_diff_and_paired_test(data_dir: Path):
    raw = pd.read_parquet(data_dir / "computed" / "qm.parquet")
    store = Store(data_dir)
    cond = Condition("bench")
    diff = store.query_diff(["alpha", "beta"], cond, "T2")
    subset = raw[(raw.task == "T2") & (raw.precision == "fp32") & ~raw.instruction & raw.system.isin(["alpha", "beta"])]
    wide = subset.pivot(index="qid", columns="system", values="oblivious")
    spread = (wide.max(axis=1) - wide.min(axis=1))
    np.testing.assert_allclose(diff.groupby("qid")["spread"].first().loc[spread.index], spread)
    assert len(diff) == 2 * N_QUERIES and set(diff.columns) >= {"tied_at_cutoff", "differs", "expected"}

    test = store.paired_test("alpha", "beta", cond, task="T2", n_resamples=2000)
    assert test.observed_diff == pytest.approx((wide["alpha"] - wide["beta"]).mean())
    assert test.n_queries == N_QUERIES and 0 < test.p_value <= 1
    same = store.paired_test("alpha", "alpha", cond, n_resamples=500)
    assert same.observed_diff == 0 and same.p_value == 1.0
    everything = store.paired_test("alpha", "gamma", cond, n_resamples=500)
    per_task = (raw[(raw.precision == "fp32") & ~raw.instruction]
                .pivot_table(index=["task", "qid"], columns="system", values="oblivious"))
    expected = (per_task["alpha"] - per_task["gamma"]).groupby(level="task").mean().mean()
    assert everything.observed_diff == pytest.approx(expected) and everything.n_tasks == 3
    with pytest.raises(ValueError):
        store.paired_test("alpha", "published-model", cond)


def test_compare_and_systems_and_facets(data_dir: Path):
    store = Store(data_dir)
    compared = store.compare(["alpha", "published-model"], Condition("bench"))
    assert sorted(compared["system"].unique()) == ["alpha", "published-model"]
    systems = store.systems()
    assert set(systems["system"]) == set(SYSTEMS) | {"published-model", "partial-model", "zero-model"}
    assert store.systems(search="PUBLISHED")["system"].tolist() == ["published-model"]
    assert store.systems(min_parameters=1e9)["system"].tolist() == ["alpha"]
    assert store.systems(open_weights=True)["system"].tolist() == ["published-model"]
    assert store.systems(families=["greek"])["system"].tolist() == ["alpha"]
    facets = store.facets()
    assert facets["benchmarks"] == ["bench"]
    assert facets["by_benchmark"]["bench"]["precisions"] == ["bf16", "fp32"]
    assert facets["by_benchmark"]["bench"]["instructions"] == [False, True]
    assert facets["size_range"] == (1e8, 3e9)
    conditions = facets["conditions"]
    assert conditions[conditions.precision == "bf16"]["has_query_data"].all()


# -- reload, runs, threads, empty -----------------------------------------------------------------------
def test_new_file_appears_after_reload(data_dir: Path):
    store = Store(data_dir)
    assert not store.is_stale()
    before = store.loaded_fingerprint
    assert before == store.fingerprint()
    make_query_metrics(seed=4, systems=["newcomer"]).to_parquet(data_dir / "computed" / "new.parquet")
    assert store.is_stale()
    assert store.loaded_fingerprint == before != store.fingerprint()  # the tables still hold the old files
    assert "newcomer" not in store.task_table(Condition("bench"))["system"].tolist()
    store.reload()
    assert not store.is_stale()
    assert store.loaded_fingerprint == store.fingerprint() != before
    assert "newcomer" in store.task_table(Condition("bench"))["system"].tolist()


def test_reload_after_files_change_or_go(data_dir: Path):
    # sums are cached per file version: an unchanged file keeps its sums, a rewritten one is summed anew, a
    # removed one drops out
    computed, cond = data_dir / "computed", Condition("bench", precision="bf16", instruction=False)
    kept = make_query_metrics(seed=6, systems=["delta"])
    kept.to_parquet(computed / "kept.parquet")
    make_query_metrics(seed=7, systems=["epsilon"]).to_parquet(computed / "removed.parquet")
    store = Store(data_dir)
    assert {"delta", "epsilon"} <= set(store.task_table(cond)["system"])
    rewritten = make_query_metrics(seed=11)
    rewritten.to_parquet(computed / "qm.parquet")
    (computed / "removed.parquet").unlink()
    store.reload()
    table = store.task_table(cond).set_index(["system", "task"])
    table = table[table["has_query_data"]]
    expected = expected_task_means(pd.concat([rewritten, kept]), precision="bf16", instruction=False)
    assert set(table.index) == set(expected.index)
    np.testing.assert_allclose(table.loc[expected.index, "value"], expected["oblivious"], rtol=1e-12)


def test_empty_data_dir(tmp_path: Path):
    store = Store(tmp_path / "does-not-exist")
    assert store.facets()["benchmarks"] == []
    board = store.leaderboard(Condition("bench"))
    assert board.ranked.empty and board.incomplete.empty
    assert store.tie_summary(Condition("bench")).empty
    assert store.runs().empty and store.systems().empty


def test_env_var_default(monkeypatch, data_dir: Path):
    monkeypatch.setenv("TIEBREAK_DATA", str(data_dir))
    assert Store().data_dir == data_dir


def test_runs_listing_with_sidecar_and_key_value_metadata(data_dir: Path):
    runs = data_dir / "runs"
    runs.mkdir()
    run = pa.table({"qid": ["q1", "q1"], "docid": ["d1", "d2"], "score": [1.0, 1.0]})
    pq.write_table(run, runs / "sidecar_run.parquet")
    (runs / "sidecar_run.json").write_text(json.dumps(
        {"system": "mini", "benchmark": "bench", "task": "T1", "setting": "full", "instruction": False,
         "precision": "fp32"}))
    kv_run = run.replace_schema_metadata({"tiebreak": json.dumps(
        {"system": "mini", "benchmark": "bench", "task": "T2", "setting": "mcr", "instruction": "yes",
         "precision": "bf16"})})
    pq.write_table(kv_run, runs / "kv_run.parquet")
    qrels = pa.table({"qid": ["q1"], "docid": ["d1"], "relevance": [1]})
    pq.write_table(qrels.replace_schema_metadata({"benchmark": "bench", "task": "T1"}), runs / "qrels_t1.parquet")
    store = Store(data_dir)
    listed = store.runs().set_index("task")
    assert listed.loc["T1", "qrels_path"].endswith("qrels_t1.parquet")
    assert listed.loc["T1", "n_rows"] == 2 and listed.loc["T1", "system"] == "mini"
    assert bool(listed.loc["T2", "instruction"]) and bool(listed.loc["T1", "instruction"]) is False
    assert listed.loc["T2", "precision"] == "bf16" and pd.isna(listed.loc["T2", "qrels_path"])
    assert not store.skipped  # run files are not results and are not reported as foreign


def test_concurrent_callers(data_dir: Path):
    store = Store(data_dir)
    reference = store.leaderboard(Condition("bench")).ranked
    errors, results = [], []

    def call():
        try:
            results.append(store.leaderboard(Condition("bench")).ranked)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    store.reload()  # a reload in the middle must not break running callers
    for thread in threads:
        thread.join()
    assert not errors
    for frame in results:
        pd.testing.assert_frame_equal(frame, reference)


# -- hostile filter values ----------------------------------------------------------------------------
HOSTILE = [
    "x' OR '1'='1", "'; DROP TABLE task_results; --", "bench\"; SELECT 1; --", "-- comment", "名前🙂\u202e",
    "\x00nul", "a" * 10_000, "%zz%", "zz_z", "back\\slash", "') OR TRUE --",
]


class RecordingCursor:
    """Wraps a DuckDB cursor and records the SQL text of every statement."""

    def __init__(self, cursor, log):
        self._cursor, self._log = cursor, log

    def execute(self, sql, *args, **kwargs):
        self._log.append(sql)
        return self._cursor.execute(sql, *args, **kwargs)

    def sql(self, sql, *args, **kwargs):
        self._log.append(sql)
        return self._cursor.sql(sql, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._cursor, name)


def test_hostile_filter_values_are_inert(data_dir: Path, monkeypatch):
    from evalcore.store.queries import Database

    store = Store(data_dir)
    executed: list[str] = []
    original = Database.cursor
    monkeypatch.setattr(Database, "cursor", lambda self: RecordingCursor(original(self), executed))
    before = store.task_table(Condition("bench"))
    for value in HOSTILE:
        cond = Condition(value, metric=value, setting=value, precision=value, tie_policy=value)
        assert store.task_table(cond).empty
        assert store.leaderboard(cond, systems=[value], tasks=[value]).ranked.empty
        assert store.tie_summary(cond, systems=[value], task=value).empty
        assert store.rank_flips(cond, cond, systems=[value]).ranks.empty
        assert store.instruction_gap(cond, systems=[value]).per_task.empty
        assert store.mcr_vs_full(cond, systems=[value], mcr_metric=value).per_task.empty
        assert store.compare([value], cond).empty
        assert store.query_diff([value, "alpha"], Condition("bench"), value).empty
        assert store.systems(search=value, families=[value]).empty
        with pytest.raises(ValueError):
            store.paired_test(value, "alpha", Condition("bench"), task=value)
        store.leaderboard(Condition("bench"), systems=["alpha", value])  # mixed with real names
    assert executed, "the recording cursor saw no SQL"
    for sql in executed:
        for value in HOSTILE:
            assert value not in sql
    pd.testing.assert_frame_equal(store.task_table(Condition("bench")), before)  # nothing was dropped


def test_hostile_names_stored_in_data_round_trip(tmp_path: Path):
    """Values that look like SQL are data: stored, filtered on and returned unchanged."""
    names = ["x' OR '1'='1", "'; DROP TABLE systems; --", "名前🙂"]
    make_query_metrics(systems=names, benchmark="b'; --").to_parquet(tmp_path / "hostile.parquet")
    store = Store(tmp_path)
    board = store.leaderboard(Condition("b'; --"), systems=[names[0]])
    assert board.ranked["system"].tolist() == [names[0]]
    assert sorted(store.systems()["system"]) == sorted(names)
