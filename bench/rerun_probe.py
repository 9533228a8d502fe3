"""``streamlit run`` with a probe around every script run, for ``bench/load_ws.py --profile``.

    python bench/rerun_probe.py OUT_DIR [--cprofile] -- run app.py --server.port 8599 ...

Wraps Streamlit's ``ScriptRunner._run_script`` (the script thread's body for one rerun: the page script, the
widgets, every element's protobuf and its hash) and appends one JSON line per run to ``OUT_DIR/runs.jsonl``:
wall seconds, the script thread's CPU seconds (``time.thread_time``), the seconds the process spent in garbage
collection meanwhile (``gc.callbacks``; Streamlit runs a full ``gc.collect(2)`` after every run,
``runner.postScriptGC``) and the page. With ``--cprofile`` each run
is also profiled with cProfile and written to ``OUT_DIR/run-<n>.prof`` (merge them with ``pstats``); CPU
figures of profiled runs include the profiler's overhead, so take CPU per run from a run without it.
What the script thread does not do — serialising every ForwardMsg again for the websocket, compression,
sending, the event loop — runs on the server's main thread; ``load_ws.py`` reads that thread's CPU with psutil.
Only a benchmark tool: the served app is unchanged.
"""
from __future__ import annotations

import cProfile
import gc
import itertools
import json
import sys
import threading
import time
from pathlib import Path


def install(out_dir: Path, profile: bool) -> None:
    from streamlit.runtime.scriptrunner import script_runner

    out_dir.mkdir(parents=True, exist_ok=True)
    runs = out_dir / "runs.jsonl"
    counter = itertools.count(1)
    lock = threading.Lock()
    original = script_runner.ScriptRunner._run_script
    collected = {"seconds": 0.0, "runs": 0, "started": 0.0}

    def gc_timer(phase, info):  # every collection in the process, on any thread
        if phase == "start":
            collected["started"] = time.perf_counter()
        else:
            collected["seconds"] += time.perf_counter() - collected["started"]
            collected["runs"] += 1

    gc.callbacks.append(gc_timer)

    def probed(self, rerun_data):
        number = next(counter)
        profiler = cProfile.Profile() if profile else None
        gc_before = collected["seconds"]
        wall, cpu = time.perf_counter(), time.thread_time()
        if profiler is not None:
            profiler.enable()
        try:
            return original(self, rerun_data)
        finally:
            if profiler is not None:
                profiler.disable()
            cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
            if profiler is not None:
                profiler.dump_stats(str(out_dir / f"run-{number}.prof"))
            line = json.dumps({"run": number, "wall": round(wall, 6), "cpu": round(cpu, 6),
                               "gc": round(collected["seconds"] - gc_before, 6),
                               "page": getattr(rerun_data, "page_script_hash", "") or "",
                               "widgets": len(rerun_data.widget_states.widgets) if rerun_data.widget_states else 0})
            with lock, runs.open("a") as handle:
                handle.write(line + "\n")

    script_runner.ScriptRunner._run_script = probed


def main(argv: list[str]) -> None:
    if "--" not in argv or len(argv) < 3:
        raise SystemExit("usage: rerun_probe.py OUT_DIR [--cprofile] -- run app.py [streamlit options]")
    cut = argv.index("--")
    own, streamlit_args = argv[:cut], argv[cut + 1:]
    install(Path(own[0]), profile="--cprofile" in own[1:])
    from streamlit.web import cli

    sys.argv = ["streamlit", *streamlit_args]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
