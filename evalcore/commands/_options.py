"""Option values shared by the commands, parsed once: a bad one is an :class:`~evalcore.errors.InputError`
(one line on stderr, exit code 2), whichever command it was given to."""
from __future__ import annotations

from typing import Callable, Iterable


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


SEED_BOUNDS = (0, 2**31 - 1)
"""The seeds every command's ``--seed`` accepts (``explain``'s ``random:SEED`` tie policy; any command that
draws at random takes its seed through :data:`seed_type`): numpy's legacy seeding takes this range."""


def whole_number(name: str, low: int, high: int):
    """An argparse ``type``: a whole number in [low, high], else one argparse error naming the range."""
    import argparse
    import re

    def parse(text: str) -> int:
        cleaned = str(text).strip()
        if len(cleaned) > 40 or not re.fullmatch(r"[+-]?[0-9]+", cleaned):
            raise argparse.ArgumentTypeError(f"invalid {name} {text!r}: expected a whole number from {low:,} to "
                                             f"{high:,}")
        value = int(cleaned)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"invalid {name} {value}: expected {low:,} to {high:,}")
        return value
    return parse


seed_type = whole_number("seed", *SEED_BOUNDS)
"""``--seed``'s type in every command: :data:`SEED_BOUNDS`, stated in the help (:data:`SEED_HELP`)."""
SEED_HELP = f"a whole number from {SEED_BOUNDS[0]} to {SEED_BOUNDS[1]:,}"


def known_systems(requested: Iterable[str] | None, available: Iterable[str], option: str = "--system",
                  where: str = "the data") -> None:
    """Refuse (InputError, one line) every requested system name the data folder does not hold (``available``,
    e.g. a benchmark's systems), naming the closest valid names (or all of them when few); None or an empty
    list asks for nothing."""
    import difflib

    from evalcore.errors import InputError

    if not requested:
        return
    valid = sorted(set(map(str, available)))
    unknown = [name for name in dict.fromkeys(requested) if name not in set(valid)]
    if not unknown:
        return
    name = unknown[0]
    close = difflib.get_close_matches(name, valid, n=5, cutoff=0.6) or [
        v for v in valid if str(name).strip().lower() in v.lower()][:5]
    if close:
        hint = f"closest: {', '.join(close)}"
    elif len(valid) <= 8:
        hint = f"valid: {', '.join(valid) or 'none'}"
    else:
        hint = f"{len(valid)} systems; list them with evalcore leaderboard"
    more = f" (and {len(unknown) - 1} more unknown)" if len(unknown) > 1 else ""
    raise InputError(f"{option} {_printable(name)}: no such system in {where}{more} ({hint})")


def precision_option(value: str, option: str = "--precision", extra=()) -> str:
    """A precision label in its canonical spelling (``FP32``, `` fp32``, ``float32`` -> ``fp32``;
    ``BF16 + HPS`` -> ``bf16+hps``): one of :data:`evalcore.precision.PRECISION_LABELS`, else one of ``extra``
    (the labels a data folder already holds: an iterable, or a function returning one, called only then), else
    InputError naming the valid ones."""
    from evalcore.errors import InputError
    from evalcore.precision import PRECISION_LABELS, canonical_precision

    try:
        return canonical_precision(value)
    except ValueError:
        pass
    labels = [str(label) for label in (extra() if callable(extra) else extra)]
    try:
        return canonical_precision(value, labels)
    except ValueError:
        valid = list(dict.fromkeys([*PRECISION_LABELS, *sorted(set(labels) - set(PRECISION_LABELS))]))
        raise InputError(f"{option} {_printable(value)}: unknown precision (valid: {', '.join(valid)})") from None


def data_precisions(data) -> "Callable[[], list[str]]":
    """The precision labels the data folder ``data`` holds, read when called (for :func:`precision_option`)."""
    def labels() -> list[str]:
        from evalcore.store import Store, data_dir

        folder = data_dir(data)
        if not folder.is_dir():
            return []
        return Store(folder).facets()["conditions"]["precision"].dropna().astype(str).unique().tolist()
    return labels


def _printable(text) -> str:
    """``text`` quoted with its control characters escaped, short enough for one line."""
    shown = repr(str(text))
    return shown if len(shown) <= 80 else shown[:77] + "…'"
