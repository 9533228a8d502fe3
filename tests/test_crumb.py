"""``evalcore.crumb``: CRUMB's official numbers equal ir_measures called the way ``crumb_eval`` calls it, and the
tie-aware values after MaxP equal brute-force enumeration of every ordering of tied documents.

The reference below is written from crumb_eval's ``eval.py`` (github.com/jfkback/crumb): labels ``int()``-cast,
nDCG on the graded qrels, P / R / RR on ``passage_binary_qrels`` for paper_retrieval (else graded), MaxP for
three tasks on passages (sort the items by score, descending and stable, keep each document's first item; the
document judged by its id, ``DOC`` of ``DOC:CHUNK``), then ``ir_measures``.
"""
from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import pytest

from evalcore import crumb
from evalcore.errors import InputError
from needs import require_module

ir_measures = require_module("ir_measures")

FIXTURES = Path(__file__).parent / "fixtures" / "crumb"
IR_MEASURE = {"ndcg@10": "nDCG@10", "ndcg@5": "nDCG@5", "p@10": "P@10", "p@5": "P@5", "recall@10": "R@10",
              "recall@100": "R@100", "recall@1000": "R@1000", "mrr@10": "RR@10", "mrr": "RR"}
BINARY = ("P", "R", "RR")  # crumb_eval's BINARY_METRICS
MAXP = {"clinical_trial", "set_operation_entity_retrieval", "tip_of_the_tongue"}
FULL_DOCS = {"clinical_trial", "legal_qa", "set_operation_entity_retrieval", "stack_exchange", "tip_of_the_tongue"}


# ------------------------------------------------------------------------------- the reference (crumb_eval)

def reference_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    """{qid: [(id, score), ...]} from CRUMB JSON lines or a TREC run, in file order."""
    run: dict[str, list[tuple[str, float]]] = {}
    for text in path.read_text().splitlines():
        if not text.strip():
            continue
        if path.suffix == ".trec":
            qid, _, docid, _, score, _ = text.split()
            run.setdefault(qid, []).append((docid, float(score)))
        else:
            record = json.loads(text)
            run[record["query"]["id"]] = [(item["id"], item["score"]) for item in record["items"]]
    return run


def reference_maxp(run):
    """crumb_eval's modify_run_for_max_p, the kept item standing for its document."""
    out = {}
    for qid, items in run.items():
        seen, kept = set(), {}
        for item_id, score in sorted(items, key=lambda pair: pair[1], reverse=True):
            doc = item_id.split(":")[0]
            if doc not in seen:
                seen.add(doc)
                kept[doc] = score
        out[qid] = kept
    return out


def reference_qrels(labels: Path, key: str) -> dict[str, dict[str, int]]:
    qrels = {}
    for text in labels.read_text().splitlines():
        record = json.loads(text)
        judged = {j["id"]: int(j["label"]) for j in record[key]}
        if judged:  # crumb_eval's query_associated_items_to_dict creates a query's entry with its first item
            qrels[record["query_id"]] = judged
    return qrels


def reference_keys(task: str, setting: str) -> tuple[str, str, bool]:
    """(graded key, binary key, maxp) as crumb_eval's evaluate/load_qrels decide them."""
    full = setting == "full-document" and task in FULL_DOCS
    maxp = not full and task in MAXP
    if full or maxp:
        return "full_document_qrels", "full_document_qrels", maxp
    return "passage_qrels", ("passage_binary_qrels" if task == "paper_retrieval" else "passage_qrels"), False


def reference_values(run_path: Path, crumb_dir: Path, task: str, setting: str):
    """{(qid, evalcore metric): value} per query and {metric: task mean} from ir_measures."""
    graded_key, binary_key, maxp = reference_keys(task, setting)
    labels = crumb_dir / task / "eval" / "query_labels.jsonl"
    raw = reference_run(run_path)
    run = reference_maxp(raw) if maxp else {q: dict(items) for q, items in raw.items()}
    per_query, means = {}, {}
    for metric, name in IR_MEASURE.items():
        measure = ir_measures.parse_measure(name)
        qrels = reference_qrels(labels, binary_key if name.startswith(BINARY) else graded_key)
        for value in ir_measures.iter_calc([measure], qrels, run):
            per_query[(value.query_id, metric)] = value.value
        means[metric] = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    return per_query, means


# ------------------------------------------------------------------------------------ official numbers

FIXTURE_RUNS = [("minilm", "passage"), ("minilm-instructed", "passage"), ("bm25", "passage"),
                ("minilm-full", "full-document")]


