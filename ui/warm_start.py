"""Warm start: prepare the default view once, inside the server, as soon as the server is up.

``streamlit run`` executes the app script only when a browser session connects, so the first visitor would pay
for importing pandas/pyarrow/DuckDB/evalcore, opening the store and the Leaderboard's queries (1.2–1.5 s on 2
cores) after the browser had already spent ~1.2 s loading Streamlit's JavaScript. :data:`lifespan`
(``st.App(..., lifespan=...)`` in ``app.py``) starts one thread right after the runtime starts. It asks the data
API (``ui/data.py``) the default view's questions — the same functions with the same arguments as the
Leaderboard of a first visit without URL parameters: :func:`ui.sidebar.choose_condition` with every control at
its default — so the answers are in ``st.cache_data`` when the first session asks (and it pays two one-time costs of a
process's first script run: importing pandas' Styler and :mod:`inspect`'s map of the loaded modules). A session that
asks while the thread is still computing waits for that computation (Streamlit's per-key compute lock) instead
of repeating it.

Then everything still alive — imported modules, the store, the cached answers — is long-lived, and it is moved
out of the garbage collector's sight (``gc.freeze``): Streamlit's full collection after every script run is off
(``runner.postScriptGC = false`` in .streamlit/config.toml; it walked those ~130k objects in ~0.06–0.09 s on every
rerun), and Python's own full passes skip them too. Frozen objects are still freed by reference counting; only the cycle collector skips
them, and it keeps collecting everything created later.

The server log says ``warm start: default view ready in … s`` or ``warm start FAILED …`` with the traceback
(the first visitor then computes the view, and sees the page's own message if it fails again).
"""
from __future__ import annotations

import gc
import logging
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from ui import heap

LOG = logging.getLogger("tiebreak.app")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


# Imported by someone at first use and read half-imported by another thread: plotly's JSON encoder looks up
# ``PIL.Image`` in sys.modules on every figure; when two sessions drew their first figures at once in a fresh
# process, one found the module while another thread was still importing it ("partially initialized module
# 'PIL.Image' has no attribute 'Image'": the view failed, seen under bench/load_ws.py with 4 processes).
LATE_IMPORTS = ("PIL.Image", "orjson")


def import_late_modules() -> list[str]:
    """Import, once and before any session runs, the modules libraries otherwise import lazily from a script
    thread (:data:`LATE_IMPORTS`, those installed); returns the ones imported."""
    import importlib

    done = []
    for name in LATE_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        done.append(name)
    return done


def prepare_default_view(data_dir: Path | None = None) -> str:
    """Ask the questions of the default Leaderboard (no URL parameters); returns what was prepared. Raises
    what the data API raises."""
    import pandas as pd

    from ui import board as boards
    from ui import data, sidebar, tables  # noqa: F401  (tables: the Leaderboard's table module)

    # now, before the store: the first visitor's script run (which may start while the store opens) then finds
    # the module map made instead of making it too, on the same GIL
    index_modules_for_inspect()
    data_dir = data.data_dir_from() if data_dir is None else data_dir
    if not data_dir.is_dir():
        return f"nothing: no data folder {data_dir}"
    snapshot = data.snapshot(data_dir)
    cond = sidebar.choose_condition(data.facets(snapshot), sidebar.by_default)
    if cond is None:
        return f"nothing: no results under {data_dir}"
    board = data.leaderboard(snapshot, cond)
    # the Leaderboard's other questions: where per-query results are (and the line pointing there), metadata,
    # provenance (precision kinds only where the default board has per-query results: published scores carry
    # none)
    data.coverage(snapshot), data.provenance(snapshot)
    boards.pointer_for(snapshot, cond, board)
    if sidebar.has_query_data(data.facets(snapshot)["conditions"], cond):
        data.precision_kinds(snapshot)
    data.systems(snapshot, benchmark=cond.benchmark)
    pd.DataFrame().style  # noqa: B018  (imports pandas' Styler, which the Leaderboard's table uses)
    index_modules_for_inspect()  # the modules imported since (cheap: inspect maps only the new ones)
    return f"Leaderboard of {cond.benchmark} · {cond.setting} · {cond.metric}, {len(board.ranked)} systems"


def index_modules_for_inspect() -> None:
    """``inspect.stack()`` once, now: the first time a process calls it, :mod:`inspect` maps every loaded module
    to its file (~1,300 modules, 0.04–0.15 s). Streamlit calls it before the first element of a process (its
    check for an interactive shell), i.e. on the first visitor's run; after this call it finds the map made."""
    import inspect

    inspect.stack()


def warm_default_view(data_dir: Path | None = None) -> bool:
    """:func:`prepare_default_view`, logged; never raises. Returns whether it succeeded."""
    started = time.perf_counter()
    try:
        import_late_modules()
        prepared = prepare_default_view(data_dir)
    except Exception:  # never keep the server from serving
        LOG.exception("warm start FAILED after %.2f s: the default view's data could not be prepared "
                      "(the first visitor computes it)", time.perf_counter() - started)
        return False
    LOG.info("warm start: default view ready in %.2f s (%s)", time.perf_counter() - started, prepared)
    freeze_long_lived()
    return True


def freeze_long_lived() -> int:
    """Exempt every object alive now from later cycle collections (``gc.freeze``); returns the number of
    objects frozen so far."""
    gc.freeze()
    frozen = gc.get_freeze_count()
    LOG.info("warm start: %d long-lived objects exempted from the per-rerun garbage collection", frozen)
    return frozen


def log_to_server_output() -> None:
    """The dashboard's log lines (logger ``tiebreak``, INFO and above) on the server's standard error, once."""
    root = logging.getLogger("tiebreak")
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        root.propagate = False


@asynccontextmanager
async def lifespan(_app: Any) -> AsyncIterator[None]:
    """``st.App`` lifespan: the server log, then the warm-up in a thread without delaying the server."""
    log_to_server_output()
    threading.Thread(target=warm_default_view, name="tiebreak-warm-start", daemon=True).start()
    heap.start()  # freed memory back to the system every TIEBREAK_TRIM_SECONDS
    yield


__all__ = ["freeze_long_lived", "index_modules_for_inspect", "lifespan", "log_to_server_output",
           "prepare_default_view", "warm_default_view"]
