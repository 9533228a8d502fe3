"""A synthetic data dir in the data contract (docs/CONTRACTS.md), for dashboard tests and the dashboard benchmark.

``write_small(dir)``: two benchmarks — ``rar-b`` with per-query data (6 systems × 4 tasks × 3 precisions ×
2 instruction states × 2 settings; one system misses a task, one scores 0 on a task) and ``r2med`` with
published task scores only — plus a systems table and a tiny FP32 run + qrels for the what-if panel.
``write_large(dir, n_rows)``: ~``n_rows`` per-query rows (100 systems × 4 precisions × 2 instruction states
× 25 tasks × queries), the shape of the store's performance target.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

RARB_TASKS = ["ARCChallenge", "AlphaNLI", "PIQA", "SIQA"]
R2MED_TASKS = ["R2MEDBiologyRetrieval", "R2MEDBioinstructionRetrieval", "R2MEDMedicalSciencesRetrieval"]
SYSTEMS = [
    # system, family, n_parameters, open_weights, uses_instructions
    ("e5-small", "e5", 33e6, True, False),
    ("e5-large-instruct", "e5", 560e6, True, True),
    ("bge-large", "bge", 335e6, True, False),
    ("gte-qwen2-7b", "gte", 7.6e9, True, True),
    ("closed-embed-3", "closed", None, False, True),
    ("tiny-partial", "tiny", 10e6, True, False),  # misses the last rar-b task
]
PRECISIONS = ["fp32", "bf16", "bf16+hps"]
BF16_SHIFTS = {("bge-large", "bf16"): 0.13}


def _query_rows(rng: np.random.Generator, system: str, skill: float, task: str, setting: str,
                instruction: bool, precision: str, n_queries: int, metric: str) -> pd.DataFrame:
    shift = BF16_SHIFTS.get((system, precision), 0.0)  # rounding helps one system: a rank flip
    base = np.clip(rng.normal(skill + shift + (0.03 if instruction else 0.0), 0.18, n_queries), 0.0, 1.0)
    spread = {"fp32": 0.01, "bf16": 0.08, "bf16+hps": 0.015}[precision]
    width = rng.uniform(0, spread, n_queries) * (rng.random(n_queries) < 0.5)
    lo = np.clip(base - width / 2, 0, 1)
    hi = np.clip(base + width / 2, 0, 1)
    oblivious = lo + rng.random(n_queries) * (hi - lo)
    return pd.DataFrame({
        "system": system, "benchmark": "rar-b", "task": task, "setting": setting, "instruction": instruction,
        "precision": precision, "qid": [f"q{i:03d}" for i in range(n_queries)], "metric": metric,
        "oblivious": oblivious, "expected": (lo + hi) / 2, "min": lo, "max": hi, "tie_policy": "docid-desc",
        "n_candidates": 100, "tied_at_cutoff": width > 0, "source": "synthetic",
    })


def write_small(root: Path, seed: int = 7, n_queries: int = 30) -> Path:
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    frames = []
    for rank, (system, *_rest) in enumerate(SYSTEMS):
        skill = 0.55 - 0.06 * rank
        tasks = RARB_TASKS[:-1] if system == "tiny-partial" else RARB_TASKS
        for task in tasks:
            for setting, metric in (("full", "ndcg@10"), ("mcr", "p@1")):
                for instruction in (False, True):
                    for precision in PRECISIONS:
                        frame = _query_rows(rng, system, skill if setting == "full" else skill + 0.1, task,
                                            setting, instruction, precision, n_queries, metric)
                        if system == "closed-embed-3" and task == "SIQA" and setting == "full":
                            frame[["oblivious", "expected", "min", "max"]] = 0.0  # G = 0 case
                        frames.append(frame)
    query_metrics = pd.concat(frames, ignore_index=True)
    query_metrics.to_parquet(root / "query_metrics_synthetic.parquet", index=False)

    published = [
        {"system": system, "benchmark": "r2med", "task": task, "setting": "full", "instruction": False,
         "precision": "fp32", "metric": "ndcg@10", "value": float(0.2 + 0.05 * i + 0.01 * j), "expected": None,
         "min": None, "max": None, "n_queries": 100, "source": "published:synthetic"}
        for i, (system, *_r) in enumerate(SYSTEMS[:4]) for j, task in enumerate(R2MED_TASKS)
    ]
    pd.DataFrame(published).astype({"expected": "float64", "min": "float64", "max": "float64"}).to_parquet(
        root / "task_scores_synthetic.parquet", index=False)

    pd.DataFrame([
        {"system": s, "display_name": s, "family": fam, "n_parameters": n, "license": "mit" if ow else "proprietary",
         "open_weights": ow, "uses_instructions": ui, "release_date": "2024-01-01", "reference": "", "source": "synthetic"}
        for s, fam, n, ow, ui in SYSTEMS
    ]).astype({"n_parameters": "float64"}).to_parquet(root / "systems_synthetic.parquet", index=False)
    _write_run(root, rng)
    return root


def _write_run(root: Path, rng: np.random.Generator, n_queries: int = 20, depth: int = 30) -> None:
    runs = root / "runs"
    runs.mkdir(exist_ok=True)
    qids = np.repeat([f"q{i:03d}" for i in range(n_queries)], depth)
    docids = [f"d{j:03d}" for _ in range(n_queries) for j in range(depth)]
    scores = np.round(rng.normal(0, 1, n_queries * depth), 3)  # coarse scores: some ties at FP32 already
    pd.DataFrame({"qid": qids, "docid": docids, "score": scores}).to_parquet(
        runs / "e5-small__ARCChallenge.parquet", index=False)
    (runs / "e5-small__ARCChallenge.parquet.json").write_text(json.dumps({
        "system": "e5-small", "benchmark": "rar-b", "task": "ARCChallenge", "setting": "full",
        "instruction": False, "precision": "fp32"}))
    qrels = pd.DataFrame({"qid": [f"q{i:03d}" for i in range(n_queries) for _ in range(2)],
                          "docid": [f"d{(7 * i + k) % depth:03d}" for i in range(n_queries) for k in range(2)],
                          "relevance": 1})
    qrels.to_parquet(runs / "qrels__ARCChallenge.parquet", index=False)
    (runs / "qrels__ARCChallenge.parquet.json").write_text(json.dumps({"benchmark": "rar-b", "task": "ARCChallenge"}))


def write_large(root: Path, n_rows: int = 10_000_000, seed: int = 11) -> Path:
    """~n_rows query_metrics rows: 100 systems × 4 precisions × 2 instruction states × 25 tasks × q queries."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    n_systems, precisions, tasks = 100, ["fp32", "bf16", "bf16+hps", "fp16"], [f"Task{t:02d}" for t in range(25)]
    n_queries = max(1, n_rows // (n_systems * len(precisions) * 2 * len(tasks)))
    qids = np.array([f"q{i:04d}" for i in range(n_queries)])
    for s in range(n_systems):
        skill = 0.25 + 0.5 * s / n_systems
        blocks = []
        for precision in precisions:
            for instruction in (False, True):
                for task in tasks:
                    base = np.clip(rng.normal(skill, 0.2, n_queries), 0, 1)
                    width = rng.uniform(0, 0.05, n_queries) * (precision == "bf16")
                    lo, hi = np.clip(base - width / 2, 0, 1), np.clip(base + width / 2, 0, 1)
                    blocks.append(pd.DataFrame({
                        "system": f"sys-{s:03d}", "benchmark": "big", "task": task, "setting": "full",
                        "instruction": instruction, "precision": precision, "qid": qids, "metric": "ndcg@10",
                        "oblivious": base, "expected": np.clip(base + width / 4, lo, hi), "min": lo,
                        "max": hi, "tie_policy": "docid-desc", "n_candidates": 100,
                        "tied_at_cutoff": width > 0, "source": "synthetic",
                    }))
        pd.concat(blocks, ignore_index=True).to_parquet(root / f"query_metrics_sys{s:03d}.parquet", index=False)
    pd.DataFrame({
        "system": [f"sys-{s:03d}" for s in range(n_systems)], "display_name": [f"sys-{s:03d}" for s in range(n_systems)],
        "family": [f"fam{s % 7}" for s in range(n_systems)], "n_parameters": [float(10 ** (7 + 3 * s / n_systems)) for s in range(n_systems)],
        "license": "mit", "open_weights": True, "uses_instructions": [s % 2 == 0 for s in range(n_systems)],
        "release_date": "2024-01-01", "reference": "", "source": "synthetic",
    }).to_parquet(root / "systems.parquet", index=False)
    from evalcore.store.derivation import derive

    derive(root)  # its derived sums, as every writer of per-query files leaves them (evalcore derive)
    return root


if __name__ == "__main__":  # python tests/pages/synthetic_data.py DIR [large]
    import sys

    target = Path(sys.argv[1])
    (write_large if sys.argv[2:] == ["large"] else write_small)(target)
    print(target)
