"""``streamlit run`` with a probe around every script run, for ``bench/load_ws.py --profile``.

    python bench/rerun_probe.py OUT_DIR [--cprofile] [--count-objects] -- run app.py --server.port 8599 ...

Wraps Streamlit's ``ScriptRunner._run_script`` (the script thread's body for one rerun: the page script, the
widgets, every element's protobuf and its hash) and appends one JSON line per run to ``OUT_DIR/runs.jsonl``:
wall seconds, the script thread's CPU seconds (``time.thread_time``), the CPU seconds the process spent in
garbage collection meanwhile (``gc.callbacks``; Streamlit runs a full ``gc.collect(2)`` after every run,
``runner.postScriptGC``), with ``--count-objects`` the number of objects the collector tracks (what a full
collection walks; their 25 commonest types after the latest run in ``OUT_DIR/tracked-types.json``), and the page. With ``--cprofile`` each run
is also profiled with cProfile on the script thread's CPU clock (not wall time: waiting for the GIL is not
CPU) and written to ``OUT_DIR/run-<n>.prof`` (merge them with ``pstats``); CPU figures of profiled runs include
the profiler's overhead, so take CPU per run from a run without it.
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


def install(out_dir: Path, profile: bool, counts: bool = False) -> None:
    from streamlit.runtime.scriptrunner import script_runner

    out_dir.mkdir(parents=True, exist_ok=True)
    runs = out_dir / "runs.jsonl"
    counter = itertools.count(1)
    lock = threading.Lock()
    original = script_runner.ScriptRunner._run_script
    collected = {"seconds": 0.0, "runs": 0, "started": 0.0, "full_seconds": 0.0, "full_runs": 0}

    def gc_timer(phase, info):  # every collection in the process, on any thread
        if phase == "start":  # CPU of the collecting thread: on a busy machine wall time counts others' work
            collected["started"] = time.thread_time()
        else:
            spent = time.thread_time() - collected["started"]
            collected["seconds"] += spent
            collected["runs"] += 1
            if info.get("generation") == 2:
                collected["full_seconds"] += spent
                collected["full_runs"] += 1

    gc.callbacks.append(gc_timer)

    def probed(self, rerun_data):
        number = next(counter)
        # timer = the script thread's CPU clock: a wall clock would also count the waits for the GIL (every
        # message handed to the event loop wakes it, and the script thread waits while that thread sends)
        profiler = cProfile.Profile(time.thread_time) if profile else None
        gc_before = dict(collected)
        wall, cpu = time.perf_counter(), time.thread_time()
        if profiler is not None:
            profiler.enable()
        try:
            return original(self, rerun_data)
        finally:
            if profiler is not None:
                profiler.disable()
            cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
            view = _view_drawn()
            if profiler is not None:
                profiler.dump_stats(str(out_dir / f"run-{number}.prof"))
            line = json.dumps({"run": number, "wall": round(wall, 6), "cpu": round(cpu, 6),
                               "gc": round(collected["seconds"] - gc_before["seconds"], 6),
                               "gc_collections": collected["runs"] - gc_before["runs"],
                               "gc_full": round(collected["full_seconds"] - gc_before["full_seconds"], 6),
                               "gc_full_collections": collected["full_runs"] - gc_before["full_runs"],
                               "gc_tracked_objects": len(gc.get_objects()) if counts else None,
                               "page": getattr(rerun_data, "page_script_hash", "") or "", "view": view,
                               "widgets": len(rerun_data.widget_states.widgets) if rerun_data.widget_states else 0})
            with lock, runs.open("a") as handle:
                handle.write(line + "\n")
            if counts:  # what the collector walks, by type, after the latest run
                histogram: dict[str, int] = {}
                for obj in gc.get_objects():
                    name = type(obj).__module__ + "." + type(obj).__qualname__
                    histogram[name] = histogram.get(name, 0) + 1
                top = sorted(histogram.items(), key=lambda item: -item[1])[:25]
                (out_dir / "tracked-types.json").write_text(json.dumps(top, indent=0))

    script_runner.ScriptRunner._run_script = probed


def _view_drawn() -> str:
    """The URL path of the page the run drew ("" = the default page), from the script thread's context."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return "?"
    try:
        info = ctx.pages_manager.get_pages().get(ctx.page_script_hash) or {}
        return str(info.get("url_pathname", "?"))
    except Exception:  # a probe never breaks the served app
        return "?"


def main(argv: list[str]) -> None:
    if "--" not in argv or len(argv) < 3:
        raise SystemExit("usage: rerun_probe.py OUT_DIR [--cprofile] [--count-objects] -- run app.py [options]")
    cut = argv.index("--")
    own, streamlit_args = argv[:cut], argv[cut + 1:]
    install(Path(own[0]), profile="--cprofile" in own[1:], counts="--count-objects" in own[1:])
    from streamlit.web import cli

    sys.argv = ["streamlit", *streamlit_args]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
