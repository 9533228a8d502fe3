"""The product's import graph: no cycle, and the layers pages → ui → evalcore.

Every ``.py`` of evalcore/, ui/, pages/, scripts/ and app.py is parsed with :mod:`ast`; every ``import`` statement
counts, wherever it stands (module level, inside a function, under ``if TYPE_CHECKING``), since an import inside a
function only postpones the cycle to the first call. ``from a import b`` where ``a.b`` is a module is an edge to
``a.b``; a name that is not a module is an edge to ``a`` itself. The scripts import each other by bare name (they
put scripts/ on ``sys.path``), so there ``import make_real_runs`` is an edge to ``scripts.make_real_runs``.
Imports by computed name (``importlib.import_module(f"...")``) are not seen.

Reproduce: ``python -m pytest tests/test_import_graph.py -q``.
"""
from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("evalcore", "ui", "pages")
SCRIPTS = "scripts"
TOP_FILES = ("app.py",)


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name → file, for the product's code under ``root``."""
    found = {}
    for package in (*PACKAGES, SCRIPTS):
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    for name in TOP_FILES:
        if (root / name).is_file():
            found[name.removesuffix(".py")] = root / name
    return found


def _resolve_relative(importer: str, is_package: bool, level: int, module: str | None) -> str:
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, module] if module else base)


def imported_names(importer: str, path: Path) -> Iterator[tuple[str, int]]:
    """(dotted name imported, line) for every import statement of ``path``, module-level or not."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(importer, is_package, node.level, node.module)
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno  # a submodule, or a name of ``base`` (see edges)


def _target(name: str, importer: str, modules: Mapping[str, Path]) -> str | None:
    """The product module ``name`` loads: the longest known prefix of it (``a.b.f`` → ``a.b`` when ``f`` is a
    function of ``a.b``); a script's bare name is a sibling script."""
    candidates = [name]
    if importer.startswith(SCRIPTS + "."):
        candidates.append(f"{SCRIPTS}.{name}")
    for candidate in candidates:
        parts = candidate.split(".")
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            if prefix in modules:
                return prefix
    return None


@functools.cache
def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """Module → {imported product module: line of the first such import} (once per root: tests only read it)."""
    modules = module_files(root)
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for importer, path in modules.items():
        for name, line in imported_names(importer, path):
            target = _target(name, importer, modules)
            if target is not None and target != importer:
                graph[importer].setdefault(target, line)
    return graph


