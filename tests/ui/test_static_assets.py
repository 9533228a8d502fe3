"""Streamlit's own files served from memory (ui/static_assets.py): the same bytes and headers as Streamlit's
handler, a 304 for a matching ETag, and every request it should not answer handed on untouched — paths
outside the static folder above all."""
from __future__ import annotations

import asyncio
import sys
import urllib.request
from pathlib import Path

import pytest

from ui.static_assets import StaticFromMemory, static_folder

ROOT = Path(__file__).resolve().parents[2]


class Downstream:
    """Stands for Streamlit's app: records what reached it and answers 418."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        self.paths.append(scope.get("path", ""))
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def ask(app, path: str, method: str = "GET", headers: dict | None = None) -> tuple[int, dict, bytes]:
    scope = {"type": "http", "method": method, "path": path,
             "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]}  # ASGI: lower case
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = sent[0]
    return (start["status"], {k.decode(): v.decode() for k, v in start.get("headers", [])},
            b"".join(m.get("body", b"") for m in sent[1:]))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A static folder with two files, and a secret beside it that must never be served."""
    (tmp_path / "static" / "js").mkdir(parents=True)
    (tmp_path / "static" / "js" / "index.abc123.js").write_bytes(b"console.log(1)")
    (tmp_path / "static" / "css").mkdir()
    (tmp_path / "static" / "css" / "main.def.css").write_bytes(b"body{}")
    (tmp_path / "secret.txt").write_text("not for the browser")
    return tmp_path / "static"


def test_a_file_is_read_once_then_served_from_memory(folder: Path):
    downstream = Downstream()
    app = StaticFromMemory(downstream, folder)
    status, headers, body = ask(app, "/static/js/index.abc123.js")
    assert (status, body) == (200, b"console.log(1)")
    assert headers["cache-control"] == "public, immutable, max-age=31536000"
    assert headers["content-length"] == "14" and "javascript" in headers["content-type"]
    (folder / "js" / "index.abc123.js").write_bytes(b"changed on disk")  # an installed package does not change
    assert ask(app, "/static/js/index.abc123.js")[2] == b"console.log(1)"
    assert downstream.paths == [] and app.cached_bytes == 14


def test_a_matching_etag_gets_304(folder: Path):
    app = StaticFromMemory(Downstream(), folder)
    etag = ask(app, "/static/css/main.def.css")[1]["etag"]
    status, headers, body = ask(app, "/static/css/main.def.css", headers={"If-None-Match": etag})
    assert (status, body, headers["etag"]) == (304, b"", etag)
    assert ask(app, "/static/css/main.def.css", headers={"If-None-Match": '"other"'})[0] == 200


@pytest.mark.parametrize("path, method, headers", [
    ("/static/../secret.txt", "GET", None),
    ("/static/js/../../secret.txt", "GET", None),
    ("/static/%2e%2e/secret.txt", "GET", None),
    ("/static//etc/passwd", "GET", None),
    ("/static/js\\..\\..\\secret.txt", "GET", None),
    ("/static/js/missing.js", "GET", None),
    ("/static/js", "GET", None),
    ("/static/", "GET", None),
    ("/secret.txt", "GET", None),
    ("/rank-flips/static/js/index.abc123.js", "GET", None),
    ("/static/js/index.abc123.js", "HEAD", None),
    ("/static/js/index.abc123.js", "POST", None),
    ("/static/js/index.abc123.js", "GET", {"Range": "bytes=0-3"}),
])
def test_what_it_should_not_answer_goes_on_to_streamlit(folder: Path, path: str, method: str, headers):
    downstream = Downstream()
    app = StaticFromMemory(downstream, folder)
    status, _, body = ask(app, path, method, headers)
    assert status == 418 and downstream.paths == [path]
    assert b"not for the browser" not in body


def test_a_symlink_out_of_the_folder_is_not_followed(folder: Path):
    (folder / "js" / "link.js").symlink_to(folder.parent / "secret.txt")
    downstream = Downstream()
    assert ask(StaticFromMemory(downstream, folder), "/static/js/link.js")[0] == 418


def test_the_cache_is_bounded(folder: Path):
    downstream = Downstream()
    app = StaticFromMemory(downstream, folder, limit=19)
    assert ask(app, "/static/js/index.abc123.js")[0] == 200  # 14 bytes
    assert ask(app, "/static/css/main.def.css")[0] == 418  # 6 more would pass the limit: Streamlit serves it
    assert app.cached_bytes == 14


def test_the_base_url_path_is_the_prefix(folder: Path, monkeypatch):
    import streamlit as st

    monkeypatch.setattr(st, "get_option", lambda name: "/tb/" if name == "server.baseUrlPath" else None)
    downstream = Downstream()
    app = StaticFromMemory(downstream, folder)
    assert ask(app, "/tb/static/js/index.abc123.js")[0] == 200
    assert ask(app, "/static/js/index.abc123.js")[0] == 418


def test_the_folder_is_streamlits_frontend_build():
    """The page Streamlit serves names its scripts under ``./static/``, and they are in :func:`static_folder`
    (fails if a Streamlit upgrade moves the build)."""
    index = (static_folder().parent / "index.html").read_text()
    import re

    scripts = re.findall(r'(?:src|href)="\./static/([^"]+)"', index)
    assert scripts and all((static_folder() / name).is_file() for name in scripts), scripts


def _get(url: str) -> tuple[int, dict, bytes]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()


@pytest.mark.slow
def test_the_dashboard_answers_as_streamlit_does(tmp_path: Path):
    """The dashboard (with the middleware) and a plain Streamlit app (bench/floor_app.py, Streamlit's own
    handler) answer the same files with the same bytes and headers."""
    sys.path.insert(0, str(ROOT / "tests" / "e2e"))
    from test_browser import start_server, stop_server

    index = (static_folder().parent / "index.html").read_text()
    import re

    names = re.findall(r'(?:src|href)="\./static/([^"]+)"', index)
    names += [next(p.name for p in (static_folder() / "media").iterdir() if p.suffix == ".woff2")]
    names[-1] = "media/" + names[-1]
    ours, ours_base = start_server(ROOT / "data", tmp_path / "ours.log", app=ROOT / "app.py", cwd=ROOT)
    try:
        plain, plain_base = start_server(ROOT / "data", tmp_path / "plain.log", app=ROOT / "bench" / "floor_app.py",
                                         cwd=ROOT)
        try:
            for name in names:
                a = _get(f"{ours_base}/static/{name}")
                b = _get(f"{plain_base}/static/{name}")
                assert a[0] == b[0] == 200 and a[2] == b[2], name
                for header in ("content-type", "content-length", "cache-control", "etag", "last-modified"):
                    assert a[1].get(header) == b[1].get(header), (name, header, a[1].get(header), b[1].get(header))
        finally:
            stop_server(plain)
    finally:
        stop_server(ours)
    assert "static files are answered from memory" in (tmp_path / "ours.log").read_text(), "app.py wires it in"
