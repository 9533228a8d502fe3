"""View state bound to the URL: every control reads its start value from ``st.query_params`` and writes back.

URL parameters are untrusted input. They pass two gates before they can reach anything:

1. :func:`screen_query_params` (pure, no Streamlit): unknown keys, repeated scalar keys, over-long values,
   control characters and too many values are dropped, each with a notice.
2. the control that owns the key: the value must be one of the options the store offers (a whitelist
   lookup); anything else is dropped with a notice and the control shows its default.

Only values that passed both gates are written back to the URL, so a copied URL holds nothing but valid state.
Notices never echo a rejected value (it could be markup or a 10 kB string); they name the parameter only.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlencode

import streamlit as st

from ui import words

MAX_VALUE_CHARS = 200
MAX_VALUES_PER_KEY = 8
MAX_KEYS = 40
SEARCH_PATTERN = re.compile(r"[\w .,+\-()/:@#]{0,80}")
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
_PRINTABLE_KEY = re.compile(r"[A-Za-z0-9_\-]{1,24}")


@dataclass(frozen=True)
class Param:
    """One URL parameter: its key, whether it may repeat (a list), what it controls, and the view that reads it
    (set by the section of :data:`PARAMS` that lists it)."""

    key: str
    doc: str
    repeatable: bool = False
    view: str = ""
    """The URL path of the view whose controls read the key (``leaderboard``, ``rank-flips``, …); '' for the
    shared sidebar, which every view draws."""


def _sections(*entries: str | Param) -> dict[str, Param]:
    """The table from its listing: a string starts the section of the view with that URL path ('' the shared
    sidebar); each :class:`Param` after it belongs to that view."""
    table: dict[str, Param] = {}
    view = ""
    for entry in entries:
        if isinstance(entry, str):
            view = entry
        else:
            table[entry.key] = replace(entry, view=view)
    return table


PARAMS: dict[str, Param] = _sections(
    "",  # the shared sidebar (every page)
    Param("bench", "benchmark"),
    Param("metric", "metric, e.g. ndcg@10"),
    Param("setting", "full | mcr"),
    Param("instr", "without | with | any"),
    Param("prec", "precision, e.g. fp32, bf16, bf16+hps"),
    Param("ties", "tie policy of the oblivious value, e.g. docid-desc"),
    Param("q", "system name search"),
    Param("family", "model family (repeatable)", repeatable=True),
    Param("size_min", "smallest model size, e.g. 100M"),
    Param("size_max", "largest model size, e.g. 10B"),
    Param("open", "open weights: any | yes | no"),
    Param("itune", "instruction-tuned: any | yes | no"),
    "leaderboard",
    Param("sort", "leaderboard order: g | mean | borda"),
    Param("mean", "show the arithmetic mean column: 1 | 0"),
    Param("borda", "show the Borda column: 1 | 0"),
    Param("chart", "chart below the leaderboard: none | intervals | size"),
    Param("lens", "which question the leaderboard's ranges answer: queries (on these tasks) | tasks (on new "
                  "tasks like these)"),
    Param("ranks", "rank sets: marginal (each row at the level) | simultaneous (all rows at once)"),
    Param("level", "confidence level of intervals, rank ranges and tests: 0.9 | 0.95 | 0.99"),
    Param("common", "rank the shown systems on the tasks all of them have: 1 | 0"),
    Param("pin", "rows pinned on the leaderboard, by system name (repeatable, at most 8)", repeatable=True),
    "ties-and-precision",
    Param("tp_task", "task for the tie summary (or all)"),
    Param("wi_run", "what-if: shipped run file"),
    Param("wi_to", "what-if: target precision"),
    Param("wi_scoring", "what-if: score | sigmoid"),
    "rank-flips",
    Param("flip_a", "precision of condition A"),
    Param("flip_b", "precision of condition B"),
    Param("flip_task", "rank by the benchmark's aggregate, G or mean (default), or one task's score"),
    "mcr-vs-full",
    Param("mcr_metric", "metric of the MCR setting"),
    Param("mcr_task", "task shown in the scatter (or all)"),
    "compare",
    Param("sys", "systems to compare, 2 to 4 (repeatable)", repeatable=True),
    Param("task", "task for the per-query drill-down and paired test"),
    Param("diff_only", "drill-down shows only queries that differ: 1 | 0"),
    Param("values", "per-query values compared: expected (tie-aware, default) | oblivious"),
    Param("qid", "the query shown in full in the drill-down"),
    "glossary",
    Param("term", "the glossary entry shown first, e.g. hps"),
)


def view_keys(view: str) -> tuple[str, ...]:
    """The URL keys a link to ``view`` (its URL path) may carry: the shared sidebar's, then the view's own."""
    return tuple(key for key, param in PARAMS.items() if param.view in ("", view))


_LOADED = "_url_loaded"
_PENDING = "_url_pending"
_NOTICES = "_url_notices"
_NOTICE_PAGE = "_url_notice_page"
_CURRENT = "_url_current"
_SHOWN = "_url_shown"  # key -> (label, value in words) of this run's controls, for the view's snapshot
_PAGE = "_url_page"  # the page this run draws
_DRAWN_ON = "_url_drawn_on"  # key -> the page its widget was last drawn on
_WISH = "_url_wish"  # key -> the value the visitor chose (URL or widget), kept while a view cannot show it
_MOVED = "_url_moved"  # key -> (wanted, shown) for this run: a control showed another value than the wish


def has_control_chars(value: str) -> bool:
    """Whether ``value`` holds a control character (what the first gate drops)."""
    return bool(_CONTROL_CHARS.search(value))


def screen_query_params(raw: Mapping[str, Sequence[str]]) -> tuple[dict[str, list[str]], list[str]]:
    """First gate: keep known keys with well-formed values; return (accepted, notices).

    ``raw`` maps each key to every value it was given (a repeated key gives several).
    """
    accepted: dict[str, list[str]] = {}
    notices: list[str] = []
    unknown: list[str] = []
    for position, (key, values) in enumerate(raw.items()):
        values = [str(v) for v in values]
        param = PARAMS.get(key)
        if param is None or position >= MAX_KEYS:
            unknown.append(key)
            continue
        if not param.repeatable and len(values) > 1:
            notices.append(f"`{key}` was given {len(values)} times; ignored it (give it once).")
            continue
        if len(values) > MAX_VALUES_PER_KEY:
            notices.append(f"`{key}` was given {len(values)} times (at most {MAX_VALUES_PER_KEY}); ignored it.")
            continue
        kept = []
        for value in values:
            if len(value) > MAX_VALUE_CHARS:
                notices.append(f"`{key}`: a value of {len(value):,} characters was ignored (at most {MAX_VALUE_CHARS}).")
            elif has_control_chars(value):
                notices.append(f"`{key}`: a value with control characters was ignored.")
            else:
                kept.append(value)
        if kept:
            accepted[key] = kept
    if unknown:
        readable = [k for k in unknown if _PRINTABLE_KEY.fullmatch(k)]
        shown = [f"`{k}`" for k in readable[:5]]
        more, unreadable = len(readable) - len(shown), len(unknown) - len(readable)
        names = ", ".join(shown + ([f"{more} more"] if more else []) + ([f"{unreadable} unreadable"] if unreadable
                                                                        else []))
        notices.append(f"Ignored {words.counted(len(unknown), 'unknown URL parameter')}: {names}.")
    return accepted, notices


def _read_query_params() -> dict[str, list[str]]:
    return {key: list(st.query_params.get_all(key)) for key in st.query_params}


def _load_url(page_id: str | None) -> None:
    """The first run of a session reads the URL (once): what passed the first gate waits for its control."""
    state = st.session_state
    pending, notices = screen_query_params(_read_query_params())
    state[_PENDING] = pending
    state[_NOTICES] = notices
    state[_NOTICE_PAGE] = page_id
    state[_LOADED] = True


def begin_run(page_id: str) -> None:
    """The frame (``ui/navigation.py``) calls this once per script run before any control. (A page run on
    its own, without the frame, still reads the URL on its first run, but nothing writes it back.)"""
    state = st.session_state
    if not state.get(_LOADED):
        _load_url(page_id)
    elif state.get(_NOTICE_PAGE) != page_id:
        state[_NOTICES] = []  # notices belong to the view the URL opened; leaving it clears them
        state[_NOTICE_PAGE] = page_id
    state[_CURRENT] = {}
    state[_SHOWN] = {}
    state[_MOVED] = {}
    state[_PAGE] = page_id


def notice(message: str) -> None:
    """Queue a notice about the URL for this view (the frame shows them above the page)."""
    notices = st.session_state.setdefault(_NOTICES, [])
    if message not in notices:
        notices.append(message)


def notices() -> list[str]:
    return list(st.session_state.get(_NOTICES, []))


def _take_pending(key: str) -> list[str] | None:
    if not st.session_state.get(_LOADED):
        _load_url(None)
    pending = st.session_state.get(_PENDING) or {}
    return pending.pop(key, None)


def _record(key: str, value: str | list[str] | None, default: object = None, always: bool = False,
            label: str = "", shown: str = "") -> None:
    if value is None or value == [] or (not always and value == default):
        return
    st.session_state.setdefault(_CURRENT, {})[key] = value
    if label:
        st.session_state.setdefault(_SHOWN, {})[key] = (label, shown)


def _keep(key: str) -> None:
    """Hand the value a widget had on the previous page to the widget about to be created under the same key.

    Widgets belong to the page that draws them: after a page switch the shared sidebar's widgets are new ones,
    and a new widget ignores the value its predecessor left in ``st.session_state`` (it would show its first
    option) unless that value was set through the Session State API. Setting it again, on the first run of a
    page, is Streamlit's documented way to carry widget values across pages (only then: a value set through
    the API is also sent to the browser again)."""
    state = st.session_state
    page = state.get(_PAGE)
    drawn_on = state.setdefault(_DRAWN_ON, {})
    if key in state and drawn_on.get(key, page) != page:
        state[key] = state[key]
    drawn_on[key] = page


def wish(key: str):
    """The value the visitor chose for ``key`` (in the URL or a widget), or None when they never chose one."""
    return st.session_state.get(_WISH, {}).get(key)


def set_wish(key: str, value) -> None:
    """Choose ``value`` for ``key`` as the visitor would (a button's callback, e.g. a quick pick): the bound
    control shows it from the next run on wherever it is an option."""
    st.session_state.setdefault(_WISH, {})[key] = value


def moved() -> dict[str, tuple]:
    """Controls of this run that show another value than the visitor's wish: key -> (wanted, shown)."""
    return dict(st.session_state.get(_MOVED, {}))


def _remember(key: str) -> None:
    """``on_change`` of a bound widget: the visitor's choice becomes the key's wish."""
    value = st.session_state.get(key)
    st.session_state.setdefault(_WISH, {})[key] = list(value) if isinstance(value, list) else value


def _wish_from_url(key: str, acceptable: Callable[[str], bool], count: int) -> None:
    """The URL's value for ``key`` (once per session) becomes its wish when ``acceptable``; else a notice."""
    wanted = _take_pending(key)
    if wanted is None:
        return
    if acceptable(wanted[0]):
        st.session_state.setdefault(_WISH, {})[key] = wanted[0]
    else:
        notice(f"`{key}`: the value in the URL is not one of the {count} choices here; showing the default instead.")


def keep_url_wish(key: str, values: Collection[str]) -> None:
    """For a control a view does not draw: the URL's value for ``key`` (one of ``values``) is kept as the
    visitor's wish for the views that draw it, without a notice; anything else gets the usual notice."""
    _wish_from_url(key, lambda v: v in values, len(values))


def _show(key: str, value) -> None:
    """Put ``value`` into ``session_state[key]`` before the widget is created (only when it differs: a value set
    through the API is sent to the browser again)."""
    state = st.session_state
    if key not in state or state[key] != value:
        state[key] = value
    _keep(key)


def select(
    key: str,
    label: str,
    options: Sequence[str],
    default: str | None = None,
    *,
    where=None,
    widget: str = "selectbox",
    format_func: Callable[[str], str] = str,
    help: str | None = None,
    always: bool = True,
    elsewhere: Collection[str] = (),
    nearest: Callable[[str], str] | None = None,
    single_as_text: bool = False,
) -> str | None:
    """A single-choice control (selectbox / horizontal radio) bound to URL key ``key``.

    It shows the visitor's wish (:func:`wish`: the URL's value or the last choice in the widget) when that is
    an option, else ``nearest(wish)`` (default: ``default``), and keeps the wish for views that can show it:
    a control whose options depend on the view or on other controls does not lose a choice by passing through
    a view without it. ``elsewhere`` are values that exist but are not options here: a URL value among them is
    kept as the wish instead of being refused with a notice. ``single_as_text``: one option is shown as text,
    not as a control offering no choice.
    """
    where = where or st
    options = list(options)
    if not options:
        _take_pending(key)
        return None
    _wish_from_url(key, lambda v: v in options or v in elsewhere, len(options))
    wanted = wish(key)
    if wanted in options:
        value = wanted
    else:
        value = nearest(wanted) if (nearest is not None and wanted is not None) else default
        value = value if value in options else (default if default in options else options[0])
        if wanted is not None:
            st.session_state.setdefault(_MOVED, {})[key] = (wanted, value)
    if single_as_text and len(options) == 1:
        where.markdown(f"**{label}:** {format_func(value)}", help=help)
    else:
        _show(key, value)
        if widget == "radio":
            value = where.radio(label, options, key=key, format_func=format_func, help=help, horizontal=True,
                                on_change=_remember, args=(key,))
        else:
            value = where.selectbox(label, options, key=key, format_func=format_func, help=help,
                                    on_change=_remember, args=(key,))
    _record(key, value, default, always, label, format_func(value))
    return value


def multiselect(
    key: str,
    label: str,
    options: Sequence[str],
    default: Sequence[str] = (),
    *,
    where=None,
    max_selections: int | None = None,
    format_func: Callable[[str], str] = str,
    help: str | None = None,
    placeholder: str | None = None,
    always: bool = False,
    min_kept: int = 0,
) -> list[str]:
    """A multi-choice control bound to a repeatable URL key. It shows the visitor's wish (:func:`wish`) minus
    what is not an option here; when fewer than ``min_kept`` of the wish remain because the others are not
    options here, it shows ``default`` and keeps the wish for when its values are options again. A wish of fewer
    than ``min_kept`` values (one system left in the control, or one in a link) is shown as it is: the view says
    what it lacks, it does not put back what the visitor removed. A link naming no valid value opens on
    ``default``."""
    where = where or st
    options = list(options)
    state = st.session_state
    wanted = _take_pending(key)
    if wanted is not None:
        valid = _available(key, wanted, options)
        if max_selections and len(valid) > max_selections:
            notice(f"`{key}`: at most {max_selections} values; kept the first {max_selections}.")
            valid = valid[:max_selections]
        state.setdefault(_WISH, {})[key] = valid if (valid or not wanted) else None  # none valid: the default
    chosen = wish(key)
    value = [v for v in default if v in options]
    if chosen is not None:
        kept = [v for v in chosen if v in options]
        if len(kept) >= min(min_kept, len(chosen)):  # fewer chosen than min_kept: the visitor's own choice
            value = kept
        if kept != chosen:
            state.setdefault(_MOVED, {})[key] = (list(chosen), value)
    _show(key, value)
    value = where.multiselect(label, options, key=key, max_selections=max_selections, format_func=format_func,
                              help=help, placeholder=placeholder, on_change=_remember, args=(key,))
    _record(key, list(value), list(default), always, label, ", ".join(format_func(v) for v in value))
    return list(value)


def _available(key: str, wanted: Sequence[str], options: Collection[str]) -> list[str]:
    """A link's values for ``key`` that are among ``options`` (repeats dropped, in the link's order), with a
    notice counting those that are not."""
    valid = [v for v in dict.fromkeys(wanted) if v in options]
    if len(valid) < len(wanted):
        dropped = len(wanted) - len(valid)
        notice(f"`{key}`: {words.counted(dropped, 'value')} in the URL {'is' if dropped == 1 else 'are'} not "
               "available here; ignored.")
    return valid


def pinned(key: str, options: Collection[str], *, label: str = "Pinned") -> list[str]:
    """The values pinned under the repeatable URL key ``key`` that are among ``options``, in the order they were
    pinned. Not a widget of its own: a table's row selection pins (:func:`set_pinned`). A link's values (read
    once per session) are screened as a multiselect's are: those not among ``options`` are dropped with a
    notice, at most :data:`MAX_VALUES_PER_KEY` are kept. Pins outside ``options`` (a filter hides them) stay
    pinned for the views that show them, but only the shown ones are written to the URL."""
    state = st.session_state
    wanted = _take_pending(key)
    if wanted is not None:
        valid = _available(key, wanted, options)
        state.setdefault(_WISH, {})[key] = valid
    shown = [v for v in (wish(key) or []) if v in options]
    _record(key, shown, [], label=label, shown=", ".join(shown))
    return shown


def set_pinned(key: str, shown: Sequence[str], selected: Sequence[str]) -> bool:
    """A table's row selection changed: of the values ``shown`` in it, exactly the ``selected`` ones are pinned
    now (new ones after the earlier pins); pins the table does not show stay. At most
    :data:`MAX_VALUES_PER_KEY` (what a link may carry): returns False when the selection had to be cut."""
    before = list(wish(key) or [])
    visible = set(shown)
    chosen = set(selected)
    kept = [v for v in before if v not in visible or v in chosen]
    after = kept + [v for v in dict.fromkeys(selected) if v not in kept]
    st.session_state.setdefault(_WISH, {})[key] = after[:MAX_VALUES_PER_KEY]
    return len(after) <= MAX_VALUES_PER_KEY


def flag(key: str, label: str, default: bool = False, *, where=None, help: str | None = None) -> bool:
    """An on/off toggle bound to URL key ``key`` (``1`` / ``0``)."""
    where = where or st
    state = st.session_state
    if key not in state:
        wanted = _take_pending(key)
        if wanted is not None and wanted[0] in ("0", "1"):
            state[key] = wanted[0] == "1"
        else:
            if wanted is not None:
                notice(f"`{key}`: expected 1 or 0; showing the default.")
            state[key] = default
    _keep(key)
    value = where.toggle(label, key=key, help=help)
    _record(key, "1" if value else "0", "1" if default else "0", label=label, shown="on" if value else "off")
    return bool(value)


def search(key: str, label: str, *, where=None, help: str | None = None, placeholder: str = "") -> str:
    """A free-text search box. Only letters, digits, spaces and ``.,+-()/:@#_`` are accepted (≤ 80)."""
    where = where or st
    state = st.session_state
    if key not in state:
        wanted = _take_pending(key)
        state[key] = ""
        if wanted is not None:
            if SEARCH_PATTERN.fullmatch(wanted[0]):
                state[key] = wanted[0]
            else:
                notice(f"`{key}`: the search text in the URL has characters a system name never has; ignored.")
    _keep(key)
    value = where.text_input(label, key=key, max_chars=80, help=help, placeholder=placeholder)
    if not SEARCH_PATTERN.fullmatch(value or ""):
        where.warning("Search accepts letters, digits, spaces and `. , + - ( ) / : @ # _` only; ignoring it.")
        value = ""
    value = value.strip()
    _record(key, value, "", label=label, shown=value)
    return value


def current_params() -> dict[str, str | list[str]]:
    """The URL parameters of the view drawn so far in this run (only validated values)."""
    return dict(st.session_state.get(_CURRENT, {}))


def shown_params() -> dict[str, tuple[str, str]]:
    """URL key → (the control's label, its value in the control's words) for this run's parameters: what a
    snapshot of the view lists ("Rank by: Mean (arithmetic)", not "sort mean")."""
    return dict(st.session_state.get(_SHOWN, {}))


def end_run() -> dict[str, str | list[str]]:
    """Write the validated state back to the URL; drop parameters no control on this view used."""
    state = st.session_state
    leftover = state.get(_PENDING) or {}
    for key in leftover:
        notice(f"`{key}` does not apply to this view; ignored.")
    state[_PENDING] = {}
    wanted = current_params()
    if _read_query_params() != {k: (v if isinstance(v, list) else [v]) for k, v in wanted.items()}:
        st.query_params.from_dict(wanted)
    return wanted


def share_url(params: Mapping[str, str | list[str]], base_url: str | None) -> str:
    """The URL that reopens this view: the page's address plus the validated parameters."""
    query = urlencode([(k, v) for k, values in params.items()
                       for v in (values if isinstance(values, list) else [values])], safe="@:/")
    base = base_url or ""
    return f"{base}?{query}" if query else (base or "?")
