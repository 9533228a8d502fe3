"""Benchmark of ``evalcore evaluate`` against pytrec_eval, ranx, trm and a plain DuckDB SQL.

    python bench/bench_metrics.py [--sizes 10M] [--peers pytrec_eval,ranx,trm,duckdb] [--workdir DIR] [--repeats 3]

Data (generated once per size, not timed): N queries x 1,000 candidates (``--candidates``), scores are
``sigmoid(normal logits)`` rounded to bfloat16 and widened back to float64, so ties are real (bf16 values are
float32-exact, so pytrec_eval's float32 narrowing loses nothing). Docids are unique per query, ``qid``-grouped,
written as parquet (``qid, docid, score``) in 1M-row chunks with ``pyarrow.parquet.ParquetWriter`` so memory
stays bounded; qrels parquet (``qid, docid, relevance``): 3-7 judged relevant candidates per query (graded 1-2),
5 judged non-relevant candidates (grade 0) and one relevant document that is not retrieved.

Every tool runs as a whole child process (interpreter start-up, imports, reading the parquet, evaluating,
writing per-query values). Wall time is measured around the child; peak RSS is the child's own
``ru_maxrss`` from ``os.wait4`` (exact per child, includes the descendants it waited for).

1. ``python -m evalcore evaluate --run RUN --qrels QRELS --metrics ndcg@10,mrr@10,recall@100 --per-query OUT``
   (oblivious, expected, min, max), ``--repeats`` times.
2. pytrec_eval: parquet -> dict of dicts -> ``ndcg_cut.10, recip_rank, recall.100`` (oblivious only).
3. ranx: ``Qrels/Run.from_df`` -> ``ndcg@10, mrr@10, recall@100`` (oblivious only; numba JIT included).
4. trm (tie-aware-retrieval-metrics): lists of lists on a query-aligned slice of ``--trm-rows`` rows (it
   is slow); the time per million rows is extrapolated to the full size (labelled as such). It only
   sees the candidates, so unretrieved relevant documents are invisible to it.
5. DuckDB SQL with ``row_number() OVER (PARTITION BY qid ORDER BY score DESC)`` (no tie-break), run
   ``--repeats`` times on the grouped run and on ``run_ungrouped.parquet`` (the same rows shuffled within
   1M-row blocks, 64k-row groups, as a merged/sharded run looks): the motivating failure is that its
   values change between repeats on tied scores (on the ungrouped layout; on the grouped file DuckDB's
   tie order happens to follow the file order). With DuckDB, evalcore also runs once on the ungrouped
   copy and must give identical per-query values.

Checks: evalcore ``oblivious`` (docid-desc) equals pytrec_eval per query (abs 1e-9; pytrec_eval's
``recip_rank`` has no cutoff, so it is compared as ``rr if rr >= 1/10 else 0``), evalcore per-query output
is identical across repeats and on the ungrouped copy, and DuckDB/ranx oblivious values lie in evalcore's
[min, max].
Exit code 1 if evalcore fails or a correctness check fails (timings never fail the run).

Output: a markdown table (tool | rows | wall s | peak RSS MB | rows/s | notes) plus the targets,
printed and written to ``bench/out/bench_metrics.md`` (``--out``); ``--json`` writes the raw results.
MB = 10^6 bytes; the memory target 1.5 GB is read as 1.5e9 bytes.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve()
METRICS = ("ndcg@10", "mrr@10", "recall@100")
ALL_PEERS = ("pytrec_eval", "ranx", "trm", "duckdb")
DOC_MODULUS = 1_000_003  # prime: (a*j + b) mod p is injective in j < p for a != 0 -> unique docids per query
TOL = 1e-9
# rough peak-memory models (bytes per run row) used to skip peers that cannot fit (measured):
# pytrec_eval 2.3 GB at 10M and 10.5 GB at 50M, ranx 5 GB at 10M.
PEER_BYTES_PER_ROW = {"pytrec_eval": 240, "ranx": 520}
PEER_MAX_ROWS = {"pytrec_eval": 60_000_000, "ranx": 30_000_000}  # 100M does not fit in 24 GB for them


# ----------------------------------------------------------------------------------------------- sizes

def parse_size(text: str, candidates: int) -> tuple[int, int]:
    """``10M`` -> (10_000 queries, 1_000 candidates); ``200x50`` -> (200, 50); ``10k`` -> rows / candidates."""
    t = text.strip().lower()
    if "x" in t:
        q, c = t.split("x", 1)
        return int(parse_count(q)), int(parse_count(c))
    rows = parse_count(t)
    if rows % candidates:
        raise argparse.ArgumentTypeError(f"size {text!r} is not a multiple of --candidates {candidates}")
    return rows // candidates, candidates


def parse_count(t: str) -> int:
    mult = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}
    t = t.strip().lower().replace("_", "")
    if t and t[-1] in mult:
        return int(float(t[:-1]) * mult[t[-1]])
    return int(t)


def human(n: int) -> str:
    for div, suf in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= div and n % (div // 1000) == 0:
            v = n / div
            return f"{v:g}{suf}"
    return str(n)


# ----------------------------------------------------------------------------------------------- data

def generate(dataset: Path, n_queries: int, n_cands: int, trm_rows: int, seed: int) -> dict:
    """Write run.parquet, run_ungrouped.parquet, qrels.parquet and trm_slice.parquet into ``dataset``.

    ``run_ungrouped.parquet`` holds the same rows, shuffled within each 1M-row block (so a query's rows
    are spread over ~16 row groups of 64k rows): the layout of a merged or sharded run. Memory stays
    bounded. Existing files are reused when the manifest matches.
    """
    manifest_path = dataset / "manifest.json"
    want = {"n_queries": n_queries, "n_candidates": n_cands, "trm_rows": trm_rows, "seed": seed, "version": 2}
    if manifest_path.exists():
        have = json.loads(manifest_path.read_text())
        if {k: have.get(k) for k in want} == want and all((dataset / f).exists() for f in have["files"].values()):
            print(f"[gen] reusing {dataset}", flush=True)
            return have
    import ml_dtypes
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if n_cands > DOC_MODULUS:
        raise SystemExit(f"--candidates must be <= {DOC_MODULUS}")
    dataset.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    run_schema = pa.schema([("qid", pa.string()), ("docid", pa.string()), ("score", pa.float64())])
    qrels_schema = pa.schema([("qid", pa.string()), ("docid", pa.string()), ("relevance", pa.int64())])
    chunk_q = max(1, 1_000_000 // n_cands)
    trm_queries = max(1, min(n_queries, trm_rows // n_cands))
    run_w = pq.ParquetWriter(dataset / "run.parquet.tmp", run_schema)
    qrels_w = pq.ParquetWriter(dataset / "qrels.parquet.tmp", qrels_schema)
    slice_w = pq.ParquetWriter(dataset / "trm_slice.parquet.tmp", run_schema)
    shuf_w = pq.ParquetWriter(dataset / "run_ungrouped.parquet.tmp", run_schema)
    shuf_rng = np.random.default_rng([seed, 1])
    n_rel_total = 0
    n_judged = 0
    cols = np.arange(n_cands, dtype=np.int64)
    for q0 in range(0, n_queries, chunk_q):
        q1 = min(n_queries, q0 + chunk_q)
        cq = q1 - q0
        qnum = np.arange(q0, q1, dtype=np.int64)
        qid_str = pc.binary_join_element_wise("q", pc.cast(pa.array(qnum), pa.string()), "")
        # docids: d<(a_q * j + b_q) mod p>, distinct within a query, uncorrelated with the score
        a = rng.integers(1, DOC_MODULUS, size=cq, dtype=np.int64)
        b = rng.integers(0, DOC_MODULUS, size=cq, dtype=np.int64)
        docnum = (a[:, None] * cols[None, :] + b[:, None]) % DOC_MODULUS
        # judged candidates: the first n_rel of 12 random positions are relevant (grade 1-2), 5 more grade 0
        pos = np.argpartition(rng.random((cq, n_cands)), min(11, n_cands - 1), axis=1)[:, : min(12, n_cands)]
        n_rel = np.minimum(rng.integers(3, 8, size=cq), pos.shape[1])
        n_nonrel = np.clip(pos.shape[1] - n_rel, 0, 5)
        k = np.arange(pos.shape[1])[None, :]
        is_rel = k < n_rel[:, None]
        is_judged = k < (n_rel + n_nonrel)[:, None]
        grade = np.where(is_rel, rng.integers(1, 3, size=pos.shape), 0)
        logits = rng.standard_normal((cq, n_cands))
        rows_idx = np.repeat(np.arange(cq), pos.shape[1]).reshape(pos.shape)
        logits[rows_idx, pos] += 1.2 * grade  # relevant documents score higher on average
        scores = (1.0 / (1.0 + np.exp(-logits))).astype(ml_dtypes.bfloat16).astype(np.float64)
        qid_rows = pc.take(qid_str, pa.array(np.repeat(np.arange(cq), n_cands)))
        docid = pc.binary_join_element_wise("d", pc.cast(pa.array(docnum.ravel()), pa.string()), "")
        table = pa.table([qid_rows, docid, pa.array(scores.ravel())], schema=run_schema)
        run_w.write_table(table, row_group_size=1_000_000)
        shuf_w.write_table(table.take(pa.array(shuf_rng.permutation(table.num_rows))), row_group_size=1 << 16)
        if q0 < trm_queries:
            slice_w.write_table(table.slice(0, (min(q1, trm_queries) - q0) * n_cands))
        # qrels rows: judged candidates + one relevant unretrieved document u<q>
        sel_r, sel_c = np.nonzero(is_judged)
        j_docnum = docnum[sel_r, pos[sel_r, sel_c]]
        j_docid = pc.binary_join_element_wise("d", pc.cast(pa.array(j_docnum), pa.string()), "")
        u_docid = pc.binary_join_element_wise("u", pc.cast(pa.array(qnum), pa.string()), "")
        u_grade = rng.integers(1, 3, size=cq)
        qrels = pa.table([
            pa.concat_arrays([pc.take(qid_str, pa.array(sel_r)), qid_str]),
            pa.concat_arrays([j_docid, u_docid]),
            pa.array(np.concatenate([grade[sel_r, sel_c], u_grade]).astype(np.int64)),
        ], schema=qrels_schema)
        # keep qrels grouped by qid (stable sort on the query index)
        order = np.argsort(np.concatenate([sel_r, np.arange(cq)]), kind="stable")
        qrels_w.write_table(qrels.take(pa.array(order)))
        n_rel_total += int(n_rel.sum()) + cq
        n_judged += qrels.num_rows
        if (q0 // chunk_q) % 10 == 0:
            print(f"[gen] {q1:,}/{n_queries:,} queries", flush=True)
    for w in (run_w, qrels_w, slice_w, shuf_w):
        w.close()
    files = {"run": "run.parquet", "qrels": "qrels.parquet", "trm_slice": "trm_slice.parquet",
             "run_ungrouped": "run_ungrouped.parquet"}
    for f in files.values():
        os.replace(dataset / (f + ".tmp"), dataset / f)
    manifest = dict(want, files=files, rows=n_queries * n_cands, trm_slice_rows=trm_queries * n_cands,
                    qrels_rows=n_judged, relevant=n_rel_total, gen_seconds=round(time.perf_counter() - t0, 1),
                    run_bytes=(dataset / "run.parquet").stat().st_size)
    manifest_path.write_text(json.dumps(manifest, indent=2))
    print(f"[gen] wrote {manifest['rows']:,} rows in {manifest['gen_seconds']} s "
          f"({manifest['run_bytes'] / 1e6:.0f} MB parquet)", flush=True)
    return manifest


# ----------------------------------------------------------------------------------------------- timing

def run_timed(cmd: list[str], log: Path, timeout: float) -> dict:
    """Run ``cmd`` as a child; wall seconds and the child's own peak RSS (os.wait4 rusage)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    timed_out = threading.Event()
    with open(log, "wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO, env=env,
                                start_new_session=True)

        def kill() -> None:
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_bytes": usage.ru_maxrss * 1024,
            "rc": proc.returncode,
            "timed_out": timed_out.is_set(), "log": str(log)}


