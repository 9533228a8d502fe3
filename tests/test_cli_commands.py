"""The CLI's command table: every module in evalcore/commands/ is a command, and a command whose module is
missing or fails to import makes every invocation fail with one line naming it (exit code 1), never a
command silently left out of ``evalcore --help``."""
from __future__ import annotations

import contextlib
import importlib
import io
import re
from pathlib import Path

import pytest

import evalcore.commands
from evalcore import cli

COMMANDS_DIR = Path(evalcore.commands.__file__).parent


def call(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse's --help
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_every_command_module_is_a_command_in_help():
    modules = {p.stem for p in COMMANDS_DIR.glob("*.py") if not p.stem.startswith("_")}
    assert {module for module, _ in cli.COMMANDS.values()} == modules
    code, out, err = call(["--help"])
    assert code == 0 and err == ""
    for name in cli.COMMANDS:
        assert re.search(rf"^ +{re.escape(name)}(\s|$)", out, re.M), name


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """Plant a command module ``name`` with ``source`` in a folder on evalcore.commands' search path."""
    monkeypatch.setattr(evalcore.commands, "__path__", [*evalcore.commands.__path__, str(tmp_path)])

    def plant(name: str, source: str | None) -> Path:
        path = tmp_path / f"{name}.py"
        if source is not None:
            path.write_text(source)
        importlib.invalidate_caches()
        monkeypatch.setitem(cli.COMMANDS, name.replace("_", "-"), (name, "a planted command"))
        return path

    return plant


def assert_one_line_error(argv: list[str], *expected: str) -> None:
    code, out, err = call(argv)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("evalcore: error: "), err
    for part in expected:
        assert part in err, (part, err)


@pytest.mark.parametrize("argv", [["--help"], ["evaluate", "--help"], ["leaderboard", "--benchmark", "rar-b"]])
def test_a_module_failing_to_import_fails_every_invocation(planted, argv):
    path = planted("planted_broken", "import json\n\nimport evalcore.no_such_package  # line 3\n")
    assert_one_line_error(argv, "'planted-broken'", "evalcore.commands.planted_broken",
                          "ModuleNotFoundError", "evalcore.no_such_package", f"{path}:3")


def test_a_missing_command_module_is_an_error_not_a_missing_command(planted):
    planted("planted_absent", None)
    assert_one_line_error(["--help"], "'planted-absent'", "evalcore.commands.planted_absent", "missing")


def test_a_syntax_error_names_its_file_and_line(planted):
    path = planted("planted_syntax", "def add_arguments(parser):\n    pass\n\ndef run(args) ->\n")
    assert_one_line_error(["--help"], "'planted-syntax'", "SyntaxError", f"{path}:4")


def test_a_module_raising_at_import_names_where(planted):
    path = planted("planted_raises", "x = 1\nraise RuntimeError('half-installed')\n")
    assert_one_line_error(["ties", "--help"], "'planted-raises'", "RuntimeError: half-installed", f"{path}:2")
