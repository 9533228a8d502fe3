#!/usr/bin/env python3
"""Fetch the upstream sources ``data/`` is derived from, at pinned commits, checked against sha256.

    python scripts/fetch_sources.py                 # into the folder evalcore.sources resolves (see below)
    python scripts/fetch_sources.py --only rarb-mcr --root /somewhere/sources
    python scripts/fetch_sources.py --check         # verify what is there, download nothing

What is fetched (every file is listed with its size and sha256 in ``scripts/sources-manifest.tsv.gz``):

- ``rarb-mcr/``: RAR-b's multiple-choice retrieval CSVs (8 tasks), github gowitheflow-1998/RAR-b, ``mcr/``;
- ``mteb-results/results/``: the MTEB result files of every model with a RAR-b or R2MED task, plus each model's
  ``model_meta.json``, github embeddings-benchmark/results, ``results/``;
- ``r2med-paper/results/`` and ``r2med-paper/demo-dataset/``: the R2MED paper's result JSONs and its 2-query demo
  dataset, github R2MED/R2MED, ``results/`` and ``dataset/``;
- ``r2med-paper/leaderboard-site.csv``: the leaderboard table of the R2MED website (R2MED/r2med.github.io,
  ``index.html``), extracted from the page; the sha256 checked is the extracted CSV's.

Files come from ``<base-url>/<owner>/<repo>/<commit>/<path>`` (base ``https://raw.githubusercontent.com``;
``--base-url`` or ``$TIEBREAK_SOURCES_BASE_URL`` point elsewhere, e.g. a mirror or a test server).

The destination is ``--root``, else the folder :mod:`evalcore.sources` resolves (``$TIEBREAK_SOURCES``, else
``../shared/data`` next to the repository when it exists, else ``./sources``). Each file is written atomically
(a hidden temporary in the same folder, renamed once its sha256 matched), so an interrupted run leaves only
complete files; a rerun skips the files already present with the right sha256 (resumable). Each failure is
one line on stderr (``fetch_sources: <file>: <what went wrong>``) and the exit code is 1; the files that could
be fetched are kept.

``--write-manifest DIR`` regenerates the manifest from a complete local copy (maintainers, when a pin moves).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import csv
import gzip
import hashlib
import html.parser
import io
import os
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from evalcore import sources  # noqa: E402

MANIFEST = Path(__file__).resolve().parent / "sources-manifest.tsv.gz"
BASE_URL_ENV = "TIEBREAK_SOURCES_BASE_URL"
DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
TIMEOUT_SECONDS = 60
ATTEMPTS = 3  # transient network errors are retried; a 404 or a sha256 mismatch is not


@dataclass(frozen=True)
class Upstream:
    """Where the files under a local prefix come from: ``local_prefix + rest`` is ``upstream_prefix + rest``
    in ``repo`` at ``commit``; ``extract`` names a transformation of the fetched file (None = kept as is)."""

    local_prefix: str
    repo: str
    commit: str
    upstream_prefix: str
    extract: str | None = None


UPSTREAMS = (  # pins: the commits the shipped data/ was built from (see docs/testing.md)
    Upstream("rarb-mcr/", "gowitheflow-1998/RAR-b", "c16b6faf424e5067ae657f434e10204432464066", "mcr/"),
    Upstream("mteb-results/results/", "embeddings-benchmark/results", "f4cc6c8b365a3c779dbc708d6affe0b0355b2ddf",
             "results/"),
    Upstream("r2med-paper/results/", "R2MED/R2MED", "62b7074600407f7776fbec6f55a4db96eb237ea4", "results/"),
    Upstream("r2med-paper/demo-dataset/", "R2MED/R2MED", "62b7074600407f7776fbec6f55a4db96eb237ea4", "dataset/"),
    Upstream("r2med-paper/leaderboard-site.csv", "R2MED/r2med.github.io", "c85a571f5292c00ee2b5865be05a869b0f1a85a1",
             "index.html", extract="r2med-site-table"),
)


@dataclass(frozen=True)
class Entry:
    """One manifest line: a file under the sources root, its size in bytes and sha256."""

    path: str
    size: int
    sha256: str


class FetchError(Exception):
    """One file could not be fetched; the message is the one-line reason."""


# -- manifest ----------------------------------------------------------------------------------------------
def read_manifest(path: Path = MANIFEST) -> list[Entry]:
    """The manifest's entries (gzip'd TSV: path, size, sha256; ``#`` lines are comments)."""
    opener = gzip.open if path.suffix == ".gz" else open
    entries = []
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3 or not fields[1].isdigit() or len(fields[2]) != 64:
                raise ValueError(f"{path}:{number}: expected path<TAB>size<TAB>sha256")
            entries.append(Entry(fields[0], int(fields[1]), fields[2]))
    return entries


def write_manifest(root: Path, out: Path = MANIFEST) -> int:
    """Write the manifest of every file under ``root`` that an upstream covers; returns the file count."""
    lines = ["# path\tsize\tsha256 (generated by scripts/fetch_sources.py --write-manifest)"]
    count = 0
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = file.relative_to(root).as_posix()
        if upstream_of(relative) is None:
            continue
        data = file.read_bytes()
        lines.append(f"{relative}\t{len(data)}\t{hashlib.sha256(data).hexdigest()}")
        count += 1
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
        handle.write(("\n".join(lines) + "\n").encode("utf-8"))
    return count


def upstream_of(path: str) -> Upstream | None:
    for upstream in UPSTREAMS:
        if path == upstream.local_prefix or (upstream.local_prefix.endswith("/") and path.startswith(upstream.local_prefix)):
            return upstream
    return None