def tail(path: str, n: int = 15) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


# ----------------------------------------------------------------------------------------------- children
# Each child is this file run as ``python bench_metrics.py _child TOOL ...``; it imports only what the tool
# needs (heavy imports inside the functions), so start-up cost is the tool's own.

def child_pytrec_eval(run: str, qrels: str, out: str) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pytrec_eval

    def dict_of_dicts(path: str, value: str) -> dict:
        t = pq.read_table(path, columns=["qid", "docid", value])
        codes = t.column("qid").combine_chunks().dictionary_encode()
        idx = codes.indices.to_numpy()
        starts = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
        if len(starts) != len(codes.dictionary):
            raise SystemExit(f"{path}: rows are not grouped by qid")
        ends = np.r_[starts[1:], len(idx)]
        qids = codes.dictionary.to_pylist()
        docs = t.column("docid").to_pylist()
        vals = t.column(value).to_pylist()
        return {qids[idx[s]]: dict(zip(docs[s:e], vals[s:e])) for s, e in zip(starts.tolist(), ends.tolist())}

    qrels_d = dict_of_dicts(qrels, "relevance")
    run_d = dict_of_dicts(run, "score")
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_d, {"ndcg_cut.10", "recip_rank", "recall.100"})
    res = evaluator.evaluate(run_d)
    del run_d
    qids = list(res)
    pq.write_table(pa.table({
        "qid": qids,
        "ndcg_cut_10": [res[q]["ndcg_cut_10"] for q in qids],
        "recip_rank": [res[q]["recip_rank"] for q in qids],
        "recall_100": [res[q]["recall_100"] for q in qids],
    }), out)


