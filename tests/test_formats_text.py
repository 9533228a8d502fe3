"""Text as lines (evalcore.formats.text): blank lines, a BOM and CRLF keep physical line numbers; undecodable bytes
and empty files are one line."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalcore.errors import InputError
from evalcore.formats import read_qrels, read_run
from formats_data import raises_at, run_with_bad_line, write_text


def test_crlf_and_bom_do_not_shift_line_numbers(tmp_path: Path) -> None:
    text = "\ufeff" + run_with_bad_line("q1 Q0 dx 1 oops t", 9).replace("\n", "\r\n")
    path = write_text(tmp_path / "crlf.trec", text)
    with raises_at(path, 9, "oops"):
        read_run(path)


@pytest.mark.parametrize("content", ["", "\n\n  \r\n", "\ufeff"])
def test_empty_text_files(tmp_path: Path, content: str) -> None:
    for name, reader in (("run.trec", read_run), ("qrels.qrels", read_qrels)):
        path = write_text(tmp_path / name, content)
        with raises_at(path, None, "empty file"):
            reader(path)


def test_undecodable_text(tmp_path: Path) -> None:
    latin1 = "q1 Q0 café 3 1 t\n".encode("latin-1")
    path = write_text(tmp_path / "latin1.trec", b"q1 Q0 a 1 1 t\nq1 Q0 b 2 1 t\n" + latin1)
    with raises_at(path, 3, "expected UTF-8"):
        read_run(path)
    random_bytes = np.random.default_rng(1).integers(128, 256, 4096, dtype=np.uint8).tobytes()
    garbage = write_text(tmp_path / "garbage.trec", random_bytes)
    with pytest.raises(InputError, match="expected UTF-8"):
        read_run(garbage)
