"""Spark engine vs single-machine engine: rows/s on the same parquet run, and an estimate for 1B rows.

Not a test. For each size, two whole child processes on the same data (written by
``bench_metrics.generate``: N queries x 1,000 candidates, bf16-rounded scores, so real ties):

1. ``python -m evalcore evaluate --run RUN --qrels QRELS --per-query OUT.parquet`` (single machine);
2. ``python -m evalcore evaluate --engine spark --master MASTER ... --per-query OUT_DIR`` (Spark, local mode),
   plus, in a separate child, the same evaluation with the time split into session start-up and work.

Both write per-query values; the Spark output is compared with the single-machine output (bitwise on
expected/min/max/oblivious; exit 1 on a difference). The 1B-row figure is an **estimate**: 1e9 rows divided
by the measured per-core Spark rate (work time / cores of the local master) times N executors x C cores,
plus the measured start-up; it assumes linear scaling and ignores network shuffle and skew, so read it as
a lower bound on wall time.

    python bench/bench_spark.py --sizes 10M                  # ~2-4 min on 2 cores
    python bench/bench_spark.py --sizes 10M,50M --out bench/out/bench_spark.md
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METRICS = "ndcg@10,mrr@10,recall@100"
CANDIDATES = 1_000


def _bench_metrics():
    spec = importlib.util.spec_from_file_location("bench_metrics", ROOT / "bench" / "bench_metrics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_rows(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 10**3, "M": 10**6, "B": 10**9}.get(text[-1:], 1)
    return int(float(text.rstrip("KMB")) * scale)


def human(n: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:.0f}"


def timed(cmd: list[str], log: Path, timeout: float) -> dict:
    start = time.perf_counter()
    with open(log, "w") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, cwd=ROOT,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return {"wall": time.perf_counter() - start, "rc": done.returncode}


def child_split(run: str, qrels: str, out: str, master: str, result: str) -> None:
    """Spark in-process: session start-up and evaluation (+ write) timed separately."""
    t0 = time.perf_counter()
    from evalcore.spark import evaluate_spark_paths, spark_session

    spark = spark_session(master)
    spark.range(1).count()  # JVM, executors and the first job are up
    t1 = time.perf_counter()
    evaluate_spark_paths(run, qrels, METRICS.split(","), "docid-desc", per_query_out=out, spark=spark)
    t2 = time.perf_counter()
    cores = spark.sparkContext.defaultParallelism
    spark.stop()
    Path(result).write_text(json.dumps({"startup": t1 - t0, "work": t2 - t1, "cores": cores}))


def compare(local_parquet: Path, spark_dir: Path) -> dict:
    import numpy as np
    import pandas as pd

    key = ["qid", "metric"]
    local = pd.read_parquet(local_parquet).astype({"qid": str, "metric": str}).sort_values(key, ignore_index=True)
    spark = pd.read_parquet(spark_dir).astype({"qid": str, "metric": str}).sort_values(key, ignore_index=True)
    if len(local) != len(spark) or not (local[key].to_numpy() == spark[key].to_numpy()).all():
        return {"identical": False, "why": f"rows differ ({len(local)} vs {len(spark)})"}
    differing = {c: int((local[c].to_numpy().view(np.int64) != spark[c].to_numpy().view(np.int64)).sum())
                 for c in ("oblivious", "expected", "min", "max")}
    differing["n_candidates"] = int((local["n_candidates"].to_numpy() != spark["n_candidates"].to_numpy()).sum())
    return {"identical": not any(differing.values()), "why": differing, "rows": len(local)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10M", help="run rows, comma-separated (default 10M)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--workdir", default="/tmp/bench_spark", help="data and outputs (kept; data reused)")
    parser.add_argument("--executors", default="10x4,50x4,100x8", help="NxC executor layouts for the 1B estimate")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--split-sizes", default=None,
                        help="sizes that also get the start-up/work split child (default: all; 'none' for none)")
    parser.add_argument("--out", default=None, help="also write the markdown here")
    parser.add_argument("--json", default=None, help="also write raw results here")
    parser.add_argument("--child-split", nargs=5, metavar=("RUN", "QRELS", "OUT", "MASTER", "RESULT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_split:
        child_split(*args.child_split)
        return 0

    bench_metrics = _bench_metrics()
    workdir = Path(args.workdir)
    results = []
    for size in args.sizes.split(","):
        rows = parse_rows(size)
        n_queries = max(1, rows // CANDIDATES)
        data = workdir / f"data_{n_queries}x{CANDIDATES}_seed0"
        manifest = bench_metrics.generate(data, n_queries, CANDIDATES, 1_000, 0)
        run, qrels = str(data / manifest["files"]["run"]), str(data / manifest["files"]["qrels"])
        out = workdir / f"out_{n_queries}"
        out.mkdir(parents=True, exist_ok=True)
        load_start = os.getloadavg()[0]
        python = sys.executable
        print(f"[{size}] single machine ...", flush=True)
        local = timed([python, "-m", "evalcore", "evaluate", "--run", run, "--qrels", qrels, "--metrics", METRICS,
                       "--per-query", str(out / "local.parquet")], out / "local.log", args.timeout)
        print(f"[{size}] single machine: {local}", flush=True)
        print(f"[{size}] spark ({args.master}) ...", flush=True)
        spark = timed([python, "-m", "evalcore", "evaluate", "--engine", "spark", "--master", args.master,
                       "--run", run, "--qrels", qrels, "--metrics", METRICS, "--per-query", str(out / "spark")],
                      out / "spark.log", args.timeout)
        print(f"[{size}] spark: {spark}", flush=True)
        split = None
        if args.split_sizes is None or size in args.split_sizes.split(","):
            result_file = out / "split.json"
            done = timed([python, str(Path(__file__).resolve()), "--child-split", run, qrels, str(out / "spark_split"),
                          args.master, str(result_file)], out / "split.log", args.timeout)
            split = json.loads(result_file.read_text()) if done["rc"] == 0 and result_file.exists() else None
            print(f"[{size}] spark split: {split}", flush=True)
        check = compare(out / "local.parquet", out / "spark") if local["rc"] == 0 and spark["rc"] == 0 else \
            {"identical": False, "why": "a child failed (see logs)"}
        print(f"[{size}] check: {check}", flush=True)
        results.append({"size": size, "rows": n_queries * CANDIDATES, "local": local, "spark": spark, "split": split,
                        "check": check, "load": [load_start, os.getloadavg()[0]]})

    text = report(results, args)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if all(r["check"]["identical"] for r in results) else 1


def report(results: list[dict], args) -> str:
    import pyspark

    lines = [
        "# Spark engine benchmark", "",
        f"`python bench/bench_spark.py --sizes {args.sizes} --master {args.master}`", "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.machine()}, {os.cpu_count()} cores; "
        f"Python {platform.python_version()}, pyspark {pyspark.__version__}; metrics {METRICS}, docid-desc; "
        "whole processes (start-up, read parquet, evaluate, write per-query parquet).", "",
        "| engine | rows | wall s | rows/s | notes |", "|---|---:|---:|---:|---|",
    ]
    per_core = startup = basis = None
    for r in results:
        rows = r["rows"]
        local, spark, split = r["local"], r["spark"], r["split"]
        lines.append(f"| single machine (`evaluate`) | {human(rows)} | {local['wall']:.1f} "
                     f"| {human(rows / local['wall'])} | load {r['load'][0]:.1f} -> {r['load'][1]:.1f} |")
        note = "identical to single machine (bitwise)" if r["check"]["identical"] else f"DIFFERS: {r['check']['why']}"
        if split:
            note += (f"; in-process split: start-up {split['startup']:.1f} s, work {split['work']:.1f} s "
                     f"= {human(rows / split['work'])} rows/s on {split['cores']} cores")
            per_core, startup, basis = rows / split["work"] / split["cores"], split["startup"], human(rows)
        elif per_core is None:  # no split measured: the whole process, start-up included (pessimistic)
            cores = int(args.master.split("[")[1].rstrip("]")) if "[" in args.master else os.cpu_count()
            per_core, startup, basis = rows / spark["wall"] / cores, 0.0, f"{human(rows)} whole-process"
        lines.append(f"| Spark `{args.master}` (`--engine spark`) | {human(rows)} | {spark['wall']:.1f} "
                     f"| {human(rows / spark['wall'])} | {note} |")
    if per_core:
        lines += ["", f"**Estimate (not measured)** for 1B rows, from the {basis} measured Spark per-core rate "
                      f"({human(per_core)} rows/s/core, local mode on a loaded machine) scaled linearly"
                      + (f", plus {startup:.0f} s start-up" if startup else " (start-up inside the rate)")
                      + "; 'x2' doubles the work for network shuffle, skew and stragglers, which are not measured:", "",
                  "| executors x cores | total cores | estimated wall (linear) | estimated wall (x2) |",
                  "|---|---:|---:|---:|"]
        for layout in args.executors.split(","):
            n, c = (int(x) for x in layout.lower().split("x"))
            work = 1e9 / (per_core * n * c)
            lines.append(f"| {n} x {c} | {n * c} | ~{(work + startup) / 60:.1f} min "
                         f"| ~{(2 * work + startup) / 60:.1f} min |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
