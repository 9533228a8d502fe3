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
             "prec": "--precision", "ties": "--tie-policy", "level": "--level", "ranks": "--ranks", "lens": "--lens"}
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
    if cli["uncertainty"] is None:
        assert answer["uncertainty"] is None
        return
    for key in ("level", "ranks"):
        assert answer["uncertainty"][key] == cli["uncertainty"][key], key
    assert list(answer["uncertainty"]["lenses"]) == list(cli["uncertainty"]["lenses"])
    for name, lens in cli["uncertainty"]["lenses"].items():
        mine = answer["uncertainty"]["lenses"][name]
        for key in ("available", "reason", "n_adjacent_differ", "n_adjacent", "n_tested", "could_be_first", "n_tiers"):
            assert mine.get(key) == lens.get(key), (name, key)
    assert_close(answer["uncertainty"], cli["uncertainty"], "uncertainty")  # every test and set, to 6 decimals


def assert_close(mine, theirs, where: str) -> None:
    """``mine`` has ``theirs``' structure, and each of its values is :func:`close` to the CLI's."""
    if isinstance(theirs, dict):
        assert isinstance(mine, dict) and set(mine) == set(theirs), (where, mine, theirs)
        for key in theirs:
            assert_close(mine[key], theirs[key], f"{where}.{key}")
    elif isinstance(theirs, list):
        assert isinstance(mine, list) and len(mine) == len(theirs), where
        for i, (a, b) in enumerate(zip(mine, theirs)):
            assert_close(a, b, f"{where}[{i}]")
    else:
        assert close(mine, theirs), (where, mine, theirs)
