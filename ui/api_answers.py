"""The JSON API's answers: a view's URL parameters → the question its page asks → a JSON-ready record.

Each endpoint takes exactly the parameters of a view's link — the keys :data:`ui.state.PARAMS` lists for the
shared sidebar and for that view (:func:`ui.state.view_keys`), so a key added to the table reaches the API —
and passes them through two gates: :func:`screen` (unknown keys, another view's keys, repeated keys, over-long
values, control characters, with the limits of ``ui/state.py``) and the store's options (the sidebar's
:func:`ui.sidebar.choose_view_condition` with the URL's values, the page's own option lists for its controls,
:data:`BOARD_CHOICES`). Where the page drops a value with a notice and shows its default, the API refuses the
request (400) and names every bad key: a script never gets numbers for another question than the one it asked.
Notices never echo a rejected value; a key that is not plain letters, digits, ``_ - .`` is named
percent-encoded. The question is then the page's, through ``ui/data.py``: the API and the dashboard share the
answer cache (and its gate on expensive computations, ``ui/gate.py``).

Numbers are the CLI's: the leaderboard is :func:`evalcore.commands.leaderboard.json_record` (``evalcore
leaderboard --format json``), with more decimals (:data:`DIGITS`). What an answer depends on — the code
(:func:`code_digest`), the data folder's files (the snapshot's fingerprint, :func:`last_modified`) and the
query — is what ``ui/api.py`` makes its ETag and Last-Modified of.
"""
from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from evalcore.commands.leaderboard import json_record
from evalcore.store import Condition
from ui import board as boards
from ui import data, rank_flips, sidebar, state

R = TypeVar("R")
VERSION = 1
DIGITS = 10
"""Decimals of every float in an answer (the CLI's JSON prints 6)."""
MAX_ROWS = 5000
"""Rows per list in an answer; a longer list is cut and ``truncated`` names it with its full length."""
CHOICES_LISTED = 20
"""Options named in an error, at most."""
KEY_NAME_CHARS = 40
"""A refused key is named with at most this many characters (then "…")."""
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.\-]+")

CONDITION_KEYS = tuple(control.key for control in sidebar.CONTROLS)
"""The sidebar's condition keys (bench, setting, metric, instr, prec, ties): read by :func:`ask`."""
FILTER_KEYS = ("q", "family", "size_min", "size_max", "open", "itune")
"""The sidebar's system filter: read by :func:`_filters`."""
FLIP_OWN = ("flip_a", "flip_b", "flip_task")
"""Rank flips' own keys: read by :func:`flips`."""
SYSTEM_KEY = "system"
CODE_FOLDERS = ("evalcore", "ui")
"""The code an answer depends on (:func:`code_digest`), relative to the repository."""


@dataclass(frozen=True)
class Endpoint:
    """One question: its name (the path under ``/api/v1/``), the view whose link it reads (its URL path, '' for
    the Leaderboard at the app's root; ``link_view`` names it in :data:`ui.state.PARAMS`), the URL keys it
    takes and the extra key of its own (the system's name), if any."""

    name: str
    view: str
    link_view: str = ""
    extra: str = ""

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys of the view's link (read from :data:`ui.state.PARAMS` when asked)."""
        return state.view_keys(self.link_view) if self.link_view else ()


ENDPOINTS = {e.name: e for e in (
    Endpoint("conditions", ""),
    Endpoint("leaderboard", "", "leaderboard"),
    Endpoint("system", "", "leaderboard", extra=SYSTEM_KEY),
    Endpoint("rank-flips", "rank-flips", "rank-flips"),
)}


class ApiError(Exception):
    """An answer that is not a record: HTTP ``status``, what went wrong (one or more notices) and, for a
    refusal, the keys refused (as :func:`key_name` names them)."""

    def __init__(self, status: int, *notices: str, refused: Sequence[str] = ()) -> None:
        super().__init__(" ".join(notices))
        self.status = status
        self.notices = list(notices)
        self.refused = list(dict.fromkeys(refused))


