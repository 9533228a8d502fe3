"""requirements.txt (the README's install of the dashboard) asks for exactly what the package declares:
pyproject.toml's dependencies plus its ``app`` extra (``pip install .[app]``), with the same version ranges."""
from __future__ import annotations

from pathlib import Path

from packaging.requirements import Requirement

from needs import require_module

REPO = Path(__file__).resolve().parents[1]
tomllib = require_module("tomllib", hint="Python 3.11 or later")


def ranges(lines: list[str]) -> dict[str, str]:
    """Distribution name (normalised) -> its version range, as a comparable string."""
    out = {}
    for line in lines:
        requirement = Requirement(line)
        name = requirement.name.lower().replace("_", "-")
        assert name not in out, f"{name} listed twice"
        out[name] = str(sorted(str(s) for s in requirement.specifier))
    return out


def test_requirements_txt_is_the_package_with_its_app_extra():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = ranges(project["dependencies"] + project["optional-dependencies"]["app"])
    listed = [line.split("#")[0].strip() for line in (REPO / "requirements.txt").read_text().splitlines()]
    assert ranges([line for line in listed if line]) == declared
    assert {"streamlit", "plotly"} <= set(ranges(project["optional-dependencies"]["app"]))
