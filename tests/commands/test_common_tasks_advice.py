"""``evalcore leaderboard --common-tasks`` over systems that share no task says so and how to choose systems:
the systems it names as ``--system`` examples are those with the most tasks, and following the advice ranks
them."""
from __future__ import annotations

import contextlib
import io
import shlex
from pathlib import Path

from evalcore.cli import main
from evalcore.store import Condition, Store

SHIPPED = Path(__file__).resolve().parents[2] / "data"


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_shown_systems_without_a_common_task_get_the_cause_and_systems_that_share_tasks():
    table = Store(SHIPPED).task_table(Condition("rar-b", instruction=None))
    table = table[table["value"].notna()]
    per_task = table.groupby("task")["system"].nunique()
    n_systems = table["system"].nunique()
    assert (per_task < n_systems).all(), "the shipped data: every task misses some system"
    code, out, err = cli("leaderboard", "--data", str(SHIPPED), "--benchmark", "rar-b", "--common-tasks")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"the {n_systems} shown systems share no task" in err and "--instruction any" not in err
    advice = shlex.split(err.split("most tasks: ")[1].split(" (")[0])
    named = advice[1::2]
    assert advice[0::2] == ["--system"] * len(named) and len(named) == 3
    counts = table.groupby("system")["task"].nunique()
    assert all(counts[name] == counts.max() for name in named)
    code, out, err = cli("leaderboard", "--data", str(SHIPPED), "--benchmark", "rar-b", "--common-tasks",
                         "--format", "csv", *advice)
    assert code == 0, err
    assert sum(name in out for name in named) == len(named)
