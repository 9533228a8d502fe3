"""scripts/fetch_sources.py against a local HTTP server (loopback only) that serves a few files under the
upstream layout ``<owner>/<repo>/<commit>/<path>``: every file is fetched and checked, a rerun downloads
nothing, an interrupted fetch resumes, a sha256 mismatch and a missing file are one-line errors that write
nothing, and the committed manifest matches the sources where they are present."""
from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evalcore import sources
from needs import require_source

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "fetch_sources.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("fetch_sources", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


fetch = _load_script()
PIN = {u.local_prefix: u for u in fetch.UPSTREAMS}

SITE_ROWS = [["-", "E5-mistral-7b-instruct", "ReasonRank(32B)", "42.85", "45.56", "67.73", "63.45", "18.90", "30.60",
              "41.08", "46.11", "29.35"],
             ["o3-mini", "NV-Embed-v2", "-", "41.35", "34.01", "55.90", "51.28", "28.99", "40.30", "48.97", "50.86",
              "20.47"]]


def site_page(rows: list[list[str]]) -> bytes:
    """An HTML page with the R2MED website's leaderboard markup (links, bold average, blank rank cell)."""
    body = []
    for rewriter, retriever, reranker, avg, *tasks in rows:
        link = lambda text: f'<a href="https://example.org/{text}" style="color: #9370DB;">{text}</a><br>'  # noqa: E731
        body.append(f"""
          <tr style="border-bottom: 1px solid #eee;">
            <td class="rank-cell"></td>
            <td style="min-width: 120px;">{'<a>-</a>' if rewriter == '-' else link(rewriter)}</td>
            <td>
              {link(retriever)}
            </td>
            <td style="min-width: 120px;">{'<a>-</a>' if reranker == '-' else link(reranker)}</td>
            <td><strong>{avg}</strong></td>
            {''.join(f'<td>{t}</td>' for t in tasks)}
          </tr>""")
    return (f"""<!DOCTYPE html><html><body><table><thead><tr><th>Rank</th><th>Rewriter</th></tr></thead>
        <tbody>{''.join(body)}
        </tbody></table><script>rows.forEach((row, i) => {{ row.querySelector('.rank-cell'); }});</script>
        </body></html>""").encode("utf-8")


def site_csv(rows: list[list[str]]) -> bytes:
    return ("\r\n".join([",".join(fetch.SITE_COLUMNS)] + [",".join(r) for r in rows]) + "\r\n").encode("utf-8")


# local path -> content served upstream (and expected locally)
FILES = {
    "rarb-mcr/winogrande-test.csv": b"instructions,queries,documents,labels\ni,q,\"['a', 'b']\",1\n",
    "rarb-mcr/alphanli-test.csv": b"instructions,queries,documents,labels\nj,r,\"['c', 'd']\",0\n",
    "mteb-results/results/org__model/rev1/PIQA.json": b'{"task_name": "PIQA", "scores": {}}\n',
    "r2med-paper/results/base retriever/nv/Biology.json": b'{"dataset_name": "Biology", "test": {}}\n',
    "r2med-paper/demo-dataset/Biology-demo/qrels.jsonl": b'{"q_id": 1, "p_id": "x", "score": 1}\n',
}


def upstream_path(local: str) -> Path:
    upstream = fetch.upstream_of(local)
    return Path(upstream.repo) / upstream.commit / (upstream.upstream_prefix + local[len(upstream.local_prefix):])


class Server:
    """http.server in a thread, serving ``directory``; counts the requests it answered."""

    def __init__(self, directory: Path) -> None:
        self.requests: list[str] = []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):  # quiet; record the path instead
                server.requests.append(self.path)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler,
                                                                                         directory=str(directory)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def upstream(tmp_path):
    served = tmp_path / "served"
    for local, data in FILES.items():
        path = served / upstream_path(local)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    site = served / upstream_path("r2med-paper/leaderboard-site.csv")
    site.parent.mkdir(parents=True, exist_ok=True)
    site.write_bytes(site_page(SITE_ROWS))
    server = Server(served)
    yield server, served
    server.close()


def write_manifest(path: Path, entries: dict[str, bytes]) -> Path:
    lines = ["# path\tsize\tsha256"] + [f"{p}\t{len(d)}\t{hashlib.sha256(d).hexdigest()}" for p, d in entries.items()]
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


EXPECTED = {**FILES, "r2med-paper/leaderboard-site.csv": site_csv(SITE_ROWS)}


def run(root: Path, manifest: Path, base_url: str, *extra: str) -> int:
    return fetch.main(["--root", str(root), "--manifest", str(manifest), "--base-url", base_url, "--jobs", "3",
                       *extra])


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_fetches_every_file_checks_it_and_a_rerun_downloads_nothing(tmp_path, upstream, capsys):
    server, _ = upstream
    manifest = write_manifest(tmp_path / "manifest.tsv.gz", EXPECTED)
    root = tmp_path / "sources"
    assert run(root, manifest, server.url) == 0
    assert files_under(root) == EXPECTED  # no temporary left beside them
    assert len(server.requests) == len(EXPECTED)
    assert "6 of 6 files present" in capsys.readouterr().out
    server.requests.clear()
    assert run(root, manifest, server.url) == 0
    assert server.requests == []
    assert run(root, manifest, server.url, "--check") == 0


