"""What a test needs from outside the repository, said once: skip with a reason locally, fail in CI.

On a developer's clean clone, a test that needs the upstream sources or an optional dependency that is not
installed is skipped with a reason naming how to get it. In CI (``CI`` set to true/1/yes) the same absence is
a failure: CI installs everything and has the sources, so a skip there would hide a broken set-up.

    from needs import require_source, require_module
    RARB = require_source("rarb-mcr")           # inside a test or fixture: the folder, or skip / fail
    pytrec_eval = require_module("pytrec_eval")  # the module, or skip / fail (at module level: the module's tests)

Never for the project's own modules: a broken ``evalcore`` must fail its tests, not skip them.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from evalcore import sources


def in_ci(environ: dict | None = None) -> bool:
    """True when running under CI (``CI`` is ``true``, ``1`` or ``yes``, any case)."""
    environ = os.environ if environ is None else environ
    return environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def missing(reason: str) -> None:
    """Skip this test (or, called at import time, the whole module) with ``reason``; in CI, fail instead."""
    if in_ci():
        pytest.fail(f"needed in CI but missing: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_source(name: str) -> Path:
    """The folder of upstream source ``name`` (see :mod:`evalcore.sources`), or skip / fail."""
    reason = sources.missing_reason(name)
    if reason is not None:
        missing(reason)
    return sources.source_dir(name)


def require_module(name: str, hint: str = "bash scripts/install-dev.sh"):
    """``importlib.import_module(name)``, or skip / fail naming the install command. Only for optional
    third-party dependencies: the project's own modules are imported plainly, so a broken one fails."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing(f"optional dependency {name!r} not importable ({exc}); install with `{hint}`")
