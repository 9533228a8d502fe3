"""The child process that reads, checks and evaluates one uploaded candidate run (``ui/upload.py`` starts it).

An upload is untrusted: it is parsed here, in a process of its own — niced, with a memory cap, one thread,
killed by the parent when it runs past the evaluation time limit — so a hostile file costs the dashboard's
server process nothing but a wait. The engine's reader (:func:`evalcore.candidate.read_candidate`) checks each upload as it
checks a file, read from an anonymous in-memory file (``memfd``); this process's TMPDIR is a private folder the
parent creates (in ``/dev/shm`` where it exists) and removes when this process ends. Every message names the
upload as the visitor named it.

Protocol (binary, over the pipes): the parent writes one JSON line — ``{"request": {...}, "files": [[name,
size], ...]}`` — then the files' bytes one after the other, and closes stdin. The child answers one JSON
line — ``{"ok": true, "rows": N, ...}`` followed by the per-query rows as an Arrow IPC stream, or ``{"ok":
false, "message": "<file>:<line>: <what was expected>"}``. No pickle crosses the pipe. While it works, the
child writes its progress on stderr as JSON lines (:mod:`evalcore.progress`), which the parent shows.
"""
from __future__ import annotations

import json
import os
import re
import resource
import sys
from pathlib import Path

MEMORY_BYTES = 3 << 30
"""Address space the child may use (RLIMIT_AS): a hostile file that inflates stops with a MemoryError."""
_RAISE_HINT = re.compile(r"; raise TIEBREAK_\w+ to read it, 0 = no limit")
_LIMIT_NAME = re.compile(r"\s*\(TIEBREAK_[A-Z_]+\)")


def _confine() -> None:
    """Lower priority, cap memory, one compute thread (the server's other sessions keep a core)."""
    try:
        os.nice(10)
    except OSError:
        pass
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = MEMORY_BYTES if hard == resource.RLIM_INFINITY else min(MEMORY_BYTES, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):
        pass
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        os.environ[variable] = "1"


def _read_request(stream) -> tuple[dict, list[tuple[str, bytes]]]:
    header = json.loads(stream.readline())
    files = [(str(name), stream.read(int(size))) for name, size in header["files"]]
    return header["request"], files


def _answer(stream, header: dict, body: bytes = b"") -> None:
    stream.write(json.dumps(header).encode() + b"\n")
    stream.write(body)
    stream.flush()


def _message(error: BaseException) -> str:
    from evalcore.errors import one_line

    text = _RAISE_HINT.sub("", one_line(str(error)))  # a visitor cannot raise the server's limits
    return _LIMIT_NAME.sub(" (the dashboard's limit)", text)


def main() -> int:
    _confine()
    out = sys.stdout.buffer
    try:
        request, files = _read_request(sys.stdin.buffer)
    except Exception as exc:  # the parent wrote this; a broken pipe is not the visitor's fault
        _answer(out, {"ok": False, "message": f"the upload could not be passed to the evaluator ({exc})"})
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from evalcore import progress

    progress.configure(lines=sys.stderr)  # the page's bar: one JSON line per step on stderr (ui/upload.py)
    try:
        import pyarrow as pa

        from evalcore.errors import InputError
        from ui.upload_eval import evaluate_uploads

        pa.set_cpu_count(1)
        pa.set_io_thread_count(1)
        rows, summary = evaluate_uploads(files, **request)
    except MemoryError:
        _answer(out, {"ok": False, "message": "the upload needs more memory than one evaluation may use "
                                              f"({MEMORY_BYTES >> 30} GiB); send fewer or smaller files"})
        return 0
    except InputError as exc:
        _answer(out, {"ok": False, "message": _message(exc)})
        return 0
    except Exception as exc:  # never a traceback for the visitor; the parent logs this line
        _answer(out, {"ok": False, "internal": True,
                      "message": f"the evaluation failed unexpectedly ({type(exc).__name__}: {_message(exc)})"})
        return 0
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows)
    _answer(out, {"ok": True, "rows": rows.num_rows, **summary}, sink.getvalue().to_pybytes())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