class Refusals:
    """The 400 notices of one request, collected through both gates so the refusal names every bad key at once;
    :meth:`check` raises them (before anything is computed)."""

    def __init__(self, notices: Sequence[str] = (), refused: Sequence[str] = ()) -> None:
        self.notices, self.refused = list(notices), list(refused)

    def add(self, error: ApiError) -> None:
        if error.status != 400:
            raise error
        self.notices += error.notices
        self.refused += error.refused

    def attempt(self, check: Callable[[], R], fallback: R) -> R:
        """``check()``, or ``fallback`` with its refusal kept."""
        try:
            return check()
        except ApiError as error:
            self.add(error)
            return fallback

    def check(self) -> None:
        if self.notices:
            raise ApiError(400, *self.notices, refused=self.refused)


def key_name(key: str) -> str:
    """How a notice names ``key``: as it is when plain (letters, digits, ``_ - .``), else percent-encoded (an
    inert spelling of the very key: ``<img>`` is ``%3Cimg%3E``); cut at :data:`KEY_NAME_CHARS` characters."""
    shown = key if _PLAIN_KEY.fullmatch(key) else quote(key, safe="")
    return shown if len(shown) <= KEY_NAME_CHARS else shown[:KEY_NAME_CHARS] + "…"


def _named(keys: Sequence[str]) -> str:
    return ", ".join(f"`{key_name(key)}`" for key in keys)


# -------------------------------------------------------------------------------------------- the gates
def screen(endpoint: Endpoint,
           items: Sequence[tuple[str, str]]) -> tuple[dict[str, list[str]], str | None, Refusals]:
    """The first gate for ``items`` (the query's (key, value) pairs in order): (accepted values by key, the
    endpoint's extra value, the refusals: every refused key, each with what is wrong)."""
    raw: dict[str, list[str]] = {}
    for key, value in items:
        raw.setdefault(key, []).append(value)
    accepted: dict[str, list[str]] = {}
    notices: list[str] = []
    refused: list[str] = []
    unknown: list[str] = []
    elsewhere: list[str] = []
    extra_value: str | None = None

    def refuse(key: str, what: str) -> None:
        notices.append(f"`{key_name(key)}`: {what}.")
        refused.append(key_name(key))

    for key, values in raw.items():
        param = state.PARAMS.get(key)
        if key == endpoint.extra:
            if len(values) > 1:
                refuse(key, f"given {len(values)} times; give it once")
            elif len(values[0]) > state.MAX_VALUE_CHARS or state.has_control_chars(values[0]):
                refuse(key, f"not a system name (at most {state.MAX_VALUE_CHARS} printable characters)")
            else:
                extra_value = values[0]
            continue
        if param is None:
            unknown.append(key)
        elif key not in endpoint.keys:
            elsewhere.append(key)
        elif not param.repeatable and len(values) > 1:
            refuse(key, f"given {len(values)} times; give it once")
        elif len(values) > state.MAX_VALUES_PER_KEY:
            refuse(key, f"given {len(values)} times; at most {state.MAX_VALUES_PER_KEY}")
        elif any(len(value) > state.MAX_VALUE_CHARS for value in values):
            longest = max(len(value) for value in values)
            refuse(key, f"a value of {longest:,} characters (at most {state.MAX_VALUE_CHARS})")
        elif any(state.has_control_chars(value) for value in values):
            refuse(key, "a value with control characters")
        else:
            accepted[key] = values
    where = f"/api/v{VERSION}/{endpoint.name}"
    its_keys = f"its keys: {', '.join(endpoint.keys)}" if endpoint.keys else "it takes no parameters"
    if unknown:
        notices.append(f"{'Unknown parameter' if len(unknown) == 1 else f'{len(unknown)} unknown parameters'} "
                       f"{_named(unknown)} ({where}'s keys: {', '.join(endpoint.keys) or 'none'}).")
        refused += [key_name(key) for key in unknown]
    if elsewhere:
        notices.append(f"{_named(elsewhere)} {'belongs' if len(elsewhere) == 1 else 'belong'} to another view's "
                       f"link, not to {where} ({its_keys}).")
        refused += [key_name(key) for key in elsewhere]
    if endpoint.extra and endpoint.extra not in raw:
        refuse(endpoint.extra, "missing: name one system")
    return accepted, extra_value, Refusals(notices, refused)


