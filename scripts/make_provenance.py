"""Write ``data/provenance.json`` (:mod:`evalcore.provenance`): for every ``source`` value in the data folder's
result files, what it is, its repository and commit, what wrote the shipped files and when.

Derived, not typed in: the source keys and their files from the folder (the ``source`` column of every result
parquet, ``runs/``, ``tasks/`` and ``_derived/`` excepted); upstream repositories and commits from the pins of
``scripts/fetch_sources.py`` (the commits the shipped data was built from); our own runs' commit and every
file's last write date from the repository's history (``git log``); the snapshot date is the newest of those.
Run it after changing data (the real-runs generator, an import): ``python scripts/make_provenance.py [--data
data] [--check]`` (``--check``: exit 1 when the file differs from what it would write).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

REPO_ROOT = Path(__file__).resolve().parents[1]
for _path in (REPO_ROOT, Path(__file__).resolve().parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from evalcore.formats import atomic_path  # noqa: E402
from evalcore.provenance import FILE_NAME, FORMAT, key_of  # noqa: E402
from fetch_sources import UPSTREAMS  # noqa: E402

SKIPPED_FOLDERS = ("runs", "tasks", "_derived")
# What each source is and what wrote its files (the one hand-written part: names, not numbers)
DESCRIPTIONS = {
    "mteb-results": ("MTEB results (published task scores)", "python -m evalcore import-mteb"),
    "r2med-paper": ("R2MED paper results (published task scores)", "python -m evalcore import-r2med"),
    "tiebreak-real-runs": ("our real runs (per-query results)", "scripts/make_real_runs.py"),
}
OUR_REPOSITORY = "this repository (tiebreak)"


def sources_in(data_dir: Path) -> dict[str, list[str]]:
    """source key -> the result files (relative to ``data_dir``) that hold rows of it."""
    found: dict[str, set[str]] = {}
    for path in sorted(data_dir.rglob("*.parquet")):
        relative = path.relative_to(data_dir)
        if any(part in SKIPPED_FOLDERS for part in relative.parts[:-1]):
            continue
        if "source" not in pq.read_schema(path).names:
            continue
        for value in pq.read_table(path, columns=["source"]).column("source").unique().to_pylist():
            if value:
                found.setdefault(key_of(value), set()).add(relative.as_posix())
    return {key: sorted(files) for key, files in sorted(found.items())}


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()


def last_written(data_dir: Path, files: list[str]) -> tuple[str, str]:
    """(date, commit) of the last commit that changed any of ``files``; ("", "") outside git history."""
    paths = [str((data_dir / f).resolve().relative_to(REPO_ROOT)) for f in files]
    line = _git("log", "-1", "--format=%cs %H", "--", *paths)
    return tuple(line.split(" ", 1)) if line else ("", "")  # type: ignore[return-value]


def upstream_of(key: str):
    for upstream in UPSTREAMS:
        if upstream.local_prefix.split("/", 1)[0] == key:
            return upstream
    return None


def provenance(data_dir: Path) -> dict:
    sources = {}
    for key, files in sources_in(data_dir).items():
        title, written_by = DESCRIPTIONS.get(key, (key, "unknown"))
        written, commit = last_written(data_dir, files)
        upstream = upstream_of(key)
        if upstream is not None:
            repository, commit = upstream.repo, upstream.commit
            url = f"https://github.com/{upstream.repo}/tree/{upstream.commit}"
        else:
            repository, url = OUR_REPOSITORY, "data/README.md"
        sources[key] = {"title": title, "repository": repository, "commit": commit, "url": url,
                        "written_by": written_by, "written": written, "files": files}
    snapshot = max((s["written"] for s in sources.values()), default="")
    return {"format": FORMAT, "snapshot": snapshot, "generator": "scripts/make_provenance.py", "sources": sources}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO_ROOT / "data")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is not up to date")
    args = parser.parse_args(argv)
    text = json.dumps(provenance(args.data.resolve()), indent=1, sort_keys=True) + "\n"
    target = args.data / FILE_NAME
    if args.check:
        current = target.read_text(encoding="utf-8") if target.is_file() else ""
        if current != text:
            print(f"{target} is not up to date: run python scripts/make_provenance.py", file=sys.stderr)
            return 1
        return 0
    with atomic_path(target) as temporary:
        Path(temporary).write_text(text, encoding="utf-8")
    print(f"wrote {target} ({len(json.loads(text)['sources'])} sources)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