def url_of(entry: Entry, base_url: str) -> str:
    upstream = upstream_of(entry.path)
    if upstream is None:
        raise FetchError("no upstream is pinned for this path")
    upstream_path = upstream.upstream_prefix + entry.path[len(upstream.local_prefix):]
    return f"{base_url.rstrip('/')}/{upstream.repo}/{upstream.commit}/{urllib.parse.quote(upstream_path)}"


# -- the R2MED website's leaderboard table ----------------------------------------------------------------
SITE_COLUMNS = ["Rewriter", "Retriever", "Reranker", "Avg", "Biology", "Bioinformatics", "Medical-Sciences",
                "MedXpertQA-Exam", "MedQA-Diag", "PMC-Treatment", "PMC-Clinical", "IIYi-Clinical"]


class _TableRows(html.parser.HTMLParser):
    """The text of each cell of each ``<tr>`` inside ``<tbody>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._in_body = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tbody":
            self._in_body = True
        elif self._in_body and tag == "tr":
            self.rows.append([])
        elif self._in_body and tag == "td" and self.rows:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_body = False
        elif tag == "td" and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def r2med_site_table(page: bytes) -> bytes:
    """The leaderboard of the R2MED website as CSV (the rank column, filled in by the page's script, dropped)."""
    parser = _TableRows()
    parser.feed(page.decode("utf-8"))
    rows = [row[1:] for row in parser.rows if row]
    if not rows or any(len(row) != len(SITE_COLUMNS) for row in rows):
        raise FetchError(f"the page's leaderboard table does not have the {len(SITE_COLUMNS) + 1} expected columns")
    out = io.StringIO()
    writer = csv.writer(out)  # the csv module's \r\n line ends, as in the shared copy
    writer.writerow(SITE_COLUMNS)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


EXTRACTORS = {"r2med-site-table": r2med_site_table}


# -- fetching ----------------------------------------------------------------------------------------------
def sha256_of(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _download(url: str) -> bytes:
    last: Exception | None = None
    for attempt in range(ATTEMPTS):
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                raise FetchError(f"HTTP {exc.code} {exc.reason} from {url}") from None
            last = exc
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        time.sleep(0.5 * (attempt + 1))
    reason = getattr(last, "reason", last)
    raise FetchError(f"could not download {url} after {ATTEMPTS} attempts ({reason})")


def _write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def fetch_one(entry: Entry, root: Path, base_url: str) -> bool:
    """Fetch one file unless it is present with the right sha256; True when it was downloaded."""
    target = root / entry.path
    if sha256_of(target) == entry.sha256:
        return False
    upstream = upstream_of(entry.path)
    data = _download(url_of(entry, base_url))
    if upstream is not None and upstream.extract:
        data = EXTRACTORS[upstream.extract](data)
    got = hashlib.sha256(data).hexdigest()
    if got != entry.sha256:
        raise FetchError(f"sha256 mismatch: expected {entry.sha256[:16]}…, got {got[:16]}… "
                         f"({len(data):,} bytes, expected {entry.size:,}); not written")
    _write_atomic(target, data)
    return True


def select(entries: list[Entry], only: list[str] | None) -> list[Entry]:
    if not only:
        return entries
    unknown = [name for name in only if name not in sources.KNOWN]
    if unknown:
        raise SystemExit(f"fetch_sources: unknown source {unknown[0]!r}; expected one of {', '.join(sources.KNOWN)}")
    return [e for e in entries if e.path.split("/", 1)[0] in only]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, help="destination (default: the folder evalcore.sources resolves)")
    parser.add_argument("--only", action="append", choices=sources.KNOWN, help="fetch only this source (repeatable)")
    parser.add_argument("--base-url", default=os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL,
                        help=f"where <owner>/<repo>/<commit>/<path> is served (default ${BASE_URL_ENV} or "
                             f"{DEFAULT_BASE_URL})")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="the list of files and their sha256")
    parser.add_argument("--jobs", type=int, default=8, help="parallel downloads (default 8)")
    parser.add_argument("--check", action="store_true", help="only verify the files present; download nothing")
    parser.add_argument("--write-manifest", type=Path, metavar="DIR",
                        help="regenerate the manifest from a complete local copy DIR, then exit")
    args = parser.parse_args(argv)

    if args.write_manifest:
        count = write_manifest(args.write_manifest, args.manifest)
        print(f"fetch_sources: wrote {args.manifest} ({count} files)")
        return 0
    root = args.root if args.root is not None else sources.sources_root()
    entries = select(read_manifest(args.manifest), args.only)
    failures: list[str] = []
    if args.check:
        for entry in entries:
            got = sha256_of(root / entry.path)
            if got != entry.sha256:
                failures.append(f"{entry.path}: {'missing' if got is None else 'sha256 mismatch'}")
        fetched = 0
    else:
        fetched = 0
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            futures = {pool.submit(fetch_one, entry, root, args.base_url): entry for entry in entries}
            for future in concurrent.futures.as_completed(futures):
                try:
                    fetched += future.result()
                except FetchError as exc:
                    failures.append(f"{futures[future].path}: {exc}")
                except OSError as exc:  # writing: disk full, permission denied ...
                    failures.append(f"{futures[future].path}: cannot write under {root} ({exc.strerror or exc})")
    for line in sorted(failures):
        print(f"fetch_sources: {line}", file=sys.stderr)
    verb = "verified" if args.check else "present"
    print(f"fetch_sources: {len(entries) - len(failures)} of {len(entries)} files {verb} under {root}"
          + ("" if args.check else f" ({fetched} downloaded)")
          + (f"; {len(failures)} failed" + ("" if args.check else ", rerun to resume") if failures else ""),
          file=sys.stderr if failures else sys.stdout)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
