"""evalcore: tie-aware retrieval evaluation (TRM) and high-precision scoring (HPS).

Public API (imported lazily so the CLI starts fast):

- :func:`evaluate` (``evalcore.engine``): per-query oblivious / expected / min / max for each metric.
- :func:`summarize` (``evalcore.engine``): per-metric means, range, bias and tie share.
- :func:`what_if` (``evalcore.precision``): FP32 vs low precision vs HPS side by side.

Definitions follow McSherry & Najork (ECIR 2008) and Yang et al. (ACL 2026, arXiv 2508.03306).
"""
from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "evaluate": "evalcore.engine",
    "summarize": "evalcore.engine",
    "what_if": "evalcore.precision",
    "InputError": "evalcore.errors",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'evalcore' has no attribute {name!r}")
