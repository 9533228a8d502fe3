"""Derived data (evalcore/store/derived.py, ``evalcore derive``) and the in-memory overlay (Store.with_overlay).

The derived sums beside each per-query file must change where the store's numbers come from, never what they
are: every answer is compared with a store over the same files without derived data (a scan), and with the
raw rows. A sums file that is missing, stale, damaged or of another format is never used; a corrupt source
under a fresh-looking sums file is still caught; the store's integrity checks give the same verdicts on
both paths; the store writes nothing, anywhere. The overlay answers exactly as the same rows ingested.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.cli import main
from evalcore.errors import InputError
from evalcore.store import Condition, Store, derived
from test_store import make_query_metrics
from test_store_integrity import query_rows, skipped_of, task_row, warnings_of, write

COND = Condition("bench")


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def tree(folder: Path) -> dict[str, tuple[int, str, int]]:
    """Every file under ``folder``: (size, sha256, mtime_ns)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest(),
                                         p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    """Per-query files (one of them holding two systems) and published scores."""
    data = tmp_path / "data"
    rows = make_query_metrics(seed=1)
    (data / "runs-a").mkdir(parents=True)
    rows[rows.system.isin(["alpha", "beta"])].to_parquet(data / "runs-a" / "ab.parquet")
    rows[rows.system == "gamma"].to_parquet(data / "gamma.parquet")
    pd.DataFrame([task_row("published", t, v, benchmark="bench") for t, v in (("T1", .5), ("T2", .4), ("T3", .3))]
                 ).to_parquet(data / "published.parquet")
    return data


def answers(store: Store) -> dict[str, pd.DataFrame]:
    """What the pages ask, with both lenses' intervals and rank sets."""
    return {
        "board": store.leaderboard(COND).ranked,
        "any": store.leaderboard(Condition("bench", instruction=None)).ranked,
        "ties": store.tie_summary(COND),
        "flips": store.rank_flips(COND, Condition("bench", precision="bf16")).ranks,
        "diff": store.query_diff(["alpha", "gamma"], COND, "T2"),
        "facets": store.facets()["conditions"],
        "systems": store.systems(),
    }


def assert_same_answers(first: Store, second: Store) -> None:
    a, b = answers(first), answers(second)
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name], check_exact=True, obj=name)


def no_scans(monkeypatch) -> list:
    scanned: list = []
    original = derived.scan_sums
    monkeypatch.setattr(derived, "scan_sums", lambda conn, paths: scanned.extend(paths) or original(conn, paths))
    return scanned


# -- derived sums are read, and change nothing ------------------------------------------------------------
def test_derived_sums_replace_the_scan_and_give_the_same_answers(folder: Path, tmp_path: Path, monkeypatch):
    scanned_copy = tmp_path / "underived"
    shutil.copytree(folder, scanned_copy)
    code, out, err = cli("derive", "--data", str(folder))
    assert code == 0 and "wrote 2" in out, (out, err)
    assert (folder / "runs-a" / "_derived" / "ab.sums.parquet").is_file()
    assert (folder / "_derived" / "gamma.sums.parquet").is_file()
    assert sorted(p.name for p in folder.glob("*.parquet")) == ["gamma.parquet", "published.parquet"]
    scanned = no_scans(monkeypatch)
    store = Store(folder)
    assert scanned == [] and store.derived_sums == (2, [])
    assert not store.skipped and not store.warnings  # the sums files are data, not foreign files
    assert_same_answers(store, Store(scanned_copy))
    # and the numbers are the raw rows' means, not only equal between the two paths
    raw = make_query_metrics(seed=1)
    mine = raw[(raw.precision == "fp32") & ~raw.instruction].groupby(["system", "task"])["oblivious"].mean()
    table = store.task_table(COND).set_index(["system", "task"])["value"]
    np.testing.assert_allclose(table.loc[mine.index], mine, rtol=1e-12)