@pytest.mark.parametrize("folder,setting", FIXTURE_RUNS)
def test_official_numbers_equal_ir_measures_on_the_fixtures(folder, setting):
    runs = crumb.run_files(FIXTURES / "runs" / folder)
    for task, path in runs.items():
        rows = crumb.evaluate_task(path, FIXTURES, task, setting).to_pandas()
        expected, means = reference_values(path, FIXTURES, task, setting)
        got = {(r.qid, r.metric): r.oblivious for r in rows.itertuples()}
        assert set(got) == set(expected), (task, set(got) ^ set(expected))
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, abs=1e-12), (task, key)
        for metric, value in means.items():
            assert rows[rows.metric == metric].oblivious.mean() == pytest.approx(value, abs=1e-12), (task, metric)


def test_the_fixtures_have_what_they_claim():
    """Several tasks, graded and binary qrels, chunked ids, ties inside and across documents, MaxP and not."""
    assert {"clinical_trial", "paper_retrieval", "legal_qa"} <= set(crumb.run_files(FIXTURES / "runs" / "minilm"))
    ct = reference_run(FIXTURES / "runs" / "minilm" / "clinical_trial_minilm.jsonl")["ct-1"]
    scores = dict(ct)
    assert scores["NCT01:0"] == scores["NCT01:1"]  # a tie inside a document
    assert scores["NCT01:0"] == scores["NCT04:2"]  # and across documents
    labels = reference_qrels(FIXTURES / "clinical_trial" / "eval" / "query_labels.jsonl", "full_document_qrels")
    raw = json.loads((FIXTURES / "clinical_trial" / "eval" / "query_labels.jsonl").read_text().splitlines()[0])
    assert any(j["label"] != int(j["label"]) for j in raw["full_document_qrels"]) and labels["ct-1"]["NCT04"] == 1
    assert crumb.procedure("clinical_trial").maxp and not crumb.procedure("legal_qa").maxp
    assert crumb.procedure("paper_retrieval").binary_key == "passage_binary_qrels"


def _random_crumb(folder: Path, rng: random.Random, task: str, gaps: bool = False) -> Path:
    """A random task in CRUMB's layout with heavy ties (scores from a few float32 values), chunked ids and
    float labels; returns the run file. With ``gaps`` the run leaves some queries out and lists others with no
    items."""
    labels, lines = [], []
    for q in range(rng.randint(1, 5)):
        qid = f"q{q}"
        docs = [f"D{d}" for d in range(rng.randint(1, 7))]
        passages = [f"{doc}:{c}" for doc in docs for c in range(rng.randint(1, 3))]
        def judged(ids):
            return [{"id": i, "label": rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])} for i in rng.sample(ids, rng.randint(0, len(ids)))]
        record = {"query_id": qid, "query_content": "x", "instruction": "y", "passage_qrels": judged(passages),
                  "full_document_qrels": judged(docs + ["D99"]), "use_max_p": task in MAXP, "metadata": {}}
        if task == "paper_retrieval":
            record["passage_binary_qrels"] = [{"id": i, "label": 1.0} for i in rng.sample(passages, rng.randint(0, 2))]
        labels.append(json.dumps(record))
        items = [{"id": p, "score": rng.choice([0.25, 0.5, 0.75, 1.0])} for p in rng.sample(passages, rng.randint(1, len(passages)))]
        gap = rng.choice(["none", "none", "absent", "empty"]) if gaps else "none"
        if gap != "absent":
            lines.append(json.dumps({"query": {"id": qid}, "items": [] if gap == "empty" else items}))
    if not lines:  # a file with no line at all is another error (an empty run file)
        lines.append(json.dumps({"query": {"id": "q0"}, "items": []}))
    (folder / task / "eval").mkdir(parents=True, exist_ok=True)
    (folder / task / "eval" / "query_labels.jsonl").write_text("\n".join(labels) + "\n")
    run = folder / f"{task}_random.jsonl"
    run.write_text("\n".join(lines) + "\n")
    return run


@pytest.mark.parametrize("seed", range(12))
def test_official_numbers_equal_ir_measures_on_random_tasks(tmp_path, seed):
    rng = random.Random(seed)
    for task in ("clinical_trial", "paper_retrieval", "code_retrieval"):
        run = _random_crumb(tmp_path, rng, task)
        try:
            rows = crumb.evaluate_task(run, tmp_path, task).to_pandas()
        except Exception as exc:  # no judged query at all: ir_measures then has nothing either
            assert "no query of the run is judged" in str(exc)
            continue
        expected, _ = reference_values(run, tmp_path, task, "passage")
        got = {(r.qid, r.metric): r.oblivious for r in rows.itertuples()}
        assert set(got) == set(expected), (seed, task)
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, abs=1e-12), (seed, task, key)


# --------------------------------------------------------------------------- tie-aware values after MaxP