@functools.cache
def all_imports(root: Path) -> dict[str, list[tuple[str, int]]]:
    """Module → every dotted name it imports (product or not), with its line."""
    return {name: list(imported_names(name, path)) for name, path in module_files(root).items()}


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One cycle as ``[a, b, …, a]``, or None (iterative depth-first search, modules in sorted order)."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path = [start]
        on_path = {start: 0}
        stack = [iter(sorted(graph[start]))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                done.add(path[-1])
                del on_path[path.pop()]
                continue
            if nxt in on_path:
                return [*path[on_path[nxt]:], nxt]
            if nxt in done or nxt not in graph:
                continue
            on_path[nxt] = len(path)
            path.append(nxt)
            stack.append(iter(sorted(graph[nxt])))
    return None


def _printed(cycle: list[str], graph: Mapping[str, Mapping[str, int]]) -> str:
    steps = [f"{a} (line {graph[a][b]}) → {b}" for a, b in zip(cycle, cycle[1:])]
    return "; ".join(steps)


# --- the product --------------------------------------------------------------------------------------------------


def test_product_code_has_no_import_cycle():
    graph = import_graph(ROOT)
    assert len(graph) > 50, sorted(graph)  # the walk found the product (not an empty folder)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + _printed(cycle, graph)


def test_evalcore_imports_neither_streamlit_nor_ui_nor_pages():
    wrong = [
        f"{module} line {line}: import {name}"
        for module, names in all_imports(ROOT).items()
        if module == "evalcore" or module.startswith("evalcore.")
        for name, line in names
        if name.split(".")[0] in ("streamlit", "ui", "pages")
    ]
    assert not wrong, "\n".join(wrong)


def test_ui_imports_no_page():
    wrong = [
        f"{module} line {line}: import {name}"
        for module, names in all_imports(ROOT).items()
        if module.startswith("ui.")
        for name, line in names
        if name.split(".")[0] == "pages"
    ]
    assert not wrong, "\n".join(wrong)


UI_LAYERS = (
    ("base", {"ui", "ui.words", "ui.state", "ui.glossary", "ui.screen", "ui.snapshot", "ui.tables", "ui.charts",
              "ui.coverage_gaps", "ui.memo", "ui.internals", "ui.drawing", "ui.notices", "ui.upload_eval", "ui.upload_worker",
              "ui.static_assets", "ui.page_style", "ui.page_base", "ui.gate", "ui.heap"}),
    ("data", {"ui.data"}),
    ("sidebar and notices", {"ui.sidebar", "ui.hints"}),
    ("page parts", {"ui.board", "ui.drilldown", "ui.recorder", "ui.upload", "ui.rank_flips"}),
    ("frame", {"ui.navigation", "ui.warm_start", "ui.entry.dashboard", "ui.api", "ui.api_answers"}),
)
"""The layers of ui/, bottom first (docs/ARCHITECTURE.md § Layers): a module imports modules of its own layer or
below, never above."""


def test_every_ui_module_has_a_layer():
    ui_modules = {name for name in import_graph(ROOT) if name == "ui" or name.startswith("ui.")}
    placed = [name for _, names in UI_LAYERS for name in names]
    assert len(placed) == len(set(placed)), "a module is in two layers"
    assert ui_modules == set(placed), (f"without a layer: {sorted(ui_modules - set(placed))}; "
                                       f"gone: {sorted(set(placed) - ui_modules)}")


def test_ui_modules_import_only_their_layer_or_below():
    layer_of = {name: (i, title) for i, (title, names) in enumerate(UI_LAYERS) for name in names}
    graph = import_graph(ROOT)
    upward = [f"{module} ({layer_of[module][1]}) line {line} imports {target} ({layer_of[target][1]})"
              for module, targets in graph.items() if module in layer_of
              for target, line in targets.items() if target in layer_of and layer_of[target][0] > layer_of[module][0]]
    assert not upward, "\n".join(upward)


def test_data_api_does_not_import_the_upload_page_code():
    """The session's uploaded run reaches ``ui.data`` through the frame (``data.begin_run``), not by import."""
    graph = import_graph(ROOT)
    assert "ui.upload" not in _reachable(graph, "ui.data")


def test_upload_worker_process_loads_no_streamlit_and_no_page_code():
    graph = import_graph(ROOT)
    loaded = _reachable(graph, "ui.upload_worker")
    assert {name for name in loaded if name.startswith(("ui.", "pages."))} == {"ui.upload_eval"}
    names = all_imports(ROOT)
    streamlit = [f"{module} line {line}" for module in loaded | {"ui.upload_worker"} for name, line in names[module]
                 if name.split(".")[0] == "streamlit"]
    assert not streamlit, streamlit


def test_pages_and_app_import_ui_and_evalcore_not_each_other():
    wrong = [f"{module} line {line} imports {target}" for module, targets in import_graph(ROOT).items()
             if module == "app" or module.startswith("pages.")
             for target, line in targets.items() if target == "app" or target.startswith("pages.")]
    assert not wrong, wrong


def _reachable(graph: Mapping[str, Iterable[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


# --- the walk itself, on a made-up tree ---------------------------------------------------------------------------


WALKS = {
    "a cycle hidden inside a function": (
        {"ui/__init__.py": "",
         "ui/a.py": "from ui import b\n",
         "ui/b.py": "import os\n\ndef late():\n    from ui.c import thing\n",
         "ui/c.py": "def f():\n    if True:\n        from ui import a\n",
         "ui/d.py": "from ui import a\n"},
        {"ui.b": {"ui.c": 4}, "ui.d": {"ui.a": 1}},
        ["ui.a", "ui.b", "ui.c", "ui.a"]),
    "a name of a package is an edge to the package, a submodule to the submodule": (
        {"evalcore/__init__.py": "",
         "evalcore/store/__init__.py": "from .catalogue import X\n",
         "evalcore/store/catalogue.py": "X = 1\n",
         "evalcore/store/derived.py": "from evalcore.store import X\nfrom . import catalogue\n",
         "scripts/one.py": "import two\n",
         "scripts/two.py": "import numpy\n"},
        {"evalcore.store": {"evalcore.store.catalogue": 1},
         "evalcore.store.derived": {"evalcore.store": 1, "evalcore.store.catalogue": 2},
         "scripts.one": {"scripts.two": 1}, "scripts.two": {}},
        None),
    "two scripts importing each other by bare name": (
        {"scripts/make.py": "def readme():\n    import readme\n",
         "scripts/readme.py": "import make as m\n"},
        {"scripts.make": {"scripts.readme": 2}, "scripts.readme": {"scripts.make": 1}},
        ["scripts.make", "scripts.readme", "scripts.make"]),
}


@pytest.mark.parametrize("files, edges, cycle", WALKS.values(), ids=WALKS.keys())
def test_the_walk_of_a_made_up_tree(tmp_path, files, edges, cycle):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path)
    assert {name: graph[name] for name in edges} == edges
    assert find_cycle(graph) == cycle
