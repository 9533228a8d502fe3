"""The sentences the dashboard's shared parts print, as constants or small functions of facts: the facts in
(numbers, names, evalcore's answers), one sentence or line out, nothing drawn. A view's frame (the line saying
it moved to another condition, the filter note, the sources line, the empty states), every notice of the
Leaderboard (policy swaps, systems lifted by ties, one model under several names, chance, precision kinds,
each lens' headline, common tasks, the data's gaps) and the words for its uncertainty, the sidebar's notes (a choice
not offered here, size bounds in the wrong order), and a visitor's run (its box, its condition, its line on a
board, the upload limits) live here; the modules that draw them — ``ui/hints.py``, ``ui/sidebar.py``, the
pages — call these. A page's own explanation stays in the page. Text from data is escaped with
:func:`safe_text` wherever it enters markdown. Tests check the facts a sentence names, not its wording.
"""
from __future__ import annotations

import html
import math

import pandas as pd

from evalcore.aggregate import geometric_mean
from evalcore.model_names import same_model_groups
from evalcore.store import Condition, Leaderboard
from ui import glossary, words


def safe_text(text: str) -> str:
    """Text from data shown inside markdown: HTML-escaped (``&``, ``<``, ``>``; quotes stay: markdown shows an
    entity whose ``#`` is escaped as the literal ``&#x27;``) and with markdown control characters neutralised."""
    escaped = html.escape(str(text), quote=False)
    for char in "*_`[]<>|#":
        escaped = escaped.replace(char, "\\" + char)
    return escaped


SETTING_WORDS = {"mcr": "MCR", "full-pooled": "full (pooled)", "full": "full retrieval"}
INSTRUCTION_WORDS = {None: "instructions as published", False: "without instruction", True: "with instruction"}


# -------------------------------------------------------------------------------------------- a view's frame
NO_SYSTEM_MATCHES = "No system matches the filters in the sidebar. Loosen them to see results."
NO_RESULTS_YET = "There are no results in the data folder yet, so there is nothing to rank."
ADD_RESULTS = "Add results and reload this page, for example (`DATA_DIR` = the folder the dashboard was started on):"
ANOTHER_FOLDER = ("Or start the dashboard on another folder: `streamlit run app.py -- --data DIR` (or set "
                  "`TIEBREAK_DATA=DIR`).")


def no_data_folder(name: str) -> str:
    """The data folder (its ``name`` only: the server's path is not shown) does not exist."""
    return (f"The data folder `{name}` does not exist. Start the app with `streamlit run app.py -- --data DIR` "
            "(or `TIEBREAK_DATA=DIR`) pointing at a folder of result parquet files.")


def view_moved_line(title: str, needs: str, shown: list[str]) -> str:
    """A view moved to another condition: 'Rank flips needs runs at two precisions: showing RAR-b · full
    (pooled candidates)' (``shown``: the condition's words that changed, benchmark and setting first)."""
    return f"{title} needs {needs}: showing {' · '.join(shown)}."


def filter_note(summary: str, with_results: int | None, n_filtered: int) -> str:
    """Under the condition line when the sidebar filters systems: what the filter keeps (``summary``), how many
    of the ``n_filtered`` systems have results under the condition when not all do, and how to see every one."""
    some = (f" {with_results} of them {'has' if with_results == 1 else 'have'} results under this condition."
            if with_results is not None and with_results < n_filtered else "")
    return summary + some + " Clear the filters in the sidebar to see every system."


def sources_line(lines: list[str], snapshot: str | None) -> str:
    """Where a view's numbers come from: each source's line (repository @ commit, what wrote it and when) and
    the data snapshot's date."""
    return ("Sources: " + "; ".join(safe_text(line) for line in lines)
            + (f". Data snapshot {snapshot}." if snapshot else "."))


# -------------------------------------------------------------------------------------------- the sidebar
NO_RESULTS_IN_SIDEBAR = "No results found in the data folder. See the page for how to add some."


def not_offered_line(wanted: str, why: str, shown: str) -> str:
    """Under a sidebar control, when the visitor's choice ``wanted`` exists but not under this view's other
    choices (``why``): what is shown instead."""
    return (f":material/alt_route: {wanted} is not offered here ({why.rstrip('.')}): showing {shown}. It comes "
            "back where it exists.")