def test_derived_keys_survive_a_copy(folder: Path, tmp_path: Path, monkeypatch):
    """A clone has other inodes and modification times; the sums are keyed by the bytes."""
    assert cli("derive", "--data", str(folder))[0] == 0
    clone = tmp_path / "clone"
    shutil.copytree(folder, clone, copy_function=shutil.copyfile)  # new mtimes too
    scanned = no_scans(monkeypatch)
    assert Store(clone).derived_sums == (2, []) and scanned == []


# -- a sums file that does not match is never used -----------------------------------------------------------
def test_a_stale_sums_file_is_never_used(folder: Path, monkeypatch, caplog):
    assert cli("derive", "--data", str(folder))[0] == 0
    old = Store(folder).task_table(COND)
    rows = make_query_metrics(seed=9)
    rows[rows.system == "gamma"].to_parquet(folder / "gamma.parquet")  # new values, the old sums beside them
    with caplog.at_level(logging.WARNING, logger="evalcore.store"):
        store = Store(folder)
    read, computed = store.derived_sums
    assert read == 1 and [Path(f).name for f, _ in computed] == ["gamma.parquet"]
    assert "stale" in computed[0][1] and "gamma.parquet" in caplog.text and "evalcore derive" in caplog.text
    new = store.task_table(COND).set_index(["system", "task"])
    mine = rows[(rows.system == "gamma") & (rows.precision == "fp32") & ~rows.instruction].groupby("task")["oblivious"]
    np.testing.assert_allclose(new.loc["gamma", "value"], mine.mean().to_numpy(), rtol=1e-12)
    assert not np.allclose(new.loc["gamma", "value"], old.set_index(["system", "task"]).loc["gamma", "value"])
    # derive brings it up to date; --check tells before and after
    assert cli("derive", "--data", str(folder), "--check")[0] == 1
    assert cli("derive", "--data", str(folder))[1].startswith("derive: 1 up to date, wrote 1")
    assert cli("derive", "--data", str(folder), "--check")[0] == 0
    assert Store(folder).derived_sums == (2, [])