def child_ranx(run: str, qrels: str, out: str) -> None:
    import pandas as pd
    from ranx import Qrels, Run, evaluate

    qdf = pd.read_parquet(qrels)
    qdf = qdf.astype({"qid": object, "docid": object, "relevance": "int64"})
    rdf = pd.read_parquet(run).astype({"qid": object, "docid": object, "score": "float64"})
    qr = Qrels.from_df(qdf, q_id_col="qid", doc_id_col="docid", score_col="relevance")
    del qdf
    rn = Run.from_df(rdf, q_id_col="qid", doc_id_col="docid", score_col="score")
    del rdf
    evaluate(qr, rn, list(METRICS), save_results_in_run=True)
    names = list(METRICS)
    qids = list(rn.scores[names[0]].keys())
    pd.DataFrame({"qid": qids, **{m: [rn.scores[m][q] for q in qids] for m in names}}).to_parquet(out, index=False)


def child_trm(run: str, qrels: str, out: str) -> None:
    import numpy as np
    import pandas as pd
    import trm

    rdf = pd.read_parquet(run)
    qdf = pd.read_parquet(qrels)
    qdf = qdf[qdf["relevance"] > 0]
    rel = rdf.merge(qdf, on=["qid", "docid"], how="left", sort=False)["relevance"].fillna(0).to_numpy() > 0
    qid = rdf["qid"].to_numpy()
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    ends = np.r_[starts[1:], len(qid)]
    sc = rdf["score"].to_numpy()
    scores = [sc[s:e].tolist() for s, e in zip(starts, ends)]
    is_rel = [rel[s:e].tolist() for s, e in zip(starts, ends)]
    qids = qid[starts].tolist()
    t0 = time.perf_counter()
    frames = []
    for name, metric, k in (("ndcg@10", "ndcg", 10), ("mrr@10", "mrr", 10), ("recall@100", "recall", 100)):
        res = trm.evaluate(scores, is_rel, metrics=[metric], k_list=[k]).per_query[metric][k]
        frames.append(pd.DataFrame({
            "qid": qids, "metric": name,
            "expected": [r.expected for r in res], "min": [r.minimum for r in res],
            "max": [r.maximum for r in res], "oblivious": [r.oblivious for r in res]}))
    print(f"trm.evaluate seconds: {time.perf_counter() - t0:.3f}")
    pd.concat(frames, ignore_index=True).to_parquet(out, index=False)


