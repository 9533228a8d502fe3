"""Option values shared by the commands, parsed once: a bad one is an :class:`~evalcore.errors.InputError`
(one line on stderr, exit code 2), whichever command it was given to."""
from __future__ import annotations

from typing import Iterable


def metrics_option(value: str | Iterable[str], option: str = "--metrics") -> list:
    """``--metrics`` as a list of :class:`evalcore.metrics.Metric` (canonical, case-insensitive)."""
    from evalcore.errors import InputError
    from evalcore.metrics import parse_metrics

    try:
        return parse_metrics(value)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None


def tie_policy_option(value: str, option: str = "--tie-policy"):
    """``--tie-policy`` as an :class:`evalcore.engine.TiePolicy` (``str()`` of it is the canonical spelling)."""
    from evalcore.engine import parse_tie_policy
    from evalcore.errors import InputError

    try:
        return parse_tie_policy(value)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None