def size_bounds_ignored(lo: str, hi: str) -> str:
    """The size filter's bounds in the wrong order."""
    return f"Size from {lo} is not below {hi}; ignoring the size bounds."


# -------------------------------------------------------------------------------------------- the Leaderboard
def apart(x: float, y: float, digits: int = 4, most: int = 8) -> str:
    """"x vs y" with ``digits`` decimals, or as many more (up to ``most``) as it takes for two different values
    to print differently: "0.0026 vs 0.0026" would contradict the "ahead" it illustrates."""
    for shown in range(digits, most + 1):
        if x == y or f"{x:.{shown}f}" != f"{y:.{shown}f}":
            break
    return f"{x:.{shown}f} vs {y:.{shown}f}"


def swaps_line(board: Leaderboard, limit: int = 4) -> str | None:
    """The notice when the chosen tie policy decides the order of some pairs (:attr:`Leaderboard.policy_swaps`),
    naming them."""
    swaps = board.policy_swaps
    if swaps is None or swaps.empty:
        return None
    agg = board.ranked_by
    limit = words.shown_count(len(swaps), limit)
    pairs = [f"**{a}** ahead of **{b}** by `{board.tie_policy}` ({apart(v1, v2)}) but behind by expected "
             f"value ({apart(e1, e2)})" for a, b, v1, v2, e1, e2 in swaps.head(limit).itertuples(index=False)]
    more = f"; and {words.counted(len(swaps) - limit, 'more pair')}" if len(swaps) > limit else ""
    return (f"The tie policy decides the order of {words.counted(len(swaps), 'pair')} on {agg} — "
            + "; ".join(pairs) + more + f". {glossary.link('policy-swap', 'What this means')}.")


def lifted_line(lifted: pd.DataFrame, agg: str, limit: int = 4, column: str = "Ranks") -> str | None:
    """The notice naming the systems that ties alone lift past others (``lifted``:
    :func:`ui.board.lifted_by_ties`, ranked by ``agg``): their rank range on these tasks (the table's ``column``)
    starts high because a tie policy in their favour could put them there, and its end says how far they may
    fall. None when ties carry no system past another."""
    if lifted.empty:
        return None
    shown = words.shown_count(len(lifted), limit)
    parts = [f"**{safe_text(r.system)}** from {agg} {r.point:.4f} ({words.ordinal(int(r.rank))}) to {r.top:.4f} "
             f"(would be {words.ordinal(int(r.best))})" for r in lifted.head(shown).itertuples(index=False)]
    more = f"; and {words.counted(len(lifted) - shown, 'more system')}" if len(lifted) > shown else ""
    one = len(lifted) == 1
    its, it = ("its", "it") if one else ("their", "they")
    return (f"Ties alone can lift {words.counted(len(lifted), 'system')} past others — with every tie broken in "
            f"{its} favour: " + "; ".join(parts) + more + f". On these tasks the rank ranges count every tie "
            f"broken against the better-placed system, so {its} **{column}** start that high and show how far {it} may "
            f"fall. {glossary.link('tie-range', 'What a tie range is')}.")


def same_model_line(board: Leaderboard, limit: int = 4) -> str | None:
    """When one model holds two or more rows of the board under different names (one per source: ``GritLM-7B``
    from the R2MED paper, ``GritLM/GritLM-7B`` from MTEB; :mod:`evalcore.model_names`), one line naming them
    with their scores and ranks: the rows stay apart (each is its own evaluation), but not silently."""
    rows = board.ranked
    if rows.empty:
        return None
    groups = same_model_groups(rows["system"])
    if not groups:
        return None
    agg = board.ranked_by
    by_name = rows.drop_duplicates("system").set_index("system")
    limit = words.shown_count(len(groups), limit)
    shown = [" and ".join(f"**{safe_text(name)}** {by_name.at[name, agg]:.4f} "
                          f"(#{int(by_name.at[name, 'rank'])})" for name in group)
             for group in groups[:limit]]
    more = f"; and {words.counted(len(groups) - limit, 'more model')}" if len(groups) > limit else ""
    many = max(len(group) for group in groups)
    times = "twice" if many == 2 else f"up to {many} times"
    return (f"{words.counted(len(groups), 'model')} {'appears' if len(groups) == 1 else 'appear'} {times} "
            f"on this board, under the names of different sources; each row is its own evaluation. By {agg}: "
            + "; ".join(shown) + more + ". The Source column says whose each row is.")


