"""Words for numbers shown to a visitor: "1 pair", "3 pairs" — never "1 pair(s)"."""
from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` in agreement: ``counted(1, "pair")`` → "1 pair", ``counted(2, "pair")`` → "2 pairs";
    ``plural`` for a noun whose plural is not ``noun + "s"``; the number is printed with thousands separators.
    For a phrase, count its noun and add the rest: ``counted(2, "group") + " of rows"``."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def shown_count(n: int, limit: int) -> int:
    """How many of ``n`` items a list of at most ``limit`` shows: all when only one would be left over ("and 1
    more" takes the room of the one it hides)."""
    return n if n <= limit + 1 else limit


def listed(names, limit: int, separator: str = ", ") -> str:
    """``names`` joined, the first ``limit`` and "and N more" when more than one is left over."""
    names = list(names)
    shown = shown_count(len(names), limit)
    return separator.join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, …, 11th–13th, 21st."""
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