def _choices(values: Sequence[str]) -> str:
    shown = ", ".join(map(str, list(values)[:CHOICES_LISTED]))
    return shown + (f" … ({len(values)} in all)" if len(values) > CHOICES_LISTED else "")


def _not_a_choice(key: str, options: Sequence[str]) -> str:
    return f"`{key}`: the value is not one of the {len(options)} choices here: {_choices(options)}."


def _one_of(params: Mapping[str, list[str]], key: str, options: Sequence[str], default: str) -> str:
    """The second gate for a single-choice key: its value when it is one of ``options``, else ``default``
    when absent; anything else is an ApiError(400) naming the key and the choices (never the value)."""
    values = params.get(key)
    if values is None:
        return default
    if values[0] in options:
        return values[0]
    raise ApiError(400, _not_a_choice(key, options), refused=[key])


class FromUrl(sidebar.Chooser):
    """The sidebar's controls with the URL's values: a value must be one the control offers here (the page drops
    anything else with a notice; here it is refused), an absent key takes the first visit's default."""

    def __init__(self, params: Mapping[str, list[str]]) -> None:
        self.params = params
        self.errors: list[str] = []
        self.refused: list[str] = []

    def choose(self, control: sidebar.Control, offer: sidebar.Offer, label) -> str:
        wanted = self.wish(control)
        if wanted is None or wanted in offer.options:
            return offer.default if wanted is None else wanted
        self.refused.append(control.key)
        if wanted in offer.elsewhere:
            self.errors.append(f"`{control.key}`: not offered here ({offer.elsewhere[wanted]}); choices: "
                               f"{_choices(offer.options)}.")
        else:
            self.errors.append(_not_a_choice(control.key, offer.options))
        return offer.default

    def wish(self, control: sidebar.Control) -> str | None:
        values = self.params.get(control.key)
        return values[0] if values else None

    def fixed(self, control: sidebar.Control, text: str, values: Sequence[str]) -> None:
        wanted = self.wish(control)
        if wanted is not None and wanted not in values:
            self.refused.append(control.key)
            self.errors.append(f"`{control.key}`: the value is not one of the {len(values)} choices: "
                               f"{_choices(values)}.")


@dataclass
class Asked:
    """A screened request: the data, the condition the sidebar chose, the system filter and the params."""

    view: sidebar.View
    params: dict[str, list[str]]
    filter_notes: list[str]
    refusals: Refusals = field(default_factory=Refusals)

    @property
    def cond(self) -> Condition:
        return self.view.cond


@dataclass(frozen=True)
class Question:
    """A screened request, before anything is computed: the endpoint, the accepted parameters, the endpoint's
    extra value, the query as given and the data folder's snapshot every answer to it is computed on (its
    fingerprint goes into the ETag, ``ui/api.py``)."""

    endpoint: Endpoint
    params: dict[str, list[str]]
    extra: str | None
    items: tuple[tuple[str, str], ...]
    data_dir: Path
    snapshot: data.Snapshot
    refusals: Refusals
    """What the first gate refused: the endpoint's own checks add theirs, and the request is refused with all."""


def question(name: str, items: Sequence[tuple[str, str]]) -> Question:
    """The screened question of endpoint ``name`` for the query's (key, value) pairs, on the data folder's
    current snapshot; ApiError (404 no such endpoint or no data folder; 400 refused, for an endpoint without
    parameters) when there is none. The other refusals wait in :attr:`Question.refusals` for the second gate's,
    so that one answer names them all."""
    endpoint = ENDPOINTS.get(name)
    if endpoint is None:
        raise ApiError(404, f"No endpoint of that name; endpoints: {', '.join(ENDPOINTS)}.")
    params, extra, refusals = screen(endpoint, items)
    if not endpoint.keys:
        refusals.check()
    data_dir = data.data_dir_from()
    if not data_dir.is_dir():
        raise ApiError(404, "The server has no data folder.")
    return Question(endpoint, params, extra, tuple(items), data_dir, data.snapshot(data_dir), refusals)


