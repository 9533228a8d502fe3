"""Warm start: draw the default view once, inside the server, as soon as the server is up.

``streamlit run`` executes the app script only when a browser session connects, so the first visitor used to
pay for importing numpy/pandas/pyarrow/DuckDB/evalcore, opening the store and running the Leaderboard's
queries (1.2–1.5 s on 2 cores) after the browser had already spent ~1.2 s loading Streamlit's JavaScript.
:data:`lifespan` (``st.App(..., lifespan=...)`` in ``app.py``) starts one headless run of the script, with no
URL parameters, right after the runtime starts. It fills the shared ``st.cache_resource`` store and the
``st.cache_data`` query results while the browser is still loading, so the first real session finds
everything in memory. A session that connects before the warm run ends waits on the same cache locks instead
of doing the work twice.

After that run, everything still alive — imported modules, the store, the cached results — is long-lived,
and it is moved out of the garbage collector's sight (``gc.freeze``): Streamlit runs a full collection
after every script run (``runner.postScriptGC``), which walked those ~130k objects in ~0.06–0.09 s on every
rerun, cached or not (bench/bench_app.py). Frozen objects are still freed by reference counting; only the
cycle collector skips them, and it keeps collecting everything created later.

The headless run is Streamlit's own script check (``Runtime.does_script_run_without_error``, the code behind
``/_stcore/script-health-check``). If a future Streamlit drops it, the app still starts, only without the
warm-up (logged).
"""
from __future__ import annotations

import asyncio
import gc
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from streamlit.logger import get_logger

LOG = get_logger(__name__)  # Streamlit's handler and level (server log, --logger.level)


async def warm_default_view() -> tuple[bool, str]:
    """Run the app script once in a throw-away session; returns (ok, message) and logs the time taken."""
    from streamlit import runtime

    started = time.perf_counter()
    skip_bare_mode_check()
    try:
        ok, message = await runtime.get_instance().does_script_run_without_error()
    except Exception as error:  # never keep the server from serving
        LOG.warning("warm start skipped: %s", error)
        return False, str(error)
    (LOG.info if ok else LOG.warning)("warm start: default view drawn in %.2f s (%s)",
                                      time.perf_counter() - started, message)
    freeze_long_lived()
    return ok, message


def skip_bare_mode_check() -> bool:
    """Before the first element of a process, Streamlit asks ``env_util.is_repl()`` whether to print a
    "run this with `streamlit run`" hint; its ``inspect.stack()`` reads every frame's source and builds
    inspect's module cache over ~1,300 modules: 0.06–0.15 s of the warm run, on the first visitor's critical
    path. Under ``streamlit run`` (the only place the warm start runs) the hint never applies, so mark it
    shown. Returns False if this Streamlit has no such flag (the check then just runs)."""
    from streamlit import delta_generator

    if not hasattr(delta_generator, "_use_warning_has_been_displayed"):
        return False
    delta_generator._use_warning_has_been_displayed = True
    return True


def freeze_long_lived() -> int:
    """Exempt every object alive now from later cycle collections (``gc.freeze``); returns the number of
    objects frozen so far. No collection first: the warm run ended with Streamlit's own full collection,
    and another one here (~0.1 s) would hold up the event loop while the first browser loads the page;
    freezing itself only relinks the collector's lists."""
    gc.freeze()
    frozen = gc.get_freeze_count()
    LOG.info("warm start: %d long-lived objects exempted from the per-rerun garbage collection", frozen)
    return frozen


@asynccontextmanager
async def lifespan(_app: Any) -> AsyncIterator[None]:
    """``st.App`` lifespan: start the warm-up without delaying the server, cancel it on shutdown."""
    task = asyncio.get_running_loop().create_task(warm_default_view(), name="tiebreak-warm-start")
    try:
        yield
    finally:
        task.cancel()


__all__ = ["freeze_long_lived", "lifespan", "skip_bare_mode_check", "warm_default_view"]
