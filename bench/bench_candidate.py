"""Benchmark of a candidate run of the shipped tasks: ``evalcore tasks evaluate`` against pytrec_eval on
the same run, both as whole child processes.

    python bench/bench_candidate.py [--data data] [--workdir /tmp/tiebreak-bench-candidate] [--repeats 2]

Runs (generated once, not timed), over every shipped RAR-b task (data/tasks):
- ``mcr``: every candidate of every query (125,741 rows), scores ``round(uniform, 2)`` (ties between candidates);
- ``full-pooled``: each query's top 100 of its task's pool (2.13M rows), scores ``round(uniform, 3)``;
each as one parquet with a ``task`` column, the layout the dashboard accepts too.

1. ``python -m evalcore tasks evaluate --setting S --candidate RUN --out ROWS.parquet``: reads and checks the
   run against the shipped inputs, evaluates every metric of the setting under every tie policy the shipped runs
   carry (oblivious, expected, min, max), writes the per-query rows.
2. pytrec_eval: the same parquet -> dict of dicts per task -> the same metrics (trec_eval names), oblivious only
   (trec_eval's tie-break = docid-desc), one evaluation per task.

Check: evalcore's docid-desc oblivious values equal pytrec_eval's per query (abs 1e-9; pytrec_eval has no MRR
cutoff: ``rr if rr >= 1/10 else 0``). Wall time around the child; peak RSS from ``os.wait4`` (the parent imports
only the standard library and does the generation and the check in children of their own, so a child's peak is
its own, not the parent's pages at fork). Output: a markdown table, printed and written to
``bench/out/bench_candidate.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TREC = {"p@1": "P_1", "ndcg@10": "ndcg_cut_10", "mrr@10": "recip_rank", "recall@100": "recall_100"}
PYTREC_CHILD = r'''
import json, sys, pandas as pd, pytrec_eval
run_path, qrels_path, setting, measures, out = sys.argv[1:6]
run = pd.read_parquet(run_path)
qrels = pd.read_parquet(qrels_path)
qrels = qrels[qrels["setting"] == setting]
results = {}
for task, part in run.groupby("task", sort=False):
    r = {}
    for q, d, s in zip(part["qid"], part["docid"], part["score"]):
        r.setdefault(q, {})[d] = float(s)
    truth = {}
    for q, d, g in qrels.loc[qrels["task"] == task, ["qid", "docid", "relevance"]].itertuples(index=False):
        truth.setdefault(q, {})[d] = int(g)
    values = pytrec_eval.RelevanceEvaluator(truth, set(measures.split(","))).evaluate(r)
    results[task] = values
json.dump(results, open(out, "w"))
'''


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of a child process; raises when it fails."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ,
                                                                                              "OMP_NUM_THREADS": "1"})
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed: {child.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss * 1024 / 1e6


def make_runs(data: Path, work: Path) -> dict[str, Path]:
    import numpy as np
    import pandas as pd

    from evalcore import candidate

    rng = np.random.default_rng(20)
    paths = {}
    for setting in candidate.SETTINGS:
        path = work / f"{setting}.parquet"
        paths[setting] = path
        if path.exists():
            continue
        inputs = candidate.task_inputs(data, "rar-b", setting)
        if setting == "mcr":
            frame = inputs.candidates[["task", "qid", "docid"]].assign(score=np.round(rng.random(len(inputs.candidates)), 2))
        else:
            parts = []
            for task in inputs.tasks:
                qids = inputs.queries.loc[inputs.queries["task"] == task, "qid"].to_numpy()
                docs = inputs.documents.loc[inputs.documents["task"] == task, "docid"].to_numpy()
                k = min(100, len(docs))
                picks = np.stack([rng.choice(len(docs), k, replace=False) for _ in qids])
                parts.append(pd.DataFrame({"task": task, "qid": np.repeat(qids, k), "docid": docs[picks.ravel()],
                                           "score": np.round(rng.random(len(qids) * k), 3)}))
            frame = pd.concat(parts, ignore_index=True)
        frame.to_parquet(path, index=False)
    return paths


def prepare(data: Path, work: Path) -> None:
    """(child) generate the runs; write what the parent needs to ``work/plan.json``."""
    import pyarrow.parquet as pq

    from evalcore import candidate

    runs = make_runs(data, work)
    plan = {setting: {"run": str(path), "rows": pq.ParquetFile(path).metadata.num_rows,
                      "metrics": list(candidate.SETTING_METRICS[setting]),
                      "policies": len(candidate.SETTING_TIE_POLICIES[setting])} for setting, path in runs.items()}
    (work / "plan.json").write_text(json.dumps(plan))


def check(rows_path: str, reference_path: str, metrics: list[str]) -> float:
    """(child) the largest per-query difference between evalcore's docid-desc oblivious values and pytrec_eval's."""
    import numpy as np
    import pandas as pd

    reference = json.loads(Path(reference_path).read_text())
    rows = pd.read_parquet(rows_path)
    rows = rows[rows["tie_policy"] == "docid-desc"]
    worst = 0.0
    for metric in metrics:
        part = rows[rows["metric"] == metric]
        theirs = np.array([reference[t].get(q, {}).get(TREC[metric], 0.0) for t, q in zip(part["task"], part["qid"])])
        if metric == "mrr@10":
            theirs = np.where(theirs >= 0.1, theirs, 0.0)
        worst = max(worst, float(np.abs(part["oblivious"].to_numpy() - theirs).max()))
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/tiebreak-bench-candidate"))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "bench_candidate.md")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)  # prepare | check ROWS REFERENCE METRICS
    args = parser.parse_args()
    if args.child:
        if args.child[0] == "prepare":
            prepare(args.data, args.workdir)
        else:
            print(check(args.child[1], args.child[2], args.child[3].split(",")))
        return 0
    args.workdir.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, __file__, "--data", str(args.data), "--workdir", str(args.workdir),
                    "--child", "prepare"], check=True)
    plan = json.loads((args.workdir / "plan.json").read_text())
    lines = ["| setting | tool | rows | wall s (best of %d) | peak RSS MB | what it computes |" % args.repeats,
             "|---|---|---|---|---|---|"]
    failures = 0
    for setting, step in plan.items():
        run, n_rows, metrics, policies = step["run"], step["rows"], step["metrics"], step["policies"]
        out = args.workdir / f"{setting}.rows.parquet"
        ours = []
        for _ in range(args.repeats):
            out.unlink(missing_ok=True)
            ours.append(timed([sys.executable, "-m", "evalcore", "tasks", "evaluate", "--data", str(args.data),
                               "--benchmark", "rar-b", "--setting", setting, "--candidate", str(run),
                               "--candidate-name", "bench", "--out", str(out)]))
        peer_out = args.workdir / f"{setting}.pytrec.json"
        peer = [timed([sys.executable, "-c", PYTREC_CHILD, str(run), str(args.data / "tasks" / "rar-b" / "qrels.parquet"),
                       setting, ",".join(TREC[m] for m in metrics), str(peer_out)]) for _ in range(args.repeats)]
        lines.append(f"| {setting} | evalcore tasks evaluate | {n_rows:,} | {min(w for w, _ in ours):.2f} | "
                     f"{max(m for _, m in ours):.0f} | {', '.join(metrics)}: oblivious under {policies} tie "
                     f"polic{'y' if policies == 1 else 'ies'}, expected, min, max; read + id checks |")
        lines.append(f"| {setting} | pytrec_eval | {n_rows:,} | {min(w for w, _ in peer):.2f} | "
                     f"{max(m for _, m in peer):.0f} | the same metrics, oblivious (docid-desc) only |")
        worst = float(subprocess.run([sys.executable, __file__, "--child", "check", str(out), str(peer_out),
                                      ",".join(metrics)], check=True, capture_output=True, text=True).stdout)
        failures += worst > 1e-9
        lines.append(f"| {setting} | check | | | | evalcore docid-desc = pytrec_eval per query: max abs diff {worst:.1e} |")
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