def test_a_corrupt_source_under_a_fresh_looking_sums_file_is_still_skipped(folder: Path):
    """Bytes of a data page zeroed in place (same size): the sha256 differs, so the file is scanned — and
    found unusable (the zeroed values break min <= value <= max) — instead of being answered from the sums of
    its former bytes."""
    assert cli("derive", "--data", str(folder))[0] == 0
    source = folder / "gamma.parquet"
    data = bytearray(source.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(64)
    source.write_bytes(bytes(data))
    store = Store(folder)
    assert "stale" in dict((Path(f).name, why) for f, why in store.derived_sums[1])["gamma.parquet"]
    assert "cannot be used" in skipped_of(store)["gamma.parquet"]
    assert "gamma" not in set(store.task_table(COND)["system"])


@pytest.mark.parametrize("damage", ["garbage", "format", "columns", "footer", "other source"])
def test_a_damaged_or_foreign_sums_file_is_ignored(folder: Path, tmp_path: Path, damage):
    reference = Store(folder).task_table(COND)
    assert cli("derive", "--data", str(folder))[0] == 0
    sums_file = folder / "_derived" / "gamma.sums.parquet"
    table = pq.read_table(sums_file)
    record = dict(table.schema.metadata)
    if damage == "garbage":
        sums_file.write_bytes(b"PAR1 not a parquet file PAR1")
    elif damage == "format":
        info = derived.derived_from(table.schema)
        record[derived.METADATA_KEY.encode()] = (
            f'{{"format": "query-sums/0", "source": "gamma.parquet", "source_size": {info.size}, '
            f'"source_sha256": "{info.sha256}"}}').encode()
        pq.write_table(table.replace_schema_metadata(record), sums_file)
    elif damage == "columns":  # the right footer, a column gone
        pq.write_table(table.drop_columns(["sum_max"]).replace_schema_metadata(record), sums_file)
    elif damage == "footer":
        record[derived.METADATA_KEY.encode()] = b"{not json"
        pq.write_table(table.replace_schema_metadata(record), sums_file)
    else:  # sums of another file, renamed: its footer names the other source
        shutil.copyfile(folder / "runs-a" / "_derived" / "ab.sums.parquet", sums_file)
    store = Store(folder)
    pd.testing.assert_frame_equal(store.task_table(COND), reference, check_exact=True)
    assert [Path(f).name for f, _ in store.derived_sums[1]] == ["gamma.parquet"]
    assert not store.skipped


# -- the integrity checks on the derived path ----------------------------------------------------------------
CORRUPT = {
    "null system": [("a.parquet", query_rows("a", "T1", [0.2, 0.4]) + query_rows(None, "T1", [0.9], qids=["q9"]))],
    "NaN": [("a.parquet", query_rows("a", "T1", [0.2, float("nan")]))],
    "above one": [("a.parquet", query_rows("a", "T1", [0.2, 1.5]))],
    "negative": [("a.parquet", query_rows("a", "T1", [0.2, -0.1]))],
    "repeated qid": [("a.parquet", query_rows("a", "T1", [0.2, 0.4], qids=["q1", "q1"]))],
    "min above max": [("a.parquet", query_rows("a", "T1", [0.2, 0.4], min=0.5, max=0.1))],
    "no qid": [("a.parquet", query_rows("a", "T1", [0.2, 0.4], qids=["q1", None]))],
    "copied file": [("a.parquet", query_rows("a", "T1", [0.2, 0.4])), ("b.parquet", query_rows("a", "T1", [0.2, 0.4]))],
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_integrity_checks_give_the_same_verdicts_from_derived_sums(tmp_path: Path, monkeypatch, case):
    for name, rows in CORRUPT[case]:
        write(tmp_path / "scanned" / name, rows)
        write(tmp_path / "derived" / name, rows)
    write(tmp_path / "scanned" / "scores.parquet", [task_row("p", "T1", 0.3)])
    write(tmp_path / "derived" / "scores.parquet", [task_row("p", "T1", 0.3)])
    assert cli("derive", "--data", str(tmp_path / "derived"))[0] == 0
    scanned = Store(tmp_path / "scanned")
    monkeypatch.setattr(derived, "scan_sums", lambda conn, paths: paths and pytest.fail(f"scanned {paths}") or {})
    from_sums = Store(tmp_path / "derived")
    assert from_sums.derived_sums[0] == len(CORRUPT[case])
    assert skipped_of(from_sums) == {name: reason.replace("scanned", "derived")
                                     for name, reason in skipped_of(scanned).items()}
    assert warnings_of(from_sums) == {name: text.replace("scanned", "derived")
                                      for name, text in warnings_of(scanned).items()}
    assert skipped_of(scanned) or warnings_of(scanned)  # the case is caught at all
    pd.testing.assert_frame_equal(from_sums.task_table(Condition("b")), scanned.task_table(Condition("b")))


# -- nothing is written at run time -----------------------------------------------------------------------
@pytest.mark.parametrize("cache_named", [False, True])
def test_the_store_writes_nothing_anywhere_at_run_time(folder: Path, tmp_path: Path, monkeypatch, cache_named):
    """The data folder may be read-only. The store keeps no run-time cache (a Leaderboard's uncertainty is closed
    forms, computed in milliseconds): nothing is written anywhere, even where a deployment still names
    ``TIEBREAK_CACHE``."""
    cache = tmp_path / "cache"
    if cache_named:
        monkeypatch.setenv("TIEBREAK_CACHE", str(cache))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cli("derive", "--data", str(folder))[0] == 0
    (folder / "_derived" / "gamma.sums.parquet").write_bytes(b"stale")  # not used, and not rewritten
    before = tree(folder)
    store = Store(folder)
    answers(store)
    store.reload()
    store.with_overlay(make_query_metrics(seed=4, systems=["delta"])).leaderboard(COND)
    assert tree(folder) == before
    assert not (tmp_path / "home").exists() and not (tmp_path / "xdg").exists()
    assert not cache.exists()


# -- evalcore derive ---------------------------------------------------------------------------------------------
def test_derive_writes_what_is_missing_or_stale_and_removes_orphans(folder: Path):
    code, out, _ = cli("derive", "--data", str(folder))
    assert out.startswith("derive: 0 up to date, wrote 2, removed 0")
    first = tree(folder)
    assert cli("derive", "--data", str(folder))[1].startswith("derive: 2 up to date, wrote 0, removed 0")
    assert tree(folder) == first  # nothing rewritten
    (folder / "gamma.parquet").unlink()
    code, out, _ = cli("derive", "--data", str(folder), "--check")
    assert code == 1 and "orphaned" in out and (folder / "_derived" / "gamma.sums.parquet").exists()
    assert cli("derive", "--data", str(folder))[1].startswith("derive: 1 up to date, wrote 0, removed 1")
    assert not (folder / "_derived" / "gamma.sums.parquet").exists()
    # the footer names exactly the bytes the sums come from
    info = derived.derived_from(pq.read_schema(folder / "runs-a" / "_derived" / "ab.sums.parquet"))
    source = (folder / "runs-a" / "ab.parquet").read_bytes()
    assert (info.format, info.source, info.size, info.sha256) == (
        derived.FORMAT, "ab.parquet", len(source), hashlib.sha256(source).hexdigest())


def test_derive_warns_about_an_unreadable_file_and_writes_no_sums_for_it(folder: Path):
    (folder / "broken.parquet").write_bytes((folder / "gamma.parquet").read_bytes()[:-100] + b"PAR1")
    code, out, err = cli("derive", "--data", str(folder))
    assert code == 1 and "wrote 2" in out and "1 unreadable" in out, "the others written; the broken one named"
    assert f"unreadable: {folder / 'broken.parquet'}" in out and "broken.parquet" in err
    assert not (folder / "_derived" / "broken.sums.parquet").exists()


def test_ingest_writes_the_sums_of_its_file(folder: Path, tmp_path: Path, monkeypatch):
    run, qrels = _run_files(tmp_path)
    code, out, err = cli("ingest", "--run", str(run), "--qrels", str(qrels), "--system", "cand", "--benchmark",
                         "bench", "--task", "T1", "--setting", "full", "--instruction", "no", "--precision",
                         "fp32", "--data", str(folder), "--metrics", "ndcg@10")
    assert code == 0, err
    assert cli("derive", "--data", str(folder), "--check")[0] == 1  # the fixture's own files are not derived
    (written,) = (folder / "ingested").glob("*.parquet")  # one results file in the folder, its sums below
    assert derived.sums_path(written).is_file()
    scanned = no_scans(monkeypatch)
    store = Store(folder)
    assert written not in scanned and len(scanned) == 2
    assert "cand" in set(store.task_table(COND)["system"])


def test_ingest_syncs_its_file_and_sums_before_renaming_the_file_first(folder: Path, tmp_path: Path, monkeypatch):
    """Both files are on disk before the first rename, and the results file is renamed before its sums: a
    SIGKILL in a disk flush between the renames left the file without its sums (test_kill_atomic.py)."""
    run, qrels = _run_files(tmp_path)
    calls = []  # (what, the file synced or replaced); the ingest lock's own record is written the same way
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"))),
                                                 real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append(("replace", str(b))), real_replace(a, b))[1])
    code, _, err = cli("ingest", "--run", str(run), "--qrels", str(qrels), "--system", "cand", "--benchmark",
                       "bench", "--task", "T1", "--setting", "full", "--instruction", "no", "--precision", "fp32",
                       "--data", str(folder), "--metrics", "ndcg@10")
    assert code == 0, err
    (written,) = (folder / "ingested").glob("*.parquet")
    writes = [(kind, Path(name)) for kind, name in calls if "parquet" in Path(name).name]
    assert [kind for kind, _ in writes] == ["fsync", "fsync", "replace", "replace"], calls
    assert [name for kind, name in writes if kind == "replace"] == [written, derived.sums_path(written)]