DUCKDB_SQL = """
COPY (
WITH ranked AS (
    SELECT qid, docid, row_number() OVER (PARTITION BY qid ORDER BY score DESC) AS rnk
    FROM read_parquet('{run}')
),
qr AS (SELECT qid, docid, relevance FROM read_parquet('{qrels}') WHERE relevance > 0),
hits AS (SELECT r.qid, r.rnk, q.relevance FROM ranked r JOIN qr q USING (qid, docid) WHERE r.rnk <= 100),
ideal AS (
    SELECT qid, sum(relevance / log2(rn + 1)) AS idcg
    FROM (SELECT qid, relevance,
                 row_number() OVER (PARTITION BY qid ORDER BY relevance DESC) AS rn FROM qr)
    WHERE rn <= 10 GROUP BY qid
),
nrel AS (SELECT qid, count(*) AS n FROM qr GROUP BY qid),
per AS (
    SELECT qid,
           sum(CASE WHEN rnk <= 10 THEN relevance / log2(rnk + 1) ELSE 0 END) AS dcg,
           max(CASE WHEN rnk <= 10 THEN 1.0 / rnk ELSE 0 END) AS rr,
           count(*) AS hits100
    FROM hits GROUP BY qid
)
SELECT n.qid,
       coalesce(p.dcg, 0) / i.idcg AS "ndcg@10",
       coalesce(p.rr, 0)::DOUBLE AS "mrr@10",
       coalesce(p.hits100, 0) / n.n AS "recall@100"
FROM nrel n JOIN ideal i USING (qid) LEFT JOIN per p USING (qid)
WHERE n.qid IN (SELECT DISTINCT qid FROM read_parquet('{run}'))
ORDER BY n.qid
) TO '{out}' (FORMAT parquet)
"""


def child_duckdb(run: str, qrels: str, out: str) -> None:
    import duckdb

    con = duckdb.connect()
    con.execute(DUCKDB_SQL.format(run=run.replace("'", "''"), qrels=qrels.replace("'", "''"),
                                  out=out.replace("'", "''")))
    threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    print(f"duckdb {duckdb.__version__} threads={threads}")


CHILDREN = {"pytrec_eval": child_pytrec_eval, "ranx": child_ranx, "trm": child_trm, "duckdb": child_duckdb}


# ----------------------------------------------------------------------------------------------- checks

def load_evalcore(path: str):
    import pandas as pd

    df = pd.read_parquet(path)
    df["qid"] = df["qid"].astype(str)
    return df


def wide(df, value: str):
    out = df.pivot(index="qid", columns="metric", values=value)
    out.columns = [str(c) for c in out.columns]
    return out


def check_pytrec(ev, pt_path: str) -> dict:
    import numpy as np
    import pandas as pd

    pt = pd.read_parquet(pt_path)
    pt["qid"] = pt["qid"].astype(str)
    pt = pt.set_index("qid")
    rr = pt["recip_rank"].to_numpy()
    ref = pd.DataFrame({
        "ndcg@10": pt["ndcg_cut_10"].to_numpy(),
        # trec_eval's recip_rank has no cutoff: rank <= 10 <=> 1/rank >= 1/10 (same double division)
        "mrr@10": np.where(rr >= 1.0 / 10, rr, 0.0),
        "recall@100": pt["recall_100"].to_numpy(),
    }, index=pt.index)
    obl = wide(ev, "oblivious")
    common = obl.index.intersection(ref.index)
    out = {"queries_evalcore": int(len(obl)), "queries_pytrec_eval": int(len(ref)), "queries_compared": int(len(common))}
    worst = 0.0
    mismatches = {}
    for m in METRICS:
        d = np.abs(obl.loc[common, m].to_numpy() - ref.loc[common, m].to_numpy())
        worst = max(worst, float(d.max()) if len(d) else 0.0)
        mismatches[m] = int((d > TOL).sum())
    out.update(max_abs_diff=worst, mismatches=mismatches,
               equal=bool(len(common) == len(obl) == len(ref) and sum(mismatches.values()) == 0))
    return out


def check_within(ev, other, label: str) -> dict:
    """How many of ``other``'s (oblivious) values differ from evalcore's oblivious / fall outside [min, max]."""
    import numpy as np

    lo, hi, obl = wide(ev, "min"), wide(ev, "max"), wide(ev, "oblivious")
    other = other.set_index("qid")
    common = obl.index.intersection(other.index)
    res = {"queries_compared": int(len(common))}
    for m in METRICS:
        v = other.loc[common, m].to_numpy(dtype=float)
        res[m] = {
            "differs_from_evalcore_oblivious": int((np.abs(v - obl.loc[common, m].to_numpy()) > TOL).sum()),
            "outside_min_max": int(((v < lo.loc[common, m].to_numpy() - TOL)
                                    | (v > hi.loc[common, m].to_numpy() + TOL)).sum()),
        }
    return res


def check_trm(ev, trm_path: str) -> dict:
    """trm vs evalcore on the slice. Only mrr@10 conventions match here (binary, only the first relevant
    counts); nDCG differs (trm: binary gains, ideal from candidates only), recall differs (trm's
    denominator is the relevant *retrieved* documents)."""
    import numpy as np
    import pandas as pd

    t = pd.read_parquet(trm_path)
    t["qid"] = t["qid"].astype(str)
    res = {}
    for m in METRICS:
        tm = t[t["metric"] == m].set_index("qid")
        e = ev[ev["metric"] == m].set_index("qid")
        common = tm.index.intersection(e.index)
        res[m] = {k: float(np.abs(tm.loc[common, k].to_numpy() - e.loc[common, k].to_numpy()).max())
                  for k in ("expected", "min", "max")}
        res[m]["queries"] = int(len(common))
    return res


