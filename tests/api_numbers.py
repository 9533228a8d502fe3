"""The JSON API's numbers against the CLI's: a view link's keys as ``evalcore leaderboard`` flags, the CLI's
JSON in a separate process, and the comparison (tests/ui/test_api.py, tests/e2e/test_proxy.py)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI_DECIMALS = 6  # evalcore leaderboard --format json prints floats to 6 decimals


def cli_board(data_dir: Path, args: list[str]) -> dict:
    """``evalcore leaderboard --format json`` over ``data_dir`` with ``args``, in a process of its own."""
    done = subprocess.run([sys.executable, "-m", "evalcore", "leaderboard", "--data", str(data_dir), "--format", "json",
                           *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cli_args(params: dict) -> list[str]:
    """The CLI's flags for a view link's parameters (the dashboard's URL keys are the CLI's, docs/api.md)."""
    flags = {"bench": "--benchmark", "metric": "--metric", "setting": "--setting", "instr": "--instruction",
             "prec": "--precision", "ties": "--tie-policy", "level": "--level", "ranks": "--ranks",
             "lens": "--lens"}
    params = {"bench": "rar-b", **params}  # the page's first benchmark; the CLI has no default
    args = [part for key, flag in flags.items() if key in params for part in (flag, params[key])]
    if params.get("common") == "1":
        args.append("--common-tasks")
    if params.get("sort") in ("g", "mean"):
        args += ["--aggregate", {"g": "G", "mean": "mean"}[params["sort"]]]
    return args


def close(api_value, cli_value) -> bool:
    """The API's value printed to the CLI's six decimals is the CLI's (None for None; text and flags equal)."""
    if api_value is None or cli_value is None:
        return api_value is None and cli_value is None
    if isinstance(cli_value, float) or isinstance(api_value, float):
        return math.isclose(api_value, cli_value, abs_tol=0.5 * 10 ** -CLI_DECIMALS + 1e-12)
    return api_value == cli_value


def assert_same_board(answer: dict, cli: dict) -> None:
    assert answer["condition"] == cli["condition"]
    assert answer["ranked_by"] == cli["ranked_by"] and answer["tasks"] == cli["tasks"]
    assert [r["system"] for r in answer["ranked"]] == [r["system"] for r in cli["ranked"]]
    assert [r["system"] for r in answer["incomplete"]] == [r["system"] for r in cli["incomplete"]]
    for mine, theirs in zip(answer["ranked"], cli["ranked"]):
        assert set(mine) == set(theirs), mine["system"]
        wrong = {k: (mine[k], theirs[k]) for k in theirs if not close(mine[k], theirs[k])}
        assert not wrong, (mine["system"], wrong)
    assert_same_uncertainty(answer["uncertainty"], cli["uncertainty"])


def _same_record(mine: dict | None, theirs: dict | None) -> bool:
    if mine is None or theirs is None:
        return mine is None and theirs is None
    return set(mine) == set(theirs) and all(close(mine[k], theirs[k]) for k in theirs)


def assert_same_uncertainty(answer: dict | None, cli: dict | None) -> None:
    """Both lenses' records: the level and kind, each lens' counts, adjacent tests, who could be #1 and, when
    no pair differs, the strongest pair against Holm's threshold."""
    if cli is None:
        assert answer is None
        return
    assert (answer["level"], answer["ranks"]) == (cli["level"], cli["ranks"])
    assert list(answer["lenses"]) == list(cli["lenses"]) and set(cli["lenses"]) == {"queries", "tasks"}
    for name, theirs in cli["lenses"].items():
        mine = answer["lenses"][name]
        assert set(mine) == set(theirs), name
        for key in ("question", "available", "reason", "n_adjacent_differ", "n_adjacent", "n_tested", "test",
                    "could_be_first", "n_tiers"):
            assert mine[key] == theirs[key], (name, key)
        assert len(mine["adjacent"] or []) == len(theirs["adjacent"] or [])
        for pair, other in zip(mine["adjacent"] or [], theirs["adjacent"] or []):
            assert _same_record(pair, other), (name, pair, other)
        assert _same_record(mine["strongest_when_none_differ"], theirs["strongest_when_none_differ"]), name
