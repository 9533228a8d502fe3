"""Which systems of a board name the same model.

Sources spell a model differently: the MTEB results name it with its Hugging Face organisation
(``GritLM/GritLM-7B``), the R2MED paper by the model alone (``GritLM-7B``), our own runs with ``tiebreak-run/``
in front (``tiebreak-run/all-MiniLM-L6-v2``). Two names are taken to denote the same model when their last
path part agrees ignoring case (:func:`model_key`). A board keeps such rows apart — each is its own evaluation
(its own pipeline, truncation, library version), and their scores can differ by several points — but a reader
must be told that one model holds two ranks.
"""
from __future__ import annotations

from typing import Iterable


def model_key(system: str) -> str:
    """The part of a system's name that names the model: after the last ``/``, case-folded."""
    return system.rsplit("/", 1)[-1].strip().casefold()


def same_model_groups(systems: Iterable[str]) -> list[list[str]]:
    """Groups of two or more distinct names with the same :func:`model_key`, each in the order the names come,
    the groups in the order of their first name."""
    groups: dict[str, list[str]] = {}
    for name in systems:
        group = groups.setdefault(model_key(name), [])
        if name not in group:
            group.append(name)
    return [names for names in groups.values() if len(names) > 1]