def brute_force(doc_scores: dict[str, float], qrels: dict[str, int], measure_name: str):
    """Mean, min and max of the measure over every ordering of tied documents, each ordering scored by
    ir_measures with distinct scores."""
    measure = ir_measures.parse_measure(measure_name)
    levels = sorted(set(doc_scores.values()), reverse=True)
    groups = [[d for d in doc_scores if doc_scores[d] == s] for s in levels]
    values = []
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        order = [d for part in parts for d in part]
        run = {"q": {d: float(len(order) - i) for i, d in enumerate(order)}}
        found = list(ir_measures.iter_calc([measure], {"q": qrels}, run))
        values.append(found[0].value if found else 0.0)
    return sum(values) / len(values), min(values), max(values)


def _check_against_brute_force(run_path: Path, crumb_dir: Path, task: str):
    graded_key, binary_key, maxp = reference_keys(task, "passage")
    assert maxp
    rows = crumb.evaluate_task(run_path, crumb_dir, task).to_pandas()
    labels = crumb_dir / task / "eval" / "query_labels.jsonl"
    docs = {}
    for qid, items in reference_run(run_path).items():  # MaxP by the definition: the max over passages
        for item_id, score in items:
            doc = item_id.split(":")[0]
            docs.setdefault(qid, {})[doc] = max(score, docs.get(qid, {}).get(doc, -math.inf))
    checked = 0
    for row in rows.itertuples():
        qrels = reference_qrels(labels, binary_key if IR_MEASURE[row.metric].startswith(BINARY) else graded_key)
        if not qrels.get(row.qid):
            continue
        mean, low, high = brute_force(docs.get(row.qid, {}), qrels[row.qid], IR_MEASURE[row.metric])
        assert (row.expected, row.min, row.max) == pytest.approx((mean, low, high), abs=1e-12), (row.qid, row.metric)
        checked += 1
    return checked


def test_tie_aware_values_after_maxp_equal_brute_force_on_the_fixture():
    run = FIXTURES / "runs" / "minilm" / "clinical_trial_minilm.jsonl"
    assert _check_against_brute_force(run, FIXTURES, "clinical_trial") > 0
    rows = crumb.evaluate_task(run, FIXTURES, "clinical_trial").to_pandas()
    ct1 = rows[(rows.qid == "ct-1") & (rows.metric == "ndcg@10")].iloc[0]
    assert ct1["min"] < ct1["expected"] < ct1["max"]  # the tie across documents after MaxP decides it


# ------------------------------------------------------- judged queries the run lacks score 0 (crumb_eval)

def _official_against_ir_measures(run: Path, crumb_dir: Path, task: str):
    rows = crumb.evaluate_task(run, crumb_dir, task).to_pandas()
    expected, means = reference_values(run, crumb_dir, task, "passage")
    got = {(r.qid, r.metric): r.oblivious for r in rows.itertuples()}
    assert set(got) == set(expected), set(got) ^ set(expected)  # every judged query, run or not
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key
    for metric, value in means.items():  # NaN on both sides when no query is judged under the metric's key
        assert rows[rows.metric == metric].oblivious.mean() == pytest.approx(value, abs=1e-12, nan_ok=True), metric
    return rows


def test_a_judged_query_the_run_lacks_or_lists_empty_scores_zero_as_in_crumb_eval(tmp_path):
    """The fixture's legal_qa run with lq-1 left out: crumb_eval (ir_measures) averages over both judged
    queries, lq-1 scoring 0 — in the official value and in the tie-aware expected, min and max."""
    (tmp_path / "legal_qa").symlink_to(FIXTURES / "legal_qa")
    source = FIXTURES / "runs" / "minilm" / "legal_qa_minilm.jsonl"
    kept = [line for line in source.read_text().splitlines() if '"lq-1"' not in line]
    for variant, lines in (("absent", kept), ("empty", [json.dumps({"query": {"id": "lq-1"}, "items": []}), *kept])):
        run = tmp_path / f"legal_qa_{variant}.jsonl"
        run.write_text("\n".join(lines) + "\n")
        rows = _official_against_ir_measures(run, tmp_path, "legal_qa")
        missing = rows[rows.qid == "lq-1"]
        assert len(missing) == len(crumb.OFFICIAL_METRICS)
        assert (missing[["oblivious", "expected", "min", "max"]] == 0).all().all()
        ndcg = rows[rows.metric == "ndcg@10"]
        present = ndcg[ndcg.qid != "lq-1"]
        assert present.oblivious.mean() > 0 and ndcg.oblivious.mean() == pytest.approx(present.oblivious.mean() / 2)
        assert ndcg.expected.mean() == pytest.approx(present.expected.mean() / 2)


