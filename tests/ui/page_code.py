"""Functions of the page scripts under ``pages/`` (figure builders, say) for the UI tests, without running the
pages."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def page_function(file: str, name: str):
    """The function ``name`` of ``pages/<file>``, taken from the script's code without running the page (its
    last line, ``render()``, is left out)."""
    source = (ROOT / "pages" / file).read_text().replace("\nrender()\n", "\n")
    namespace = {"__name__": f"{Path(file).stem}_under_test"}
    exec(compile(source, file, "exec"), namespace)
    return namespace[name]
