"""Measure what encoding a (model, dtype) of the real-runs plan costs, on a seeded sample of each task's texts.

CPU time (``time.process_time``, one torch / OpenMP thread) per text, so the figure does not depend on how busy
the shared machine is; the estimate for a full pass multiplies it by the number of texts the task encodes
(pool + queries without and with instruction). Used for the "left out" paragraph of data/README.md.

    OMP_NUM_THREADS=1 python scripts/real_runs_cost.py --model mpnet --dtypes fp32 bf16 fp16 --per-task 16
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import make_real_runs as rr


def sample_texts(task: rr.Task, per_task: int, seed: int) -> list[tuple[str, str]]:
    """``per_task`` documents and ``per_task`` queries (half with instruction), as (role, text)."""
    rng = random.Random(f"{seed}-{task.name}")
    docs = rng.sample(task.pool_texts, min(per_task, len(task.pool_texts)))
    plain, instructed = task.query_texts(False), task.query_texts(True)
    rows = rng.sample(range(len(plain)), min(per_task, len(plain)))
    queries = [(instructed if i % 2 else plain)[row] for i, row in enumerate(rows)]
    return [("document", t) for t in docs] + [("query", t) for t in queries]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, choices=[k for k, s in rr.SYSTEMS.items() if s.encoder])
    parser.add_argument("--dtypes", nargs="+", required=True)
    parser.add_argument("--per-task", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--cache", type=Path, default=rr.REPO_ROOT / "scripts" / ".cache")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    data = args.data or rr.default_data_dir()
    spec = rr.SYSTEMS[args.model]
    tasks = {name: rr.load_task(data, name) for name in rr.TASK_FILES}
    results = []
    for dtype in args.dtypes:
        encoder = spec.encoder(dtype, args.cache)
        encoder.encode(["warm up"], "query")
        for name, task in tasks.items():
            texts = sample_texts(task, args.per_task, args.seed)
            ms = {}
            for role in ("document", "query"):
                chunk = [t for r, t in texts if r == role]
                cpu = time.process_time()
                encoder.encode(chunk, role)
                ms[role] = 1000 * (time.process_time() - cpu) / len(chunk)
            n_docs, n_queries = len(task.pool_texts), 2 * len(task.qids)
            estimate_ms = ms["document"] * n_docs + ms["query"] * n_queries
            results.append({"model": spec.model, "dtype": dtype, "task": name, "sample": len(texts),
                            "cpu_ms_per_document": round(ms["document"], 1), "cpu_ms_per_query": round(ms["query"], 1),
                            "texts_full_pass": n_docs + n_queries,
                            "estimated_cpu_hours": round(estimate_ms / 3.6e6, 2)})
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