@pytest.mark.parametrize("seed", range(12))
def test_official_numbers_equal_ir_measures_on_random_runs_with_gaps(tmp_path, seed):
    rng = random.Random(500 + seed)
    for task in ("clinical_trial", "paper_retrieval", "code_retrieval"):
        run = _random_crumb(tmp_path, rng, task, gaps=True)
        try:
            _official_against_ir_measures(run, tmp_path, task)
        except InputError as exc:  # none of the run's queries is judged: still an error
            assert "no query of the run is judged" in str(exc)


@pytest.mark.parametrize("seed", range(6))
def test_tie_aware_values_of_a_run_with_gaps_equal_brute_force(tmp_path, seed):
    run = _random_crumb(tmp_path, random.Random(900 + seed), "tip_of_the_tongue", gaps=True)
    try:
        _check_against_brute_force(run, tmp_path, "tip_of_the_tongue")
    except InputError as exc:
        assert "no query of the run is judged" in str(exc)


def test_a_run_none_of_whose_queries_is_judged_is_still_an_error(tmp_path):
    (tmp_path / "legal_qa").symlink_to(FIXTURES / "legal_qa")
    run = tmp_path / "legal_qa_other.jsonl"
    run.write_text(json.dumps({"query": {"id": "not-a-query"}, "items": [{"id": "L1:0", "score": 1.0}]}) + "\n")
    with pytest.raises(InputError, match="no query of the run is judged"):
        crumb.evaluate_task(run, tmp_path, "legal_qa")


@pytest.mark.parametrize("seed", range(8))
def test_tie_aware_values_after_maxp_equal_brute_force_on_random_tasks(tmp_path, seed):
    run = _random_crumb(tmp_path, random.Random(100 + seed), "tip_of_the_tongue")
    try:
        _check_against_brute_force(run, tmp_path, "tip_of_the_tongue")
    except Exception as exc:
        assert "no query of the run is judged" in str(exc)


def test_maxp_does_not_depend_on_which_tied_passage_comes_first(tmp_path):
    """Two passages of one document with the same score give the same document score: reordering a run's
    passages (and so which tied passage crumb_eval's stable sort keeps) changes no value."""
    source = FIXTURES / "runs" / "minilm" / "clinical_trial_minilm.jsonl"
    records = [json.loads(line) for line in source.read_text().splitlines()]
    for record in records:
        record["items"].reverse()
    (tmp_path / "runs").mkdir()
    reversed_run = tmp_path / "runs" / "clinical_trial_reversed.jsonl"
    reversed_run.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    columns = ["qid", "metric", "oblivious", "expected", "min", "max"]
    a = crumb.evaluate_task(source, FIXTURES, "clinical_trial").to_pandas()[columns].sort_values(columns[:2])
    b = crumb.evaluate_task(reversed_run, FIXTURES, "clinical_trial").to_pandas()[columns].sort_values(columns[:2])
    assert a.reset_index(drop=True).equals(b.reset_index(drop=True))


def test_mean_over_tasks_is_the_arithmetic_mean_of_task_means():
    rows = crumb.evaluate_folder(FIXTURES / "runs" / "minilm", FIXTURES, system="minilm")
    means = crumb.task_means(rows)
    by_task = rows[rows.metric == "ndcg@10"].groupby("task").oblivious.mean()
    overall = means[(means.task == "mean") & (means.metric == "ndcg@10")].oblivious.iloc[0]
    assert overall == pytest.approx(sum(by_task) / 3)


def test_trec_and_parquet_runs_with_crumb_ids_give_the_same_rows(tmp_path):
    """The same run as CRUMB JSON lines, TREC and parquet: identical per-query rows (MaxP task included)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = FIXTURES / "runs" / "minilm" / "clinical_trial_minilm.jsonl"
    rows = [(qid, item, score) for qid, items in reference_run(source).items() for item, score in items]
    trec = tmp_path / "clinical_trial.trec"
    trec.write_text("".join(f"{q} Q0 {d} {i + 1} {s!r} x\n" for i, (q, d, s) in enumerate(rows)))
    parquet = tmp_path / "clinical_trial.parquet"
    pq.write_table(pa.table({"qid": [r[0] for r in rows], "docid": [r[1] for r in rows],
                             "score": [r[2] for r in rows]}), parquet)
    columns = ["qid", "metric", "oblivious", "expected", "min", "max", "n_candidates", "tie_policy"]
    frames = [crumb.evaluate_task(path, FIXTURES, "clinical_trial").to_pandas()[columns]
              .sort_values(columns[:2]).reset_index(drop=True) for path in (source, trec, parquet)]
    assert frames[0].equals(frames[1]) and frames[0].equals(frames[2])