def compare_repeats(frames: list) -> dict:
    """Number of queries whose values (any metric) differ between repeat 1 and repeat i: at all
    (``changed_vs_first``, includes last-bit differences from a parallel float sum) and by more than
    1e-9 (``changed_gt_tol``: a different ranking of tied documents); largest change per metric."""
    import numpy as np

    base = frames[0].set_index("qid").sort_index()
    changed, changed_tol, max_change = [], [], {m: 0.0 for m in METRICS}
    for f in frames[1:]:
        o = f.set_index("qid").sort_index()
        if not base.index.equals(o.index):
            changed.append(-1)
            changed_tol.append(-1)
            continue
        any_diff = np.zeros(len(base), dtype=bool)
        big_diff = np.zeros(len(base), dtype=bool)
        for m in METRICS:
            d = np.abs(base[m].to_numpy(dtype=float) - o[m].to_numpy(dtype=float))
            any_diff |= d > 0
            big_diff |= d > TOL
            max_change[m] = max(max_change[m], float(d.max()) if len(d) else 0.0)
        changed.append(int(any_diff.sum()))
        changed_tol.append(int(big_diff.sum()))
    return {"changed_vs_first": changed, "changed_gt_tol": changed_tol, "max_change": max_change,
            "queries": int(len(base))}


# ----------------------------------------------------------------------------------------------- driver

def mem_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def bench_size(spec: str, args, work: Path) -> dict:
    n_q, n_c = parse_size(spec, args.candidates)
    rows = n_q * n_c
    label = f"{human(rows)} rows ({n_q:,} q x {n_c:,})"
    print(f"\n=== {label} ===", flush=True)
    ds = work / f"data_{n_q}x{n_c}_seed{args.seed}"
    man = generate(ds, n_q, n_c, args.trm_rows, args.seed)
    run, qrels, trm_slice, run_ungrouped = (str(ds / man["files"][k])
                                            for k in ("run", "qrels", "trm_slice", "run_ungrouped"))
    outdir = work / f"out_{n_q}x{n_c}"
    outdir.mkdir(exist_ok=True)
    result = {"size": spec, "label": label, "rows": rows, "queries": n_q, "candidates": n_c,
              "loadavg_start": os.getloadavg(), "tools": {}, "checks": {}, "notes": []}
    py = sys.executable

    def run_tool(name: str, cmd_for, n_rep: int) -> list[dict]:
        runs = []
        for i in range(n_rep):
            out = outdir / f"{name}_{i}.parquet"
            out.unlink(missing_ok=True)
            r = run_timed(cmd_for(out), outdir / f"{name}_{i}.log", args.timeout)
            r["out"] = str(out)
            print(f"[{name} #{i + 1}] wall {r['wall']:.2f} s, cpu {r['cpu']:.2f} s, "
                  f"peak {r['peak_bytes'] / 1e6:.0f} MB, rc {r['rc']}", flush=True)
            if r["rc"] != 0:
                print(tail(r["log"]), flush=True)
            runs.append(r)
        return runs

    def evalcore_cmd(src: str):
        return lambda out: [py, "-m", "evalcore", "evaluate", "--run", src, "--qrels", qrels,
                            "--metrics", ",".join(METRICS), "--per-query", str(out)]

    def child_cmd(peer: str, src: str):
        return lambda out: [py, str(THIS), "_child", peer, src, qrels, str(out)]

    # 1. evalcore, --repeats times
    ev_runs = run_tool("evalcore", evalcore_cmd(run), args.repeats)
    result["tools"]["evalcore"] = {"runs": ev_runs, "rows": rows}
    good = [r for r in ev_runs if r["rc"] == 0]
    ev_ok = bool(good)  # checks use the first successful run; a failed repeat fails the benchmark
    ev = load_evalcore(good[0]["out"]) if ev_ok else None
    if len(good) == len(ev_runs):
        blobs = [Path(r["out"]).read_bytes() for r in ev_runs]
        byte_identical = all(b == blobs[0] for b in blobs[1:])
        if byte_identical:
            identical = True
        else:
            others = [load_evalcore(r["out"]) for r in ev_runs[1:]]
            identical = all(o.equals(ev) for o in others)
        result["checks"]["evalcore_repeat"] = {"byte_identical": byte_identical, "identical": identical,
                                               "repeats": len(ev_runs)}

    # 1b. with DuckDB: evalcore once on the ungrouped copy -> the same per-query values
    if "duckdb" in args.peers:
        runs = run_tool("evalcore_ungrouped", evalcore_cmd(run_ungrouped), 1)
        result["tools"]["evalcore_ungrouped"] = {"runs": runs, "rows": rows}
        if ev_ok and runs[0]["rc"] == 0:
            key = ["qid", "metric"]
            a = ev.sort_values(key, kind="stable").reset_index(drop=True)
            b = load_evalcore(runs[0]["out"]).sort_values(key, kind="stable").reset_index(drop=True)
            result["checks"]["evalcore_ungrouped_equal"] = bool(a.equals(b))

    # 2.-5. peers
    import pandas as pd

    avail = mem_available()
    for peer in args.peers:
        if peer in ("pytrec_eval", "ranx"):
            need = PEER_BYTES_PER_ROW[peer] * rows
            why = None
            if rows > PEER_MAX_ROWS[peer]:
                why = f"skipped: {human(rows)} rows needs ~{need / 1e9:.0f} GB for {peer}; does not fit in this machine's memory"
            elif avail is not None and need > 0.85 * avail:
                why = (f"skipped: needs ~{need / 1e9:.1f} GB, only {avail / 1e9:.1f} GB available now")
            if why and not args.force:
                print(f"[{peer}] {why} (--force to run anyway)", flush=True)
                result["tools"][peer] = {"skipped": why}
                continue
        if peer == "duckdb":
            variants = [("duckdb", run), ("duckdb_ungrouped", run_ungrouped)]
        else:
            variants = [(peer, trm_slice if peer == "trm" else run)]
        for name, src in variants:
            runs = run_tool(name, child_cmd(peer, src), args.repeats if peer == "duckdb" else 1)
            result["tools"][name] = {"runs": runs, "rows": man["trm_slice_rows"] if peer == "trm" else rows}
            if not all(r["rc"] == 0 for r in runs):
                continue
            if name == "pytrec_eval" and ev_ok:
                result["checks"]["evalcore_vs_pytrec_eval"] = check_pytrec(ev, runs[0]["out"])
            elif name == "ranx" and ev_ok:
                rx = pd.read_parquet(runs[0]["out"])
                rx["qid"] = rx["qid"].astype(str)
                result["checks"]["ranx_vs_evalcore"] = check_within(ev, rx, "ranx")
            elif name == "trm":
                log = Path(runs[0]["log"]).read_text(errors="replace")
                for line in log.splitlines():
                    if line.startswith("trm.evaluate seconds:"):
                        result["tools"]["trm"]["evaluate_seconds"] = float(line.split(":")[1])
                if ev_ok:
                    result["checks"]["trm_vs_evalcore"] = check_trm(ev, runs[0]["out"])
            elif peer == "duckdb":
                frames = [pd.read_parquet(r["out"]) for r in runs]
                for f in frames:
                    f["qid"] = f["qid"].astype(str)
                result["checks"][f"{name}_repeats"] = compare_repeats(frames)
                if ev_ok:
                    result["checks"][f"{name}_vs_evalcore"] = [check_within(ev, f, name) for f in frames]
    result["loadavg_end"] = os.getloadavg()
    return result