# -- the overlay --------------------------------------------------------------------------------------
def _run_files(folder: Path) -> tuple[Path, Path]:
    """A run with ties (scores rounded to one decimal) over the fixture's qids of T1..T3 and its qrels."""
    rng = np.random.default_rng(8)
    runs, qrels = [], []
    for task in ("T1", "T2", "T3"):
        for q in range(30):
            qid = f"{task}-q{q}"
            for d in range(12):
                runs.append(f"{qid} Q0 {task}-d{d} 0 {round(float(rng.random()), 1)} cand")
            for d in rng.choice(12, size=2, replace=False):
                qrels.append(f"{qid} 0 {task}-d{d} {int(rng.integers(1, 3))}")
    run, qrel = folder / "cand.trec", folder / "cand.qrels"
    run.write_text("\n".join(runs) + "\n")
    qrel.write_text("\n".join(qrels) + "\n")
    return run, qrel


def _candidate_rows(run: Path, qrels: Path, task: str) -> pd.DataFrame:
    """What ``evalcore ingest`` stores for one task's run (the engine's per-query values, labelled)."""
    from evalcore.engine import evaluate
    from evalcore.schema import QUERY_METRICS

    per_query = evaluate(run, qrels, metrics=["ndcg@10"], tie_policy="docid-desc")
    return per_query.assign(system="cand", benchmark="bench", task=task, setting="full", instruction=False,
                            precision="fp32", tie_policy="docid-desc", source="ingested")[list(QUERY_METRICS)]


