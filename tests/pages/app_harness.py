"""Shared constants and helpers of the dashboard's AppTest suite (a uniquely named module, not conftest)."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")

# view file -> URL path (as app.py registers them)
PAGES = {
    "views/leaderboard.py": "leaderboard",
    "views/ties_precision.py": "ties-and-precision",
    "views/rank_flips.py": "rank-flips",
    "views/instructions.py": "instructions",
    "views/mcr_vs_full.py": "mcr-vs-full",
    "views/compare.py": "compare",
}


def texts(at, kind: str) -> list[str]:
    """Every rendered value of one element kind (``warning``, ``info``, ``error``, ``markdown``, …)."""
    return [str(el.value) for el in getattr(at, kind)]
