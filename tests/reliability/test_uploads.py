"""Uploads (issue 7, item 6): the dashboard accepts no uploaded files, so there is no upload path to cap,
type-check or validate. This guard fails the day an ``st.file_uploader`` appears in the dashboard, so that
the upload gets its size cap, type check and the CLI's validation (``evalcore.formats.read_run`` /
``read_qrels`` → ``InputError``) together with tests, before it ships.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = [ROOT / "app.py", *sorted((ROOT / "views").glob("*.py")), *sorted((ROOT / "pages").glob("*.py")),
             *sorted((ROOT / "ui").glob("*.py"))]


def test_dashboard_has_no_upload_widget():
    found = [f"{path.relative_to(ROOT)}:{number}"
             for path in DASHBOARD if path.exists()
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"file_uploader|camera_input|data_editor\(.*num_rows=.dynamic", line)]
    assert not found, ("the dashboard now accepts uploads: add a size cap (server.maxUploadSize and a check), "
                       "a type check and read_run/read_qrels validation with tests (issue 7, item 6): "
                       + ", ".join(found))