def ask(asked: Question, need: sidebar.Need | None = None, title: str = "This view") -> Asked:
    """The sidebar's condition and system filter for the question's parameters (the page's defaults for absent
    keys, and for refused ones: their refusals are collected, :attr:`Asked.refusals`)."""
    params, snapshot, refusals = asked.params, asked.snapshot, asked.refusals
    facets = data.facets(snapshot)
    if not facets.get("benchmarks"):
        raise ApiError(404, "No results in the data folder.")
    chooser = FromUrl(params)
    good = sidebar.need_rows(snapshot, need.rows) if need is not None else None
    chosen = sidebar.choose_view_condition(facets, chooser, need, None, title, None, good)
    if chooser.errors:
        refusals.add(ApiError(400, *chooser.errors, refused=chooser.refused))
    if chosen.cond is None:
        raise ApiError(404, "No results in the data folder.")
    if chosen.unmet:
        refusals.check()
        raise ApiError(404, f"{title} needs {need.what}: no condition in the data folder has them.")
    view = sidebar.View(data_dir=asked.data_dir, data=snapshot, facets=facets, cond=chosen.cond)
    view.systems, notes = _filters(params, snapshot, facets, chosen.cond.benchmark, refusals)
    return Asked(view, params, notes, refusals)


def _filters(params: Mapping[str, list[str]], snapshot: data.Snapshot, facets: dict, bench: str,
             refusals: Refusals) -> tuple[tuple[str, ...] | None, list[str]]:
    """The sidebar's system filter (``q``, ``family``, sizes, ``open``, ``itune``) through the page's gates (a
    refused value is collected in ``refusals`` and left out)."""
    search = (params.get("q") or [""])[0]
    if not state.SEARCH_PATTERN.fullmatch(search):
        refusals.add(ApiError(400, "`q`: the search text has characters a system name never has.", refused=["q"]))
        search = ""
    families = list(dict.fromkeys(params.get("family") or []))
    known = set(facets.get("families") or [])
    unknown = [f for f in families if f not in known]
    if unknown:
        refusals.add(ApiError(400, f"`family`: {len(unknown)} of the values {'is' if len(unknown) == 1 else 'are'} "
                                   f"not a family of the data; choices: {_choices(sorted(known))}.",
                              refused=["family"]))
        families = []
    ladder = list(sidebar.SIZE_LADDER)
    lo = refusals.attempt(lambda: _one_of(params, "size_min", ladder[:-1], "0"), "0")
    hi = refusals.attempt(lambda: _one_of(params, "size_max", ladder[:0:-1], "no limit"), "no limit")
    if ladder.index(lo) >= ladder.index(hi):  # the page warns and ignores both bounds; a script is told
        refusals.add(ApiError(400, f"`size_min`, `size_max`: the smallest size ({lo}) is not below the largest "
                                   f"({hi}).", refused=["size_min", "size_max"]))
        lo, hi = "0", "no limit"
    open_w = refusals.attempt(lambda: _one_of(params, "open", list(sidebar.YES_NO_ANY), "any"), "any")
    itune = refusals.attempt(lambda: _one_of(params, "itune", list(sidebar.YES_NO_ANY), "any"), "any")
    systems, summary = sidebar.filter_systems(snapshot, bench, search=search.strip(), families=families,
                                              size_min=lo, size_max=hi, open_weights=open_w,
                                              uses_instructions=itune)
    return systems, [summary] if summary else []


def _unanswered(params: Mapping[str, list[str]], answered: Sequence[str]) -> None:
    """A key of the view's link this API does not answer (a key new in :data:`ui.state.PARAMS` not wired here):
    501, never an answer that silently ignores it."""
    left = [key for key in params if key not in CONDITION_KEYS + FILTER_KEYS + tuple(answered)]
    if left:
        raise ApiError(501, f"{_named(left)}: part of the view's link, but this server's API does not answer "
                            f"{'it' if len(left) == 1 else 'them'} yet.", refused=left)


