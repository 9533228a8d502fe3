"""The JSON API's answers: a view's URL parameters → the question its page asks → a JSON-ready record.

Each endpoint takes exactly the parameters of a view's link (``ui.state.PARAMS``) and passes them through the
page's two gates: :func:`ui.state.screen_query_params` (unknown keys, repeated keys, over-long values, control
characters) and the store's options (the sidebar's :func:`ui.sidebar.choose_view_condition` with the URL's
values, the page's own option lists for its controls). Where the page drops a value with a notice, the API
answers 400 with the notices instead: a script never gets numbers for another question than the one it asked.
Notices never echo a rejected value. The question is then the page's, through ``ui/data.py``: the API and the
dashboard share the answer cache.

Numbers are the CLI's: the leaderboard is :func:`evalcore.commands.leaderboard.json_record` (``evalcore
leaderboard --format json``), with more decimals (:data:`DIGITS`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from evalcore.commands.leaderboard import json_record
from evalcore.store import Condition
from ui import board as boards
from ui import data, rank_flips, sidebar, state

VERSION = 1
DIGITS = 10
"""Decimals of every float in an answer (the CLI's JSON prints 6)."""
MAX_ROWS = 5000
"""Rows per list in an answer; a longer list is cut and ``truncated`` names it with its full length."""
CHOICES_LISTED = 20
"""Options named in an error, at most."""

SIDEBAR_KEYS = ("bench", "metric", "setting", "instr", "prec", "ties", "q", "family", "size_min", "size_max",
                "open", "itune")
BOARD_KEYS = SIDEBAR_KEYS + ("sort", "mean", "borda", "chart", "lens", "ranks", "level", "common", "pin")
FLIP_KEYS = SIDEBAR_KEYS + ("flip_a", "flip_b", "flip_task")
SYSTEM_KEY = "system"


@dataclass(frozen=True)
class Endpoint:
    """One question: its name (the path under ``/api/v1/``), the view whose link it reads (URL path), the URL keys
    it takes and the extra key of its own (the system's name), if any."""

    name: str
    view: str
    keys: tuple[str, ...]
    extra: str = ""


ENDPOINTS = {e.name: e for e in (
    Endpoint("conditions", "", ()),
    Endpoint("leaderboard", "", BOARD_KEYS),
    Endpoint("system", "", BOARD_KEYS, extra=SYSTEM_KEY),
    Endpoint("rank-flips", "rank-flips", FLIP_KEYS),
)}


class ApiError(Exception):
    """An answer that is not a record: HTTP ``status`` and what went wrong (one or more notices)."""

    def __init__(self, status: int, *notices: str) -> None:
        super().__init__(" ".join(notices))
        self.status = status
        self.notices = list(notices)


# -------------------------------------------------------------------------------------------- the gates
def screen(endpoint: Endpoint, items: Sequence[tuple[str, str]]) -> tuple[dict[str, list[str]], str | None]:
    """The first gate for ``items`` (the query's (key, value) pairs in order): (accepted values by key, the
    endpoint's extra value). Raises ApiError(400) with every notice when anything was dropped."""
    raw: dict[str, list[str]] = {}
    for key, value in items:
        raw.setdefault(key, []).append(value)
    extra = raw.pop(endpoint.extra, None) if endpoint.extra else None
    notices = []
    if endpoint.extra:
        if extra is None:
            notices.append(f"`{endpoint.extra}` is missing: name one system.")
        elif len(extra) > 1:
            notices.append(f"`{endpoint.extra}` was given {len(extra)} times; give it once.")
        elif len(extra[0]) > state.MAX_VALUE_CHARS or state.has_control_chars(extra[0]):
            notices.append(f"`{endpoint.extra}`: not a system name (at most {state.MAX_VALUE_CHARS} printable "
                           "characters).")
    accepted, screened = state.screen_query_params(raw)
    notices += screened
    notices += [f"`{key}` does not apply to /api/v{VERSION}/{endpoint.name}; its keys: {', '.join(endpoint.keys)}."
                for key in accepted if key not in endpoint.keys]
    if notices:
        raise ApiError(400, *notices)
    return accepted, (extra[0] if extra else None)


def _choices(values: Sequence[str]) -> str:
    shown = ", ".join(map(str, list(values)[:CHOICES_LISTED]))
    return shown + (f" … ({len(values)} in all)" if len(values) > CHOICES_LISTED else "")


def _one_of(params: Mapping[str, list[str]], key: str, options: Sequence[str], default: str) -> str:
    """The second gate for a single-choice key: its value when it is one of ``options``, else ``default``
    when absent; anything else is an ApiError(400) naming the choices (never the value)."""
    values = params.get(key)
    if values is None:
        return default
    if values[0] in options:
        return values[0]
    raise ApiError(400, f"`{key}`: the value is not one of the {len(options)} choices here: {_choices(options)}.")


class FromUrl(sidebar.Chooser):
    """The sidebar's controls with the URL's values: a value must be one the control offers here (the page drops
    anything else with a notice; here it is an error), an absent key takes the first visit's default."""

    def __init__(self, params: Mapping[str, list[str]]) -> None:
        self.params = params
        self.errors: list[str] = []

    def choose(self, control: sidebar.Control, offer: sidebar.Offer, label) -> str:
        wanted = self.wish(control)
        if wanted is None or wanted in offer.options:
            return offer.default if wanted is None else wanted
        if wanted in offer.elsewhere:
            self.errors.append(f"`{control.key}`: not offered here ({offer.elsewhere[wanted]}); choices: "
                               f"{_choices(offer.options)}.")
        else:
            self.errors.append(f"`{control.key}`: the value is not one of the {len(offer.options)} choices here: "
                               f"{_choices(offer.options)}.")
        return offer.default

    def wish(self, control: sidebar.Control) -> str | None:
        values = self.params.get(control.key)
        return values[0] if values else None

    def fixed(self, control: sidebar.Control, text: str, values: Sequence[str]) -> None:
        wanted = self.wish(control)
        if wanted is not None and wanted not in values:
            self.errors.append(f"`{control.key}`: the value is not one of the {len(values)} choices: "
                               f"{_choices(values)}.")


@dataclass
class Asked:
    """A screened request: the data, the condition the sidebar chose, the system filter and the params."""

    view: sidebar.View
    params: dict[str, list[str]]
    filter_notes: list[str]

    @property
    def cond(self) -> Condition:
        return self.view.cond


def _snapshot() -> tuple:
    data_dir = data.data_dir_from()
    if not data_dir.is_dir():
        raise ApiError(404, "The server has no data folder.")
    snapshot = data.snapshot(data_dir)
    return data_dir, snapshot, data.facets(snapshot)


def ask(endpoint: Endpoint, params: dict[str, list[str]], need: sidebar.Need | None = None,
        title: str = "This view") -> Asked:
    """The sidebar's condition and system filter for ``params`` (the page's defaults for absent keys)."""
    data_dir, snapshot, facets = _snapshot()
    if not facets.get("benchmarks"):
        raise ApiError(404, "No results in the data folder.")
    chooser = FromUrl(params)
    good = sidebar.need_rows(snapshot, need.rows) if need is not None else None
    chosen = sidebar.choose_view_condition(facets, chooser, need, None, title, None, good)
    if chooser.errors:
        raise ApiError(400, *chooser.errors)
    if chosen.cond is None:
        raise ApiError(404, "No results in the data folder.")
    if chosen.unmet:
        raise ApiError(404, f"{title} needs {need.what}: no condition in the data folder has them.")
    view = sidebar.View(data_dir=data_dir, data=snapshot, facets=facets, cond=chosen.cond)
    view.systems, notes = _filters(params, snapshot, facets, chosen.cond.benchmark)
    return Asked(view, params, notes)


def _filters(params: Mapping[str, list[str]], snapshot: data.Snapshot, facets: dict,
             bench: str) -> tuple[tuple[str, ...] | None, list[str]]:
    """The sidebar's system filter (``q``, ``family``, sizes, ``open``, ``itune``) through the page's gates."""
    search = (params.get("q") or [""])[0]
    if not state.SEARCH_PATTERN.fullmatch(search):
        raise ApiError(400, "`q`: the search text has characters a system name never has.")
    families = list(dict.fromkeys(params.get("family") or []))
    known = set(facets.get("families") or [])
    unknown = [f for f in families if f not in known]
    if unknown:
        raise ApiError(400, f"`family`: {len(unknown)} of the values {'is' if len(unknown) == 1 else 'are'} not "
                            f"a family of the data; choices: {_choices(sorted(known))}.")
    ladder = list(sidebar.SIZE_LADDER)
    lo = _one_of(params, "size_min", ladder[:-1], "0")
    hi = _one_of(params, "size_max", ladder[:0:-1], "no limit")
    notes = []
    if ladder.index(lo) >= ladder.index(hi):  # the page warns and ignores both bounds
        notes.append(f"Size from {lo} is not below {hi}; ignoring the size bounds.")
        lo, hi = "0", "no limit"
    open_w = _one_of(params, "open", list(sidebar.YES_NO_ANY), "any")
    itune = _one_of(params, "itune", list(sidebar.YES_NO_ANY), "any")
    systems, summary = sidebar.filter_systems(snapshot, bench, search=search.strip(), families=families,
                                              size_min=lo, size_max=hi, open_weights=open_w,
                                              uses_instructions=itune)
    return systems, notes + ([summary] if summary else [])


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


def conditions(endpoint: Endpoint, params: dict) -> dict:
    """Every condition the data has results under (benchmark × setting × metric × instruction × precision ×
    tie policy, with its counts of systems and tasks), and the benchmarks with their tasks."""
    _, _, facets = _snapshot()
    table = facets.get("conditions")
    rows = records(table) if table is not None and len(table) else []
    by_benchmark = {name: {"tasks": list(info.get("tasks") or [])}
                    for name, info in (facets.get("by_benchmark") or {}).items()}
    return _envelope(endpoint, None, {}, {"benchmarks": list(facets.get("benchmarks") or []),
                                          "by_benchmark": by_benchmark, "conditions": rows})


def _board(asked: Asked):
    """The Leaderboard's question for ``asked`` (the page's controls and defaults): (board, order, shown)."""
    params, bench = asked.params, asked.cond.benchmark
    order = _one_of(params, "sort", list(boards.ORDERS), boards.default_order(bench))
    flags = {key: _one_of(params, key, ("0", "1"), "0") for key in ("mean", "borda", "common")}
    _one_of(params, "chart", list(boards.CHARTS), "intervals")  # drawn only on the page
    _one_of(params, "lens", list(boards.LENSES), "queries")  # which lens the page's columns show: both are here
    ranks = _one_of(params, "ranks", list(boards.RANK_KINDS), "marginal")
    level = float(_one_of(params, "level", list(boards.LEVELS), "0.95"))
    pins = list(dict.fromkeys(params.get("pin") or []))
    if pins:  # the page drops a pin the benchmark lacks with a notice
        known = set(data.systems(asked.view.data, benchmark=bench)["system"])
        unknown = sum(pin not in known for pin in pins)
        if unknown:
            raise ApiError(400, f"`pin`: {unknown} of the values {'is' if unknown == 1 else 'are'} not a system of "
                                f"this benchmark; /api/v{VERSION}/leaderboard lists them.")
    board = data.leaderboard(asked.view.data, asked.cond,
                             systems=boards.board_systems(asked.view.systems, pins, flags["common"] == "1"),
                             aggregate=boards.aggregate_for(order, bench), level=level, ranks=ranks,
                             common_tasks=flags["common"] == "1")
    return board, order


def leaderboard(endpoint: Endpoint, params: dict) -> dict:
    """The Leaderboard of a link: ``evalcore leaderboard --format json``'s record for the page's question, its
    ranked rows in the page's order (``sort=borda``: by Borda points, each row with its ``borda``)."""
    asked = ask(endpoint, params)
    board, order = _board(asked)
    body = json_record(board, asked.cond, digits=DIGITS)
    if order == "borda":
        position = {name: i for i, name in enumerate(boards.ordered(board, order)["system"])}
        borda = dict(zip(board.ranked["system"], board.ranked["borda"]))
        body["ranked"] = sorted(({**row, "borda": borda.get(row["system"])} for row in body["ranked"]),
                                key=lambda row: position.get(row["system"], len(position)))
    body["order"] = order
    return _envelope(endpoint, asked, _params_out(endpoint, asked), body)


def system(endpoint: Endpoint, params: dict, name: str) -> dict:
    """One system under a Leaderboard link: its row on that board (ranked or not) and its score on every task
    (value under the tie policy, expected over all orderings of tied documents, min, max, queries, share of
    queries tied at the cutoff, source)."""
    asked = ask(endpoint, params)
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
    return _envelope(endpoint, asked, _params_out(endpoint, asked, system=name), body)


def flips(endpoint: Endpoint, params: dict) -> dict:
    """The Rank flips view of a link: ranks under precisions A and B (by G over the tasks both share, or one
    task's score), Kendall τ-b, flipped pairs and pairs whose tie ranges overlap."""
    asked = ask(endpoint, params, need=rank_flips.NEED, title="Rank flips")
    view = asked.view
    precisions, left_out = rank_flips.paired_precisions(view)
    if len(precisions) < 2:
        raise ApiError(404, f"Only one precision ({', '.join(precisions) or 'none'}) has results here: a rank flip "
                            "compares two.")
    default_a, default_b = rank_flips.default_pair(precisions)
    prec_a = _flip_precision(params, "flip_a", precisions, left_out, default_a)
    prec_b = _flip_precision(params, "flip_b", precisions, left_out, default_b)
    scope = _one_of(params, "flip_task", ["G"] + rank_flips.rankable_tasks(view, prec_a, prec_b), "G")
    if prec_a == prec_b:
        raise ApiError(400, "`flip_a` and `flip_b` name the same precision: pick two different ones.")
    answer = data.rank_flips(view.data, replace(view.cond, precision=prec_a), replace(view.cond, precision=prec_b),
                             systems=view.systems, tasks=None if scope == "G" else [scope])
    condition = {**asked.cond.__dict__, "precision": None}
    body = {"condition": condition, "precision_a": prec_a, "precision_b": prec_b, "ranked_by": scope,
            "tasks": list(answer.tasks), "kendall_tau_b": answer.kendall_tau_b, "ranks": records(answer.ranks),
            "flipped_pairs": records(answer.flipped_pairs), "overlapping_pairs": records(answer.overlapping_pairs)}
    shown = {"flip_a": prec_a, "flip_b": prec_b} | ({"flip_task": scope} if scope != "G" else {})
    return _envelope(endpoint, asked, _params_out(endpoint, asked, **shown), body)


def _flip_precision(params: Mapping[str, list[str]], key: str, precisions: list[str], left_out: list[str],
                    default: str) -> str:
    values = params.get(key)
    if values is not None and values[0] in left_out:
        raise ApiError(400, f"`{key}`: not offered here (no two systems have it and another precision); "
                            f"choices: {_choices(precisions)}.")
    return _one_of(params, key, precisions, default)


def answer(name: str, items: Sequence[tuple[str, str]]) -> dict:
    """The record of endpoint ``name`` for the query's (key, value) pairs; ApiError when there is none."""
    endpoint = ENDPOINTS.get(name)
    if endpoint is None:
        raise ApiError(404, f"No endpoint of that name; endpoints: {', '.join(ENDPOINTS)}.")
    params, extra = screen(endpoint, items)
    if endpoint.name == "conditions":
        return conditions(endpoint, params)
    if endpoint.name == "system":
        return system(endpoint, params, extra)
    return {"leaderboard": leaderboard, "rank-flips": flips}[endpoint.name](endpoint, params)
