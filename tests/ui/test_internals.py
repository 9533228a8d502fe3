"""ui/internals.py: each use of a library's internals checked against the behaviour it relies on, so an upgrade
that changes it fails here (the version each was written for: internals.WRITTEN_FOR)."""
from __future__ import annotations

import inspect
import os
import re
from pathlib import Path

import pandas as pd

from ui import internals

USES = ("answer_styler_rendering", "streamlit_static_folder", "starlette_etag", "drop_expired_sessions")


def test_every_use_names_the_versions_it_was_written_for_and_has_a_test_here():
    public = {name for name, value in vars(internals).items()
              if inspect.isfunction(value) and not name.startswith("_") and value.__module__ == internals.__name__}
    assert public == set(USES) == set(internals.WRITTEN_FOR)
    assert all(re.fullmatch(r"(pandas|streamlit|starlette) \d+\.\d+", version)
               for versions in internals.WRITTEN_FOR.values() for version in versions)
    here = Path(__file__).read_text()
    assert all(f"def test_{name}_" in here for name in USES)


def test_answer_styler_rendering_is_what_streamlit_marshals_and_pandas_renders_no_cell(monkeypatch):
    """Streamlit's st.dataframe marshalling asks the Styler's _compute() and then _translate() once, and sends
    the ``cellstyle`` rules it gets as the cells' CSS; pandas' own per-cell rendering is not reached."""
    from pandas.io.formats.style_render import StylerRenderer
    from streamlit.elements.lib.pandas_styler_utils import marshall_styler
    from streamlit.proto.ArrowData_pb2 import ArrowData

    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    rendered = {"cellstyle": [{"props": [("background-color", "red")], "selectors": ["row1_col0"]}],
                "table_styles": [], "body": []}
    styler = internals.answer_styler_rendering(frame.style.apply(lambda block: block.astype(str), axis=None),
                                               rendered)
    asked = []
    for name in ("_compute", "_translate"):
        answer = getattr(styler, name)
        setattr(styler, name, lambda *args, name=name, answer=answer, **kwargs: asked.append(name) or answer())

    def rendered_by_pandas(*args, **kwargs):
        raise AssertionError("pandas rendered the cells one by one")

    monkeypatch.setattr(StylerRenderer, "_translate_body", rendered_by_pandas)
    proto = ArrowData()
    marshall_styler(proto, styler, "uuid")
    assert asked == ["_compute", "_translate"]
    assert re.fullmatch(r"#T_\w+_row1_col0 \{ background-color: red \}", proto.styler.styles.strip())


def test_streamlit_static_folder_holds_the_scripts_streamlits_page_names():
    folder = internals.streamlit_static_folder()
    index = (folder.parent / "index.html").read_text()
    scripts = re.findall(r'src="\./static/([^"]+\.js)"', index)
    assert scripts and all((folder / name).is_file() for name in scripts), scripts


def test_starlette_etag_is_the_one_starlettes_file_response_sends(tmp_path):
    from starlette.responses import FileResponse

    path = tmp_path / "a.js"
    path.write_bytes(b"console.log(1)")
    info = os.stat(path)
    response = FileResponse(path, stat_result=info)
    assert response.headers["etag"] == internals.starlette_etag(info.st_mtime, info.st_size)


def test_drop_expired_sessions_forgets_what_streamlits_store_keeps_until_asked(monkeypatch):
    """Streamlit's store of closed tabs' sessions keeps an expired session until a write or a length query; the
    function asks, and the expired ones are gone (a live one stays)."""
    import types

    from streamlit.runtime.memory_session_storage import MemorySessionStorage
    from streamlit.runtime.session_manager import SessionInfo

    now = [1000.0]
    storage = MemorySessionStorage(maxsize=8, ttl_seconds=120)
    monkeypatch.setattr(storage._cache, "_timer", lambda: now[0])
    for name in ("a", "b"):
        storage.save(SessionInfo(client=None, session=types.SimpleNamespace(id=name)))
    now[0] += 60
    storage.save(SessionInfo(client=None, session=types.SimpleNamespace(id="c")))
    now[0] += 90  # a and b expired, c not
    assert storage.get("a") is None and len(storage._cache._data) == 3  # expired, but still held
    assert internals.drop_expired_sessions(storage) == 2
    assert list(storage._cache._data) == ["c"]
    assert internals.drop_expired_sessions(storage) == 0
    assert internals.drop_expired_sessions() is None  # no running server here