def test_an_interrupted_fetch_resumes_with_the_missing_and_the_damaged_files(tmp_path, upstream):
    server, _ = upstream
    manifest = write_manifest(tmp_path / "manifest.tsv.gz", EXPECTED)
    root = tmp_path / "sources"
    assert run(root, manifest, server.url) == 0
    (root / "rarb-mcr" / "alphanli-test.csv").unlink()
    (root / "mteb-results/results/org__model/rev1/PIQA.json").write_bytes(b'{"task_name": "PI')  # cut short
    assert run(root, manifest, server.url, "--check") == 1
    server.requests.clear()
    assert run(root, manifest, server.url) == 0
    assert sorted(server.requests) == sorted(
        "/" + str(upstream_path(p)) for p in ("rarb-mcr/alphanli-test.csv",
                                            "mteb-results/results/org__model/rev1/PIQA.json"))
    assert files_under(root) == EXPECTED


def test_a_sha256_mismatch_and_a_missing_file_are_one_line_errors_that_write_nothing(tmp_path, upstream, capsys):
    server, served = upstream
    (served / upstream_path("rarb-mcr/winogrande-test.csv")).write_bytes(b"tampered upstream\n")
    missing = "rarb-mcr/spartqa-test.csv"  # in the manifest, not served
    manifest = write_manifest(tmp_path / "manifest.tsv.gz", {**EXPECTED, missing: b"anything\n"})
    root = tmp_path / "sources"
    (root / "rarb-mcr").mkdir(parents=True)
    (root / "rarb-mcr" / "winogrande-test.csv").write_bytes(b"an old local copy\n")
    assert run(root, manifest, server.url) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3, err  # two failures and the summary, one line each
    assert err[0].startswith(f"fetch_sources: {missing}: HTTP 404") and "spartqa-test.csv" in err[0]
    assert err[1].startswith("fetch_sources: rarb-mcr/winogrande-test.csv: sha256 mismatch: expected ")
    assert "not written" in err[1]
    assert err[2] == f"fetch_sources: 5 of 7 files present under {root} (5 downloaded); 2 failed, rerun to resume"
    got = files_under(root)
    assert got["rarb-mcr/winogrande-test.csv"] == b"an old local copy\n"  # never replaced by unchecked bytes
    assert missing not in got
    assert {p: d for p, d in got.items() if p != "rarb-mcr/winogrande-test.csv"} == {
        p: d for p, d in EXPECTED.items() if p != "rarb-mcr/winogrande-test.csv"}


def test_an_unreachable_server_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(fetch, "ATTEMPTS", 1)
    manifest = write_manifest(tmp_path / "manifest.tsv.gz", {"rarb-mcr/winogrande-test.csv": b"x"})
    server = Server(tmp_path)
    url = server.url
    server.close()  # nothing listens there any more
    assert run(tmp_path / "sources", manifest, url) == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("fetch_sources: rarb-mcr/winogrande-test.csv: could not download http://127.0.0.1:")
    assert not (tmp_path / "sources" / "rarb-mcr").exists() or not any((tmp_path / "sources").rglob("*.csv"))


def test_only_fetches_the_named_source(tmp_path, upstream):
    server, _ = upstream
    manifest = write_manifest(tmp_path / "manifest.tsv.gz", EXPECTED)
    root = tmp_path / "sources"
    assert run(root, manifest, server.url, "--only", "rarb-mcr") == 0
    assert sorted(files_under(root)) == ["rarb-mcr/alphanli-test.csv", "rarb-mcr/winogrande-test.csv"]


def test_the_command_writes_into_the_resolvers_folder_from_the_base_url_in_the_environment(tmp_path, upstream):
    server, _ = upstream
    manifest = write_manifest(tmp_path / "manifest.tsv.gz", EXPECTED)
    root = tmp_path / "resolved"
    env = {**os.environ, sources.SOURCES_ENV: str(root), fetch.BASE_URL_ENV: server.url}
    done = subprocess.run([sys.executable, str(SCRIPT), "--manifest", str(manifest)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert files_under(root) == EXPECTED
    for name in sources.KNOWN:  # the tests' require_source now finds them
        assert sources.missing_reason(name, {sources.SOURCES_ENV: str(root)}) is None


def test_site_table_extraction_keeps_the_cells_as_published():
    assert fetch.r2med_site_table(site_page(SITE_ROWS)) == site_csv(SITE_ROWS)
    with pytest.raises(fetch.FetchError, match="expected columns"):
        fetch.r2med_site_table(site_page([row[:-1] for row in SITE_ROWS]))


def test_site_table_extraction_reproduces_the_shipped_csv_byte_for_byte():
    csv_path = require_source(sources.R2MED_PAPER) / "leaderboard-site.csv"
    published = csv_path.read_bytes()
    rows = [line.split(",") for line in published.decode("utf-8").splitlines()[1:]]
    assert fetch.r2med_site_table(site_page(rows)) == published


def test_every_manifest_entry_has_a_pinned_upstream_and_a_quoted_url():
    entries = fetch.read_manifest()
    assert len(entries) > 3000 and len({e.path for e in entries}) == len(entries)
    assert {e.path.split("/", 1)[0] for e in entries} == set(sources.KNOWN)
    for entry in entries:
        url = fetch.url_of(entry, "https://mirror.example")
        upstream = fetch.upstream_of(entry.path)
        assert url.startswith(f"https://mirror.example/{upstream.repo}/{upstream.commit}/{upstream.upstream_prefix}")
        assert " " not in url
    assert fetch.url_of(fetch.Entry("r2med-paper/leaderboard-site.csv", 1, "0" * 64), "http://h") == (
        f"http://h/R2MED/r2med.github.io/{PIN['r2med-paper/leaderboard-site.csv'].commit}/index.html")


def test_the_committed_manifest_matches_the_sources_where_present(capsys):
    for name in sources.KNOWN:
        require_source(name)
    assert fetch.main(["--check"]) == 0, capsys.readouterr().err