def chance_line(board: Leaderboard, chance: pd.DataFrame) -> str | None:
    """On a multiple-choice board (accuracy), where chance lies: the board's aggregate of each task's chance
    (:meth:`evalcore.store.Store.chance`) and how many ranked systems score below it — a board topped by the
    uniform random baseline reads as broken runs without it. None when a task of the board has no chance value."""
    if board.ranked.empty or chance is None or chance.empty:
        return None
    per_task = chance.set_index("task")["chance"].reindex(board.tasks)
    if per_task.isna().any():
        return None
    agg = board.ranked_by
    values = per_task.to_numpy(dtype=float)
    level = float(geometric_mean(values)) if agg == "G" else float(values.mean())
    below = int((board.ranked[agg] < level).sum())
    return (f"**Chance: {agg} = {level:.4f}** — a uniform pick among each question's choices (per task "
            f"{values.min():.3f}–{values.max():.3f}; a scorer that ties every choice scores it in expectation). "
            + (f"All {len(board.ranked)} ranked systems score below it." if below == len(board.ranked) > 1 else
               f"{below} of {words.counted(len(board.ranked), 'ranked system')} "
               f"{'scores' if below == 1 else 'score'} below it."))


def kinds_line(kinds: pd.Series, cond: Condition, systems: pd.Series, limit: int = 4) -> str | None:
    """When the board's systems reached ``cond.precision`` in different ways (a model run in bf16 next to
    scores stored in bf16), one line saying which is which."""
    present = kinds.reindex(systems.unique()).dropna()
    if present.nunique() < 2:
        return None
    kind_words = {"inference": f"model run in {cond.precision}", "storage": f"output stored in {cond.precision}",
                  "native": "the system's own output"}
    groups = []
    for kind, names in present.groupby(present).groups.items():
        names = sorted(names)
        shown = words.listed(names, limit)
        groups.append(f"{kind_words.get(kind, kind)} ({kind}): {shown}")
    return (f"“{cond.precision}” means different things on this board — " + "; ".join(groups)
            + f". {glossary.link('precision-kind', 'Precision kinds')}.")


def uncertainty_words(board: Leaderboard) -> str:
    """"95% · marginal rank sets": the level and kind every interval and range of the board was computed at."""
    if not board.lenses:
        return "no intervals"
    return f"{board.level:.0%} · {board.ranks} rank sets"


def lens_headline(board: Leaderboard, lens: str) -> str | None:
    """One lens' headline: "N of M adjacent pairs differ" and who could be #1 — or why the lens says nothing of
    this board, or, when nothing differs, how far the strongest pair is from Holm's first threshold."""
    summary = board.lens(lens)
    if summary is None:
        return None
    if not summary.available:
        return f"not available here: {safe_text(summary.reason)}."
    first = board.ranked.loc[board.ranked[f"{lens}_first"].astype(bool), "system"].tolist()
    untested = summary.n_pairs - summary.n_tested
    text = (f"**{summary.n_differ} of {summary.n_pairs}** adjacent pairs differ · "
            f"**{len(first)}** could be #1")
    if summary.strongest is not None:
        text += (f" · none differs: the strongest pair has p = {summary.strongest['p_value']:.2g}, Holm's first "
                 f"threshold {summary.strongest['threshold']:.2g}")
    if untested:
        text += f" · {untested} pair{'s' if untested > 1 else ''} with G = 0 not tested"
    return text


def common_tasks_line(board: Leaderboard) -> str | None:
    """What a common-task ranking ranks on: the tasks kept, the tasks dropped."""
    common = board.common_tasks
    if common is None:
        return None
    if not common.tasks:
        return (f"The {words.counted(common.n_systems, 'shown system')} share no task: nothing can be ranked on "
                "common tasks. Narrow the filter to systems with tasks in common.")
    dropped = (f"; dropped {words.counted(len(common.dropped), 'task')}: {words.listed(common.dropped, 6)}"
               if common.dropped else "; no task dropped")
    return (f"Common-task ranking: the {words.counted(common.n_systems, 'shown system')} on the "
            f"{words.counted(len(common.tasks), 'task')} all of them have ({words.listed(common.tasks, 6)})"
            f"{dropped}. {glossary.link('common-tasks', 'What this means')}.")