# -------------------------------------------------------------------------------------------- records
def clean(value):
    """``value`` with every non-finite float as None (JSON has no NaN) and numpy scalars as Python ones."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def records(frame) -> list[dict]:
    """A frame as JSON records: explicit column names, NaN / NA as null, floats to :data:`DIGITS` decimals."""
    import json

    return json.loads(frame.to_json(orient="records", double_precision=DIGITS, date_format="iso"))


def _bounded(record: dict) -> dict:
    """``record`` with every top-level list cut to :data:`MAX_ROWS` (``truncated``: the lists cut, full lengths)."""
    cut = {key: len(value) for key, value in record.items() if isinstance(value, list) and len(value) > MAX_ROWS}
    for key in cut:
        record[key] = record[key][:MAX_ROWS]
    if cut:
        record["truncated"] = cut
    return record


def _params_out(endpoint: Endpoint, asked: Asked, **shown: str) -> dict[str, str | list[str]]:
    """The validated parameters as a view link carries them: the condition always, the rest as given."""
    out: dict[str, str | list[str]] = dict(sidebar.url_values(asked.cond))
    if endpoint.name == "rank-flips":  # its two precisions are flip_a and flip_b
        del out["prec"]
    for key, values in asked.params.items():
        if key not in out and key not in shown:
            out[key] = values if state.PARAMS[key].repeatable else values[0]
    out.update(shown)
    return out


def _envelope(endpoint: Endpoint, asked: Asked | None, params: dict, body: dict) -> dict:
    meta = {"version": VERSION, "endpoint": endpoint.name, "view": endpoint.view, "params": params}
    if asked is not None:
        meta["data_fingerprint"] = asked.view.data.fingerprint
        meta["filter"] = asked.filter_notes
    return _bounded(clean({"api": meta, **body}))


def conditions(question: Question) -> dict:
    """Every condition the data has results under (benchmark × setting × metric × instruction × precision ×
    tie policy, with its counts of systems and tasks), and the benchmarks with their tasks."""
    facets = data.facets(question.snapshot)
    table = facets.get("conditions")
    rows = records(table) if table is not None and len(table) else []
    by_benchmark = {name: {"tasks": list(info.get("tasks") or [])}
                    for name, info in (facets.get("by_benchmark") or {}).items()}
    return _envelope(question.endpoint, None, {}, {"benchmarks": list(facets.get("benchmarks") or []),
                                                   "by_benchmark": by_benchmark, "conditions": rows})


@dataclass(frozen=True)
class Choice:
    """One of the Leaderboard page's controls (``pages/leaderboard.py``): what it offers and its default for a
    benchmark, and the :func:`ui.data.leaderboard` argument it sets ('' when it only changes what the page
    draws), parsed from the URL's text by ``parse``."""

    options: Callable[[str], Sequence[str]]
    default: Callable[[str], str]
    argument: str = ""
    parse: Callable[[str], object] = str


FLAG = ("0", "1")
BOARD_CHOICES: dict[str, Choice] = {
    "sort": Choice(lambda bench: list(boards.ORDERS), boards.default_order),
    "mean": Choice(lambda bench: FLAG, lambda bench: "0"),
    "borda": Choice(lambda bench: FLAG, lambda bench: "0"),
    "chart": Choice(lambda bench: list(boards.CHARTS), lambda bench: "intervals"),
    "lens": Choice(lambda bench: list(boards.LENSES), lambda bench: "queries"),  # the answer carries both lenses
    "ranks": Choice(lambda bench: list(boards.RANK_KINDS), lambda bench: "marginal", "ranks", str),
    "level": Choice(lambda bench: boards.LEVELS, lambda bench: "0.95", "level", float),
    "common": Choice(lambda bench: FLAG, lambda bench: "0", "common_tasks", lambda value: value == "1"),
}
"""The Leaderboard's keys with fixed options, as its page offers them: a key new to the Leaderboard's part of
:data:`ui.state.PARAMS` is answered once it has its line here (else 501, :func:`_unanswered`)."""
BOARD_OWN = ("pin",)
"""The Leaderboard's keys read by :func:`_board` itself (their options are the data's)."""