def test_an_overlay_answers_exactly_as_the_same_rows_ingested(folder: Path, tmp_path: Path):
    run, qrels = _run_files(tmp_path)
    ingested = tmp_path / "ingested-copy"
    shutil.copytree(folder, ingested)
    candidate = []
    for task in ("T1", "T2", "T3"):
        task_run, task_qrels = tmp_path / f"{task}.trec", tmp_path / f"{task}.qrels"
        task_run.write_text("".join(line + "\n" for line in run.read_text().splitlines() if line.startswith(task)))
        task_qrels.write_text("".join(line + "\n" for line in qrels.read_text().splitlines() if line.startswith(task)))
        code, _, err = cli("ingest", "--run", str(task_run), "--qrels", str(task_qrels), "--system", "cand",
                           "--benchmark", "bench", "--task", task, "--setting", "full", "--instruction", "no",
                           "--precision", "fp32", "--data", str(ingested), "--metrics", "ndcg@10")
        assert code == 0, err
        candidate.append(_candidate_rows(task_run, task_qrels, task))
    base = Store(folder)
    before = answers(base)
    view = base.with_overlay(pd.concat(candidate, ignore_index=True), name="my run")
    on_disk = Store(ingested)
    mine, theirs = view.leaderboard(COND), on_disk.leaderboard(COND)
    pd.testing.assert_frame_equal(mine.ranked, theirs.ranked, check_exact=True)
    pd.testing.assert_frame_equal(mine.incomplete, theirs.incomplete, check_exact=True)
    row = mine.ranked.set_index("system").loc["cand"]
    assert row[["tasks_lo", "tasks_hi", "tasks_rank_lo", "tasks_rank_hi"]].notna().all() and row["has_query_data"]
    assert "query count" in mine.lens("queries").reason, "the published row has none in this folder"
    per_query = view.leaderboard(COND, systems=["cand", "alpha", "beta"]).ranked.set_index("system")
    assert per_query.loc["cand", ["queries_lo", "queries_hi", "queries_rank_lo"]].notna().all()
    for question in (lambda s: s.task_table(COND), lambda s: s.tie_summary(COND),
                     lambda s: s.query_diff(["cand", "alpha"], COND, "T2"), lambda s: s.facets()["conditions"],
                     lambda s: s.leaderboard(Condition("bench", instruction=None), systems=["cand", "beta"]).ranked):
        pd.testing.assert_frame_equal(question(view), question(on_disk), check_exact=True)
    assert view.paired_test("cand", "alpha", COND) == on_disk.paired_test("cand", "alpha", COND)
    for name, frame in answers(base).items():  # the store the view came from is unchanged
        pd.testing.assert_frame_equal(frame, before[name], check_exact=True, obj=name)
    assert "cand" not in set(base.task_table(COND)["system"])


