"""Where a control change goes in the browser: the dashboard's Leaderboard and the Streamlit floor, one after
the other in one run, each on a new server, in the same Chromium as bench/bench_app.py.

For each app, after every precision has been visited once (so each later change is a cached one):

- **main-thread time per change**, by script: a CDP CPU profile (``Profiler``, 0.2 ms sampling) over
  ``--changes`` precision changes, each as bench_app.py makes it (open the list, filter it, click the
  option, wait for the URL and the idle script). Opening and filtering the list are inside the profile:
  compare the two apps' figures, not a figure with a change's time. ``(program)`` is Chromium's own work
  (style, layout, paint), ``(idle)`` the main thread waiting.
- **which elements are drawn again**: a ``MutationObserver`` over one change, counting the element containers
  whose ``data-stale`` attribute toggles (Streamlit re-renders them: every element of the page, changed or
  not) and those whose content changes (child nodes or text).

    python bench/change_anatomy.py               # 12 changes per app
    python bench/change_anatomy.py --changes 24

Prints markdown tables; figures in bench/RESULTS.md § Dashboard.
"""
from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_app as B  # noqa: E402  (also puts tests/e2e on the path)

OBSERVE = """() => {
  window.__stale = new Set(); window.__content = new Set();
  const name = c => { const inner = c.querySelector('[data-testid]'); const side = c.closest('[data-testid=stSidebar]');
    return (side ? 'sidebar ' : 'main ') + (inner ? inner.getAttribute('data-testid') : '?') + ' '
      + Array.prototype.indexOf.call(document.querySelectorAll('[data-testid=stElementContainer]'), c); };
  window.__observer = new MutationObserver(records => { for (const r of records) {
    const node = r.target.nodeType === 1 ? r.target : r.target.parentElement;
    const box = node && node.closest('[data-testid=stElementContainer]');
    if (!box) continue;
    if (r.type === 'attributes' && r.attributeName === 'data-stale' && node === box) window.__stale.add(name(box));
    else if (r.type !== 'attributes') window.__content.add(name(box));
  }});
  window.__observer.observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
}"""


def _open_app(context, app: Path):
    """A new server for ``app`` opened in a new tab, every precision visited once; (proc, page, precisions)."""
    proc, _, page, _, _ = B._cold_start(context, B.ROOT / "data", B.ROOT / "bench" / "out" / "anatomy.log", app=app)
    setting, precisions = (("full", B.floor_precisions()) if app == B.FLOOR_APP
                           else B.precisions_of(B.ROOT / "data"))
    B._precision_changes(page, setting, precisions, 1)
    offered = B._offered_precisions(page)
    return proc, page, [p for p in precisions if p in offered]


def _profile(context, page, precisions: list[str], changes: int) -> tuple[dict[str, float], list[float]]:
    """Main-thread ms per change by script over ``changes`` cached changes, and each change's seconds."""
    cdp = context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 200})
    cdp.send("Profiler.start")
    seconds = [B._commit_precision(page, precisions[i % len(precisions)]) for i in range(changes)]
    profile = cdp.send("Profiler.stop")["profile"]
    frames = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    by_script: collections.Counter = collections.Counter()
    for node, delta in zip(profile["samples"], profile["timeDeltas"]):
        frame = frames[node]
        script = frame["url"].rsplit("/", 1)[-1]
        by_script[re.sub(r"\.[-\w]{8}\.js$", ".js", script) or frame["functionName"] or "?"] += delta
    return {script: us / 1000 / changes for script, us in by_script.items()}, seconds


def _census(page, precision: str) -> tuple[int, int, int]:
    """(element containers on the page, containers re-rendered, containers whose content changed) in one change
    to ``precision``."""
    box = B.combobox(page, "Precision")
    box.click()
    box.fill(precision)
    option = page.get_by_role("option", name=re.compile(rf"^{re.escape(precision)}( \(.*\))?$")).first
    option.wait_for(timeout=60_000)
    page.evaluate(OBSERVE)
    option.click()
    B._idle_after(page, f"prec={precision.replace('+', '%2B')}&")
    page.evaluate("window.__observer.disconnect()")
    total = page.evaluate("document.querySelectorAll('[data-testid=stElementContainer]').length")
    return total, page.evaluate("window.__stale.size"), page.evaluate("window.__content.size")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=12, help="cached changes profiled per app")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=B.CHROMIUM, args=B.CHROMIUM_ARGS)
        for label, app in (("dashboard", B.DASHBOARD_APP), ("floor", B.FLOOR_APP)):
            context = browser.new_context(viewport=B.VIEWPORT)
            proc, page, precisions = _open_app(context, app)
            try:
                by_script, seconds = _profile(context, page, precisions, args.changes)
                census = _census(page, next(p for p in precisions if p != "fp32"))
            finally:
                context.close()
                B._stop(proc)
            results[label] = by_script, seconds, census
        browser.close()
    busy = {label: sum(ms for script, ms in r[0].items() if script != "(idle)") for label, r in results.items()}
    print("| | change (median s) | main thread busy per change (ms) | element containers | re-rendered in one "
          "change | content changed |\n|---|---:|---:|---:|---:|---:|")
    for label, (_, seconds, census) in results.items():
        print(f"| {label} | {sorted(seconds)[len(seconds) // 2]:.3f} | {busy[label]:.0f} | {census[0]} | {census[1]} | "
              f"{census[2]} |")
    dash, floor = results["dashboard"][0], results["floor"][0]
    print("\n| script | dashboard (ms per change) | floor (ms per change) | difference |\n|---|---:|---:|---:|")
    for script in sorted(set(dash) | set(floor), key=lambda s: -(dash.get(s, 0) - floor.get(s, 0)))[:15]:
        print(f"| {script} | {dash.get(script, 0):.1f} | {floor.get(script, 0):.1f} | "
              f"{dash.get(script, 0) - floor.get(script, 0):+.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