def _board(asked: Asked):
    """The Leaderboard's question for ``asked`` (the page's controls and defaults): (board, order)."""
    params, bench, refusals = asked.params, asked.cond.benchmark, asked.refusals
    _unanswered(params, tuple(BOARD_CHOICES) + BOARD_OWN)
    values = {key: refusals.attempt(lambda: _one_of(params, key, choice.options(bench), choice.default(bench)),
                                    choice.default(bench)) for key, choice in BOARD_CHOICES.items()}
    pins = list(dict.fromkeys(params.get("pin") or []))
    if pins:  # the page drops a pin the benchmark lacks with a notice
        known = set(data.systems(asked.view.data, benchmark=bench)["system"])
        unknown = sum(pin not in known for pin in pins)
        if unknown:
            refusals.add(ApiError(400, f"`pin`: {unknown} of the values {'is' if unknown == 1 else 'are'} not a "
                                       f"system of this benchmark; /api/v{VERSION}/leaderboard lists them.",
                                  refused=["pin"]))
    refusals.check()  # nothing is computed for a refused request
    arguments = {choice.argument: choice.parse(values[key]) for key, choice in BOARD_CHOICES.items()
                 if choice.argument}
    order = values["sort"]
    board = data.leaderboard(asked.view.data, asked.cond,
                             systems=boards.board_systems(asked.view.systems, pins, values["common"] == "1"),
                             aggregate=boards.aggregate_for(order, bench), **arguments)
    return board, order


def leaderboard(question: Question) -> dict:
    """The Leaderboard of a link: ``evalcore leaderboard --format json``'s record for the page's question, its
    ranked rows in the page's order (``sort=borda``: by Borda points, each row with its ``borda``)."""
    asked = ask(question)
    board, order = _board(asked)
    body = json_record(board, asked.cond, digits=DIGITS)
    if order == "borda":
        position = {name: i for i, name in enumerate(boards.ordered(board, order)["system"])}
        borda = dict(zip(board.ranked["system"], board.ranked["borda"]))
        body["ranked"] = sorted(({**row, "borda": borda.get(row["system"])} for row in body["ranked"]),
                                key=lambda row: position.get(row["system"], len(position)))
    body["order"] = order
    return _envelope(question.endpoint, asked, _params_out(question.endpoint, asked), body)


def system(question: Question) -> dict:
    """One system under a Leaderboard link: its row on that board (ranked or not) and its score on every task
    (value under the tie policy, expected over all orderings of tied documents, min, max, queries, share of
    queries tied at the cutoff, source)."""
    name = question.extra
    asked = ask(question)
    board, order = _board(asked)
    whole = json_record(board, asked.cond, digits=DIGITS)
    row = next((r for r in whole["ranked"] if r["system"] == name), None)
    missing = next((r for r in whole["incomplete"] if r["system"] == name), None)
    if row is None and missing is None:
        raise ApiError(404, f"`{SYSTEM_KEY}`: no system of that name on this board (its condition and filters); "
                            f"/api/v{VERSION}/leaderboard lists them.")
    tasks = data.task_table(asked.view.data, asked.cond, systems=(name,))
    tasks = tasks.drop(columns=[c for c in ("system",) if c in tasks]).sort_values("task", kind="stable")
    body = {"system": name, "condition": whole["condition"], "ranked_by": whole["ranked_by"],
            "uncertainty": {key: whole["uncertainty"][key] for key in ("level", "ranks")} if whole["uncertainty"]
            else None, "row": row, "incomplete": missing, "tasks": records(tasks)}
    return _envelope(question.endpoint, asked, _params_out(question.endpoint, asked, system=name), body)