def test_an_overlay_gets_the_checks_of_a_file_and_may_not_repeat_the_data(folder: Path):
    store = Store(folder)
    rows = pd.DataFrame(query_rows("cand", "T1", [0.2, 0.4], benchmark="bench"))
    store.with_overlay(rows)  # fine
    for bad, says in (
        (rows.assign(oblivious=[0.2, float("nan")]), "NULL per-query value"),  # pandas' NaN is a NULL
        (pa.Table.from_pylist(query_rows("cand", "T1", [0.2, float("nan")], benchmark="bench")), "NaN"),
        (rows.assign(qid=["q1", "q1"]), "qid repeated"),
        (rows.assign(system=[None, "cand"]), "without a system"),
        (rows.assign(system="gamma"), "already in"),  # gamma's own rows
        (rows.assign(system="published"), "already in"),  # a published score would be hidden
        (rows.drop(columns=["qid"]), "missing columns"),
        (rows.assign(oblivious="high"), "expected"),
    ):
        with pytest.raises(InputError, match=says) as raised:
            store.with_overlay(bad, name="upload.parquet")
        assert str(raised.value).startswith("upload.parquet: ") and "\n" not in str(raised.value)


def test_an_overlay_view_keeps_its_rows_across_a_reload(folder: Path):
    view = Store(folder).with_overlay(pd.DataFrame(query_rows("cand", "T1", [0.2, 0.4], benchmark="bench")))
    write(folder / "new.parquet", query_rows("zeta", "T1", [0.5], benchmark="bench"))
    view.reload()
    assert {"cand", "zeta"} <= set(view.task_table(COND)["system"])


def test_a_sums_file_outside_a_derived_folder_is_skipped_with_the_reason(folder: Path):
    assert cli("derive", "--data", str(folder))[0] == 0
    shutil.copyfile(folder / "_derived" / "gamma.sums.parquet", folder / "gamma-sums.parquet")
    store = Store(folder)
    assert "outside a _derived folder" in skipped_of(store)["gamma-sums.parquet"]
    assert store.derived_sums == (2, [])


def test_the_same_source_gives_the_same_derived_file_whatever_order_the_groups_come_in(folder: Path):
    """DuckDB's parallel GROUP BY returns a file's groups in any order; the sums file keeps them in key order,
    so deriving the same source twice writes the same bytes (a killed and rerun ingest, a re-derivation:
    tests/reliability/test_kill_atomic.py compared them and failed once under load)."""
    import duckdb

    source = folder / "runs-a" / "ab.parquet"
    table = derived.scan_sums(duckdb.connect(":memory:"), [source])[source]
    assert table.num_rows > 3
    version, _ = derived.source_version(source)
    written = []
    for order in (np.arange(table.num_rows), np.random.default_rng(3).permutation(table.num_rows),
                  np.arange(table.num_rows)[::-1]):
        path = derived.write_sums(source, table.take(pa.array(order)), version)
        written.append(path.read_bytes())
    assert written[0] == written[1] == written[2]
    stored = derived.read_sums(path)
    assert stored.equals(stored.sort_by([(name, "ascending") for name in derived.CONDITION_KEY]))