def data_lines(board: Leaderboard) -> list[str]:
    """What the board must say of its data: declared tasks without results, unreadable files, no manifest."""
    lines = []
    if board.tasks_without_results:
        lines.append(f"No system has results for {words.listed(board.tasks_without_results, 4)}, a task this "
                     "benchmark declares: no system can be ranked on every task, and a file holding it may be "
                     "unreadable.")
    lines += [safe_text(note[0].upper() + note[1:]) + "." for note in board.notes]
    return lines


# -------------------------------------------------------------------------------------------- a visitor's run
def limits_sentence(limits) -> str:
    """What one upload may cost (``limits``: :data:`ui.upload.LIMITS`), said under the upload form."""
    return (f"Limits: {limits.upload_mb} MB per file, {limits.files} files, {limits.rows:,} run rows "
            f"(one run per browser session: a new upload replaces it), {limits.seconds} s of evaluation; "
            f"{words.counted(limits.slots, 'evaluation')} {'runs' if limits.slots == 1 else 'run'} at once on "
            "this server, others wait their turn.")


def run_moved_line(cond, shown) -> str:
    """One line when ``cond`` (where the visitor's run is ranked: :func:`ui.upload.board_condition`) is not the
    sidebar's ``shown``: which fields differ, the sidebar's value beside each; '' when they agree."""
    fields = (("setting", lambda v: SETTING_WORDS.get(v, v)), ("metric", str),
              ("instruction", lambda v: INSTRUCTION_WORDS.get(v, v)), ("precision", str),
              ("tie_policy", lambda v: f"ties {v}"), ("benchmark", str))
    differ = [(say(getattr(cond, name)), say(getattr(shown, name))) for name, say in fields
              if getattr(cond, name) != getattr(shown, name)]
    if not differ:
        return ""
    return ("Ranked on your run's own board, not the sidebar's: "
            + "; ".join(f"{mine} (the sidebar: {theirs})" for mine, theirs in differ)
            + ". “Show in the Leaderboard” opens this board.")


def run_condition_words(held) -> str:
    """The condition a visitor's run (a :class:`ui.upload.Candidate`) was evaluated under, in words."""
    req = held.request
    setting = SETTING_WORDS.get(req.setting, req.setting)
    return (f"{req.benchmark} · {setting} · {'with' if req.instruction else 'without'} instruction · "
            f"{req.precision}")


def run_box_text(system: str, condition_words: str) -> str:
    """The sidebar box of a visitor's run: its name and the condition it was evaluated under."""
    return f":material/person: **{safe_text(system)}**  \n{safe_text(condition_words)}"


def run_elsewhere_line(name: str, condition_words: str) -> str:
    """A visitor's run (``name``) seen from a board of another condition: where it was evaluated."""
    return (f"Your run **{safe_text(name)}** was evaluated on {safe_text(condition_words)}: “Show its condition” "
            "in the sidebar shows it here.")


def run_not_ranked_line(name: str, *, misses_a_task: bool) -> str:
    """A visitor's run on its board but not ranked: it misses a task, or has no result under the metric."""
    why = "it misses a task of this benchmark" if misses_a_task else "it has no result under this metric"
    return f"Your run **{safe_text(name)}** is not ranked here: {why}."


def run_ranked_line(name: str, where: str, row, n_ranked: int, agg: str) -> str:
    """A visitor's run ranked on a board (``row``: its row of :attr:`Leaderboard.ranked`; ``where``: the metric,
    and the setting when it is not the sidebar's): its place (#) of ``n_ranked`` by ``agg``, the aggregate with
    its expected value and tie range, and its rank range and interval through both lenses."""

    def number(column):
        value = row.get(column)
        return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"

    return (f"Your run **{safe_text(name)}** — {safe_text(where)}: **#{int(row['rank'])}** of {n_ranked} by {agg} "
            f"= **{number(agg)}** (expected {number(agg + '_expected')}, tie range [{number(agg + '_min')}, "
            f"{number(agg + '_max')}]); on these tasks ranks {_rank_range(row, 'queries_')}, interval "
            f"[{number('queries_lo')}, {number('queries_hi')}]; on new tasks like these ranks "
            f"{_rank_range(row, 'tasks_')}.")


def _rank_range(row, prefix: str = "") -> str:
    lo, hi = row.get(f"{prefix}rank_lo"), row.get(f"{prefix}rank_hi")
    try:
        return f"{int(lo)}–{int(hi)}" if int(lo) != int(hi) else f"{int(lo)}"
    except (TypeError, ValueError):
        return "not known"