def flips(question: Question) -> dict:
    """The Rank flips view of a link: ranks under precisions A and B (by the benchmark's own aggregate over the
    tasks both share, or one task's score), Kendall τ-b, flipped pairs and pairs whose tie ranges overlap."""
    asked = ask(question, need=rank_flips.NEED, title="Rank flips")
    params, view, refusals = asked.params, asked.view, asked.refusals
    _unanswered(params, FLIP_OWN)
    precisions, left_out = rank_flips.paired_precisions(view)
    if len(precisions) < 2:
        refusals.check()
        raise ApiError(404, f"Only one precision ({', '.join(precisions) or 'none'}) has results here: a rank flip "
                            "compares two.")
    default_a, default_b = rank_flips.default_pair(precisions)
    prec_a = refusals.attempt(lambda: _flip_precision(params, "flip_a", precisions, left_out, default_a), default_a)
    prec_b = refusals.attempt(lambda: _flip_precision(params, "flip_b", precisions, left_out, default_b), default_b)
    own = rank_flips.aggregate(view)  # the benchmark's own aggregate: G for RAR-b, mean for R2MED and CRUMB
    scope = refusals.attempt(lambda: _one_of(params, "flip_task", rank_flips.scopes(view, prec_a, prec_b), own), own)
    if prec_a == prec_b and ("flip_a" in params or "flip_b" in params):
        refusals.add(ApiError(400, "`flip_a`, `flip_b`: the same precision twice; pick two different ones.",
                              refused=["flip_a", "flip_b"]))
    refusals.check()
    answer = data.rank_flips(view.data, replace(view.cond, precision=prec_a), replace(view.cond, precision=prec_b),
                             systems=view.systems, tasks=None if scope == own else [scope])
    condition = {**asked.cond.__dict__, "precision": None}
    body = {"condition": condition, "precision_a": prec_a, "precision_b": prec_b, "ranked_by": scope,
            "tasks": list(answer.tasks), "kendall_tau_b": answer.kendall_tau_b, "ranks": records(answer.ranks),
            "flipped_pairs": records(answer.flipped_pairs), "overlapping_pairs": records(answer.overlapping_pairs)}
    shown = {"flip_a": prec_a, "flip_b": prec_b} | ({"flip_task": scope} if scope != own else {})
    return _envelope(question.endpoint, asked, _params_out(question.endpoint, asked, **shown), body)


def _flip_precision(params: Mapping[str, list[str]], key: str, precisions: list[str], left_out: list[str],
                    default: str) -> str:
    values = params.get(key)
    if values is not None and values[0] in left_out:
        raise ApiError(400, f"`{key}`: not offered here (no two systems have it and another precision); "
                            f"choices: {_choices(precisions)}.", refused=[key])
    return _one_of(params, key, precisions, default)


ANSWERS: dict[str, Callable[[Question], dict]] = {"conditions": conditions, "leaderboard": leaderboard,
                                                  "system": system, "rank-flips": flips}


def answer(asked: Question | str, items: Sequence[tuple[str, str]] = ()) -> dict:
    """The record answering ``asked`` (a :class:`Question`, or an endpoint's name with the query's (key, value)
    pairs); ApiError when there is none. May raise :class:`ui.gate.Busy` (too many computations at once)."""
    if isinstance(asked, str):
        asked = question(asked, items)
    return ANSWERS[asked.endpoint.name](asked)


# -------------------------------------------------------------------------------------------- versions
def _code_version() -> tuple[str, float]:
    """(sha256, newest modification time) of the code every answer is computed by: the ``.py`` files under
    :data:`CODE_FOLDERS`, with their paths."""
    root = Path(__file__).resolve().parent.parent
    digest, newest = hashlib.sha256(), 0.0
    for folder in CODE_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
            newest = max(newest, path.stat().st_mtime)
    return digest.hexdigest(), newest


CODE_DIGEST, CODE_MTIME = _code_version()
"""The code this process runs (read when the first API request imports this module, ~5 ms): a server running
other code gives other ETags."""


def last_modified(question: Question) -> float:
    """When an answer from the question's snapshot may last have changed (POSIX seconds): the newest
    modification time of the data folder, its parquet files and the folders holding them (a removed file
    changes its folder's), and of the code (:data:`CODE_MTIME`). A stat per file, ~0.5 ms on the shipped data."""
    from evalcore.store import catalogue

    newest = max(CODE_MTIME, os.stat(question.data_dir).st_mtime)
    for runs in (False, True):
        for path in catalogue.walk_parquet(question.data_dir, runs=runs)[0]:
            try:
                newest = max(newest, os.stat(path).st_mtime, os.stat(path.parent).st_mtime)
            except OSError:
                continue
    return newest
