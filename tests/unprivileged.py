"""Running the CLI as a user whom file permissions bind, for the tests of unreadable files and folders.

Tests run as root in the project's containers, and root reads a ``chmod 000`` folder anyway; a test that only
``chmod``-ed would pass without the code it checks. So the CLI runs in a child process: as this user when it is
not root, else as user ``nobody`` through ``setpriv`` (util-linux; skipped with the reason where it is missing,
a failure in CI). The folders such a test works in come from :func:`shared_folder`, which ``nobody`` may enter.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from needs import missing

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534


def evalcore_as_user(*argv: str | Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m evalcore ARGV`` run by a user the permission bits apply to (see the module docstring)."""
    command = [sys.executable, "-m", "evalcore", *map(str, argv)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            missing("setpriv (util-linux) is needed to run a command as a user without root's rights")
        command = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": "/tmp", **(env or {})})


@contextmanager
def shared_folder() -> Iterator[Path]:
    """A new folder that the user of :func:`evalcore_as_user` may enter and write into (pytest's own tmp_path is
    private to its user), removed afterwards whatever its modes became."""
    folder = Path(tempfile.mkdtemp(prefix="evalcore-unprivileged-"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        for parent, folders, _ in os.walk(folder):  # top-down: a folder is opened up before it is entered
            for name in folders:
                if not os.path.islink(os.path.join(parent, name)):
                    os.chmod(os.path.join(parent, name), 0o755)
        shutil.rmtree(folder)