def fmt_rate(rows: int, wall: float) -> str:
    r = rows / wall
    return f"{r / 1e6:.2f}M" if r >= 1e6 else f"{r / 1e3:.0f}k" if r >= 1e4 else f"{r:.0f}"


def render(result: dict) -> tuple[str, dict]:
    """Markdown for one size + the target verdicts."""
    rows = result["rows"]
    tools, checks = result["tools"], result["checks"]
    lines = [f"### {result['label']}", "",
             f"load average at start {result['loadavg_start'][0]:.2f}, at end {result['loadavg_end'][0]:.2f} "
             f"(1-min; {os.cpu_count()} cores shared)", "",
             "| tool | rows | wall s | peak RSS MB | rows/s | notes |", "|---|---:|---:|---:|---:|---|"]
    verdict = {}

    def stats(runs):
        walls = [r["wall"] for r in runs]
        return statistics.median(walls), max(r["peak_bytes"] for r in runs) / 1e6, walls

    def cpu_note(runs) -> str:
        return f"cpu (user+sys) {statistics.median(r['cpu'] for r in runs):.2f} s; "

    cpu = {}

    ev_wall = ev_peak = None
    if "evalcore" in tools:
        all_runs = tools["evalcore"]["runs"]
        runs = [r for r in all_runs if r["rc"] == 0]
        failed = [r for r in all_runs if r["rc"] != 0]
        if runs:
            ev_wall, ev_peak, walls = stats(runs)
            cpu["evalcore"] = statistics.median(r["cpu"] for r in runs)
            rep = checks.get("evalcore_repeat", {})
            note = cpu_note(runs) + (f"median of {len(walls)} ({', '.join(f'{w:.2f}' for w in walls)}); tie-aware "
                    f"oblivious/expected/min/max; repeats "
                    + ("byte-identical" if rep.get("byte_identical") else
                       "identical frames" if rep.get("identical") else
                       "not compared" if failed else "DIFFER"))
            if failed:
                note += (f"; **{len(failed)} of {len(all_runs)} runs FAILED** (rc {failed[0]['rc']}, "
                         f"log {failed[0]['log']})")
            lines.append(f"| evalcore | {human(rows)} | {ev_wall:.2f} | {ev_peak:.0f} | {fmt_rate(rows, ev_wall)} | {note} |")
        else:
            bad = failed[0]
            lines.append(f"| evalcore | {human(rows)} | - | - | - | FAILED rc={bad['rc']} (log {bad['log']}) |")
    pt_wall = None
    labels = {"evalcore_ungrouped": "evalcore, ungrouped input", "duckdb_ungrouped": "duckdb, ungrouped input"}
    for peer in ("evalcore_ungrouped", "pytrec_eval", "ranx", "trm", "duckdb", "duckdb_ungrouped"):
        if peer not in tools:
            continue
        t = tools[peer]
        label = labels.get(peer, peer)
        if "skipped" in t:
            lines.append(f"| {label} | {human(rows)} | - | - | - | {t['skipped']} |")
            continue
        runs = t["runs"]
        if not all(r["rc"] == 0 for r in runs):
            bad = next(r for r in runs if r["rc"] != 0)
            why = "timed out" if bad["timed_out"] else f"rc={bad['rc']}"
            lines.append(f"| {label} | {human(t['rows'])} | - | - | - | FAILED {why} (log {bad['log']}) |")
            continue
        wall, peak, walls = stats(runs)
        cpu[peer] = statistics.median(r["cpu"] for r in runs)
        note = ""
        if peer == "pytrec_eval":
            pt_wall = wall
            c = checks.get("evalcore_vs_pytrec_eval")
            note = "oblivious only; dict build + evaluate"
            if c:
                note += (f"; evalcore oblivious == pytrec_eval on {c['queries_compared']:,} queries"
                         if c["equal"] else f"; MISMATCH vs evalcore {c['mismatches']} (max |d| {c['max_abs_diff']:.3g})")
        elif peer == "ranx":
            note = "oblivious only (numba JIT incl.)"
            c = checks.get("ranx_vs_evalcore")
            if c:
                diff = {m: c[m]["differs_from_evalcore_oblivious"] for m in METRICS}
                out = sum(c[m]["outside_min_max"] for m in METRICS)
                note += f"; queries differing from evalcore docid-desc: {diff}; outside evalcore [min,max]: {out}"
        elif peer == "trm":
            per_m = wall / (t["rows"] / 1e6)
            eval_s = t.get("evaluate_seconds")
            extrap = per_m * rows / 1e6
            note = (f"measured on a {human(t['rows'])}-row slice: {per_m:.2f} s per 1M rows as a process"
                    + (f", {eval_s / (t['rows'] / 1e6):.2f} s per 1M rows in trm.evaluate alone" if eval_s else "")
                    + f"; **extrapolated** to {human(rows)} rows: ~{extrap:.0f} s; sees candidates only")
            if eval_s:
                verdict["trm_eval_s_per_M"] = eval_s / (t["rows"] / 1e6)
            c = checks.get("trm_vs_evalcore")
            if c:
                m = c["mrr@10"]
                note += (f"; mrr@10 expected/min/max vs evalcore max |d| "
                         f"{max(m['expected'], m['min'], m['max']):.2g}")
            verdict["trm_s_per_M"] = per_m
        elif peer == "evalcore_ungrouped":
            eq = checks.get("evalcore_ungrouped_equal")
            note = ("same rows shuffled within 1M-row blocks (64k-row groups); per-query values "
                    + ("identical to the grouped run" if eq else "**DIFFER from the grouped run**" if eq is False
                       else "not compared"))
        elif peer.startswith("duckdb"):
            c = checks.get(f"{peer}_repeats", {})
            ch, big = c.get("changed_vs_first", []), c.get("changed_gt_tol", [])
            mx = c.get("max_change", {})
            note = (f"median of {len(walls)} ({', '.join(f'{w:.2f}' for w in walls)}); no tie-break"
                    + ("; same rows shuffled within 1M-row blocks" if peer == "duckdb_ungrouped" else "")
                    + f"; **queries whose values changed vs run 1: {big} of {c.get('queries', 0):,}** (by > {TOL:g})")
            if ch != big:
                note += f", {ch} counting last-bit float-sum differences"
            if any(mx.values()):
                note += "; largest change " + ", ".join(f"{m} {v:.3g}" for m, v in mx.items() if v)
            w = checks.get(f"{peer}_vs_evalcore")
            if w:
                differ = [sum(x[m]["differs_from_evalcore_oblivious"] for m in METRICS) for x in w]
                outside = sum(x[m]["outside_min_max"] for x in w for m in METRICS)
                note += f"; (query, metric) values != evalcore docid-desc per run: {differ}; outside evalcore [min,max]: {outside}"
        note = cpu_note(runs) + note
        lines.append(f"| {label} | {human(t['rows'])} | {wall:.2f} | {peak:.0f} | {fmt_rate(t['rows'], wall)} | {note} |")

    # targets
    lines += ["", "| target | value | met? |", "|---|---:|:---:|"]
    if ev_wall is not None:
        if pt_wall is not None:
            ratio = ev_wall / pt_wall
            verdict["wall_vs_pytrec_eval"] = ratio
            lines.append(f"| evalcore wall <= 1/5 of pytrec_eval | {ratio:.3f} (= 1/{1 / ratio:.1f}) | "
                         f"{'yes' if ratio <= 0.2 else 'no'} |")
            if cpu.get("pytrec_eval"):
                cr = cpu["evalcore"] / cpu["pytrec_eval"]
                verdict["cpu_vs_pytrec_eval"] = cr
                lines.append(f"| (informative) evalcore cpu time / pytrec_eval cpu time | {cr:.3f} (= 1/{1 / cr:.1f}) | "
                             f"{'yes' if cr <= 0.2 else 'no'} |")
        if "trm_s_per_M" in verdict:
            speed = verdict["trm_s_per_M"] / (ev_wall / (rows / 1e6))
            verdict["speedup_vs_trm_per_row"] = speed
            lines.append(f"| evalcore >= 10x faster than trm per row (whole processes) | {speed:.3g}x | "
                         f"{'yes' if speed >= 10 else 'no'} |")
            if "trm_eval_s_per_M" in verdict:
                strict = verdict["trm_eval_s_per_M"] / (ev_wall / (rows / 1e6))
                verdict["speedup_vs_trm_evaluate_only"] = strict
                lines.append(f"| same, trm.evaluate alone vs evalcore whole process (stricter) | {strict:.3g}x | "
                             f"{'yes' if strict >= 10 else 'no'} |")
        verdict["peak_mb"] = ev_peak
        lines.append(f"| evalcore peak RSS <= 1.5 GB | {ev_peak:.0f} MB | {'yes' if ev_peak <= 1500 else 'no'} |")
        rep = checks.get("evalcore_repeat", {"repeats": len(runs)})
        verdict["identical_on_repeat"] = rep.get("identical")
        lines.append(f"| identical on every repeat ({rep.get('repeats', 0)} runs) | "
                     f"{'byte-identical' if rep.get('byte_identical') else 'identical frames' if rep.get('identical') else 'not compared (a run failed)' if 'identical' not in rep else 'DIFFER'} | "
                     f"{'yes' if rep.get('identical') else 'no'} |")
        eq = checks.get("evalcore_ungrouped_equal")
        if eq is not None:
            lines.append(f"| same per-query values on a row-shuffled copy of the run | {eq} | {'yes' if eq else 'no'} |")
        c = checks.get("evalcore_vs_pytrec_eval")
        if c:
            lines.append(f"| oblivious (docid-desc) == pytrec_eval per query (abs {TOL:g}) | "
                         f"max abs diff {c['max_abs_diff']:.2g} on {c['queries_compared']:,} queries | "
                         f"{'yes' if c['equal'] else 'no'} |")
    return "\n".join(lines), verdict


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_child":
        tool, run, qrels, out = argv[1:5]
        CHILDREN[tool](run, qrels, out)
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10M",
                   help="comma-separated run sizes in rows (10M, 50M, 100M) or QUERIESxCANDIDATES (200x50)")
    p.add_argument("--candidates", type=int, default=1000, help="candidates per query for row-count sizes")
    p.add_argument("--peers", default=",".join(ALL_PEERS), help=f"comma-separated subset of {','.join(ALL_PEERS)}, or none")
    p.add_argument("--workdir", help="where data and outputs go (reused across invocations); default: a temp dir")
    p.add_argument("--keep", action="store_true", help="keep the default temp dir")
    p.add_argument("--repeats", type=int, default=3, help="evalcore and DuckDB runs per size (>= 2 to test repeats)")
    p.add_argument("--trm-rows", type=parse_count, default=1_000_000, help="rows of the trm slice (default 1M)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=3600, help="seconds per child process")
    p.add_argument("--force", action="store_true", help="run pytrec_eval/ranx even where they are expected not to fit")
    p.add_argument("--out", default=str(REPO / "bench" / "out" / "bench_metrics.md"), help="markdown report path")
    p.add_argument("--json", help="also write raw results as JSON here")
    args = p.parse_args(argv)
    args.peers = [] if args.peers.strip().lower() in ("", "none") else [x.strip() for x in args.peers.split(",")]
    bad = [x for x in args.peers if x not in ALL_PEERS]
    if bad:
        p.error(f"unknown peers {bad}; choose from {ALL_PEERS}")
    if args.repeats < 1:
        p.error("--repeats must be >= 1")
    sizes = [s for s in args.sizes.split(",") if s.strip()]
    for s in sizes:
        parse_size(s, args.candidates)

    tmp = None
    if args.workdir:
        work = Path(args.workdir).resolve()
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.mkdtemp(prefix="bench_metrics_")
        work = Path(tmp)
    print(f"workdir: {work}", flush=True)
    results, sections, verdicts = [], [], []
    try:
        for s in sizes:
            res = bench_size(s, args, work)
            md, verdict = render(res)
            res["verdict"] = verdict
            results.append(res)
            sections.append(md)
            verdicts.append(verdict)
            print("\n" + md + "\n", flush=True)
    finally:
        if tmp and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    import importlib.metadata as md_

    def ver(dist: str) -> str:
        try:
            return md_.version(dist)
        except md_.PackageNotFoundError:
            return "n/a"

    header = [
        "# evalcore metric benchmark", "",
        f"`{' '.join(['python', 'bench/bench_metrics.py', *argv])}`", "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.machine()}, {os.cpu_count()} cores, "
        f"{(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')) / 1e9:.0f} GB RAM; Python {platform.python_version()}; "
        + ", ".join(f"{d} {ver(d)}" for d in ("pytrec-eval-terrier", "ranx", "tie-aware-retrieval-metrics",
                                              "duckdb", "pyarrow", "numpy")),
        "",
        "Whole child processes (start-up + read parquet + evaluate + write per-query values); "
        "wall = elapsed time around the child, peak RSS = the child's ru_maxrss (MB = 10^6 bytes). "
        "Metrics ndcg@10, mrr@10, recall@100; scores bf16-rounded so ties are real.", "",
    ]
    report = "\n".join(header + sections) + "\n"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    print(f"report written to {out}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))

    failed = False
    for res in results:
        ev = res["tools"].get("evalcore", {}).get("runs", [])
        if not ev or any(r["rc"] != 0 for r in ev):
            failed = True
        if res["checks"].get("evalcore_repeat", {}).get("identical") is not True:
            failed = True
        c = res["checks"].get("evalcore_vs_pytrec_eval")
        if c is not None and not c["equal"]:
            failed = True
        if res["checks"].get("evalcore_ungrouped_equal") is False:
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
