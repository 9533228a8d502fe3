"""``streamlit run`` with a memory probe, for ``bench/soak.py --memory-profile``: what a server process holds, on
request, while it serves.

    python bench/memory_probe.py OUT_DIR [--frames 12] [--no-tracemalloc] [--count-objects] -- [-m streamlit] run app.py ...
    python bench/memory_probe.py --compare OUT_DIR/a.tracemalloc OUT_DIR/b.tracemalloc [--top 25]

The probe starts ``tracemalloc`` (``--frames`` frames per allocation) before Streamlit and a thread that looks
for a request file every 0.5 s. Touching ``OUT_DIR/take-LABEL`` makes it write ``OUT_DIR/LABEL.json`` and
(with tracemalloc) ``OUT_DIR/LABEL.tracemalloc``, then delete the request:

- the process's RSS and glibc's heap (``mallinfo2``: bytes in use, free inside the heap, mmapped), then the same
  after ``malloc_trim(0)`` when the request is ``take-LABEL-trim`` (what the allocator kept without using it);
- what tracemalloc counts (Python's own allocations: objects, numpy and pandas buffers that go through
  ``PyMem``), its peak, and the 25 biggest allocation sites;
- every registered memo of the dashboard (``ui.memo.REGISTRY``: entries now, and its bound) and the bytes the
  answer caches hold (``st.cache_data``'s pickled values);
- Streamlit's sessions: connected and kept for a reconnect (``server.disconnectedSessionTTL``);
- DuckDB's memory per tag (``duckdb_memory()``) of each open store, and Arrow's memory pool;
- Python's small-object allocator: its arenas and the bytes in live and free blocks;
- resident memory by kind of mapping (``/proc/self/smaps``: glibc's heap, Python's 1 MiB arenas, other
  anonymous memory, libraries);
- with ``--count-objects``, the 25 commonest object types the cycle collector tracks (``gc.get_objects()``, which
  can break a script thread building a tuple at that moment: a SystemError in the page, seen twice under load).

``--compare A B`` prints the allocation sites that grew most from snapshot A to B (``Snapshot.compare_to``,
grouped by traceback). A tracemalloc'd process runs ~1.5–2x slower: latencies measured under the probe are not
the server's; ``bench/soak.py`` takes its timing figures from runs without it. Only a benchmark tool: the served
app is unchanged.
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path


COUNT_OBJECTS = False
"""``--count-objects``: the commonest object types in each snapshot (see :func:`take` for its hazard)."""


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _libc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _Mallinfo2
        return libc
    except (OSError, AttributeError):
        return None


def heap(libc) -> dict:
    """glibc's heap: bytes in use by malloc'd blocks, free inside the heap, in mmapped blocks (MB)."""
    if libc is None:
        return {}
    info = libc.mallinfo2()
    mb = 1 / (1 << 20)
    return {"in_use_mb": round(info.uordblks * mb, 1), "free_in_heap_mb": round(info.fordblks * mb, 1),
            "heap_mb": round(info.arena * mb, 1), "mmapped_mb": round(info.hblkhd * mb, 1)}


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return round(int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20), 1)


def memos() -> dict:
    """Entries of every registered memo and, for the answer caches, the pickled bytes they hold."""
    out = {}
    try:
        from ui import memo
    except Exception as exc:  # the app not imported yet
        return {"error": repr(exc)}
    for name, entry in list(memo.REGISTRY.items()):
        try:
            size = entry.size() if entry.size is not None else None
        except Exception as exc:  # a session memo asked outside a session
            size = repr(exc)[:80]
        out[name] = {"entries": size, "bound": getattr(entry, "bound", None)}
    try:
        from ui import charts

        sizes = [len(figure.to_json()) for figure in list(charts._figures._values.values())]
        out["_figures_json_mb"] = {"count": len(sizes), "total": round(sum(sizes) / (1 << 20), 2),
                                   "largest": round(max(sizes, default=0) / (1 << 20), 3)}
    except Exception as exc:
        out["_figures_json_mb"] = repr(exc)[:120]
    try:
        out["_st_cache_data_bytes"] = cache_data_bytes()
    except Exception as exc:
        out["_st_cache_data_bytes"] = repr(exc)[:120]
    return out


def cache_data_bytes() -> dict:
    """Pickled bytes each ``st.cache_data`` function holds in memory, by function name."""
    from streamlit.runtime.caching.cache_data_api import _data_caches

    found: dict[str, int] = {}
    with _data_caches._caches_lock:
        caches = [cache for by_key in _data_caches._function_caches.values() for cache in by_key.values()]
    for cache in caches:
        storage = cache.storage
        memory = getattr(storage, "_mem_cache", None)
        if memory is None:
            continue
        total = sum(len(value) for value in list(memory.values()) if isinstance(value, (bytes, bytearray)))
        name = getattr(cache, "display_name", "") or str(getattr(storage, "function_display_name", "?"))
        found[name] = found.get(name, 0) + total
    return {name: round(total / (1 << 20), 2) for name, total in sorted(found.items(), key=lambda kv: -kv[1])}


def sessions() -> dict:
    try:
        from streamlit.runtime import Runtime

        manager = Runtime.instance()._session_mgr
        stored = getattr(manager._session_storage, "_cache", None)
        raw = getattr(stored, "_data", None)  # counted without reaping expired entries (len() would reap them)
        return {"connected": len(manager.list_active_sessions()),
                "kept_for_reconnect": None if raw is None else len(raw),
                "kept_unexpired": None if stored is None else getattr(stored, "currsize", None)}
    except Exception as exc:
        return {"error": repr(exc)[:120]}


def duckdb_memory() -> dict:
    out = {}
    try:
        from ui import data

        folder = data.data_dir_from()
        store = data._store(str(folder))
        database = getattr(store, "_db", None)
        conn = getattr(database, "conn", None)
        if conn is not None:
            rows = conn.cursor().execute(
                "SELECT tag, memory_usage_bytes, temporary_storage_bytes FROM duckdb_memory() "
                "WHERE memory_usage_bytes > 0 OR temporary_storage_bytes > 0").fetchall()
            out = {tag: round(used / (1 << 20), 1) for tag, used, _ in rows}
            out["_limit"] = conn.cursor().execute("SELECT current_setting('memory_limit')").fetchone()[0]
    except Exception as exc:
        out["error"] = repr(exc)[:160]
    try:
        import pyarrow as pa

        pool = pa.default_memory_pool()
        out["_arrow_pool"] = {"backend": pool.backend_name, "allocated_mb": round(pool.bytes_allocated() / (1 << 20), 1),
                              "max_mb": round(pool.max_memory() / (1 << 20), 1) if pool.max_memory() else None}
    except Exception as exc:
        out["_arrow_pool"] = repr(exc)[:120]
    return out


def resident_by_kind() -> dict:
    """Resident MB by kind of mapping (``/proc/self/smaps``): glibc's main heap, anonymous mappings of exactly
    1 MiB (Python's small-object arenas), other anonymous mappings (thread heaps of glibc, DuckDB's and Arrow's
    allocators, numpy's large arrays), shared libraries and other files."""
    kinds: dict[str, float] = {}
    kind = None
    try:
        with open("/proc/self/smaps") as handle:
            for line in handle:
                first = line.split(None, 5)
                if "-" in first[0] and len(first) >= 5 and not first[0].endswith(":"):
                    start, end = (int(x, 16) for x in first[0].split("-"))
                    path = first[5].strip() if len(first) > 5 else ""
                    if path == "[heap]":
                        kind = "glibc main heap"
                    elif not path:
                        kind = "anonymous 1 MiB (Python arenas)" if end - start == 1 << 20 else "other anonymous"
                    elif path.endswith(".so") or ".so." in path:
                        kind = "shared libraries"
                    else:
                        kind = "other (" + path[:12] + ")" if path.startswith("[") else "other files"
                elif line.startswith("Rss:") and kind is not None:
                    kinds[kind] = kinds.get(kind, 0.0) + int(line.split()[1]) / 1024
    except OSError as exc:
        return {"error": repr(exc)}
    return {name: round(mb, 1) for name, mb in sorted(kinds.items(), key=lambda kv: -kv[1])}


def python_arenas() -> dict:
    """Python's small-object allocator (``sys._debugmallocstats``, read from a redirected C stderr): its arenas
    (1 MiB each, returned to the system only when wholly empty), the bytes in live blocks and in free ones."""
    import re
    import tempfile

    with tempfile.TemporaryFile(mode="w+") as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(sink.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        text = sink.read()

    def number(label: str) -> float:
        found = re.search(rf"{re.escape(label)}\s*=\s*([\d,]+)", text)
        return int(found.group(1).replace(",", "")) / (1 << 20) if found else float("nan")

    arenas = re.search(r"arenas \* \d+ bytes/arena\s*=\s*([\d,]+)", text)
    return {"arenas_mb": round(int(arenas.group(1).replace(",", "")) / (1 << 20), 1) if arenas else None,
            "in_live_blocks_mb": round(number("# bytes in allocated blocks"), 1),
            "in_free_blocks_mb": round(number("# bytes in available blocks"), 1)}


def tracked_types(top: int = 25) -> list:
    histogram: dict[str, int] = {}
    for obj in gc.get_objects():
        kind = type(obj)
        name = kind.__module__ + "." + kind.__qualname__
        histogram[name] = histogram.get(name, 0) + 1
    return sorted(histogram.items(), key=lambda item: -item[1])[:top]


def take(out_dir: Path, label: str, trim: bool, libc) -> None:
    record: dict = {"label": label, "time": time.time(), "pid": os.getpid(), "rss_mb": rss_mb(), "heap": heap(libc)}
    if tracemalloc.is_tracing():
        current, peak = tracemalloc.get_traced_memory()
        record["tracemalloc_mb"] = {"current": round(current / (1 << 20), 1), "peak": round(peak / (1 << 20), 1)}
        snapshot = tracemalloc.take_snapshot()
        snapshot.dump(str(out_dir / f"{label}.tracemalloc"))
        stats = snapshot.statistics("traceback")[:25]
        record["top_sites"] = [{"mb": round(stat.size / (1 << 20), 2), "count": stat.count,
                                "where": [f"{frame.filename}:{frame.lineno}" for frame in stat.traceback[-6:]]}
                               for stat in stats]
    record["memos"] = memos()
    record["sessions"] = sessions()
    record["native"] = duckdb_memory()
    record["resident_by_kind"] = resident_by_kind()
    try:
        record["python_arenas"] = python_arenas()
    except Exception as exc:
        record["python_arenas"] = repr(exc)[:120]
    if COUNT_OBJECTS:
        # gc.get_objects() hands out references to objects under construction: a tuple being resized on a
        # script thread then fails with "SystemError: bad argument to internal function" (seen twice under
        # load): only on request
        record["tracked_types"] = tracked_types()
    if trim and libc is not None:
        gc.collect()
        libc.malloc_trim(0)
        record["after_trim"] = {"rss_mb": rss_mb(), "heap": heap(libc)}
    (out_dir / f"{label}.json").write_text(json.dumps(record, indent=1, default=str))


def watch(out_dir: Path) -> None:
    libc = _libc()
    while True:
        for request in sorted(out_dir.glob("take-*")):
            label = request.name[len("take-"):]
            trim = label.endswith("-trim")
            label = label[:-len("-trim")] if trim else label
            try:
                take(out_dir, label, trim, libc)
            except Exception as exc:  # a probe never stops the server
                (out_dir / f"{label}.error").write_text(repr(exc))
            request.unlink(missing_ok=True)
        time.sleep(0.5)


def compare(first: str, second: str, top: int) -> str:
    a, b = tracemalloc.Snapshot.load(first), tracemalloc.Snapshot.load(second)
    lines = [f"# allocation sites that grew from {Path(first).name} to {Path(second).name}"]
    for stat in b.compare_to(a, "traceback")[:top]:
        where = " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(stat.traceback[-5:]))
        lines.append(f"{stat.size_diff / (1 << 20):+8.2f} MB ({stat.size / (1 << 20):7.2f} MB now, "
                     f"{stat.count_diff:+d} blocks)  {where}")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    if argv and argv[0] == "--compare":
        top = int(argv[argv.index("--top") + 1]) if "--top" in argv else 25
        print(compare(argv[1], argv[2], top))
        return
    if "--" not in argv or len(argv) < 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    cut = argv.index("--")
    own, streamlit_args = argv[:cut], argv[cut + 1:]
    if streamlit_args[:2] == ["-m", "streamlit"]:  # as deploy/serve.sh calls its $TIEBREAK_PYTHON
        streamlit_args = streamlit_args[2:]
    global COUNT_OBJECTS
    COUNT_OBJECTS = "--count-objects" in own
    out_dir = Path(own[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    if "--no-tracemalloc" not in own:
        frames = int(own[own.index("--frames") + 1]) if "--frames" in own else 12
        tracemalloc.start(frames)
    threading.Thread(target=watch, args=(out_dir,), daemon=True, name="memory-probe").start()
    from streamlit.web import cli

    sys.argv = ["streamlit", *streamlit_args]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
