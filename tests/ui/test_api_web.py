"""What web clients expect of the JSON API (ui/api.py), through Starlette's TestClient: gzip when asked,
revalidation (ETag, Last-Modified, 304 before anything is computed), CORS for GET/HEAD with the operator's
switch and preflights, refusals that say so and name every bad key, 503 with Retry-After when the process is
busy, the link keys taken from ui/state.PARAMS, and the parameter ranges and defaults beside the CLI's
(docs/api.md § Parameters). Reproduce: ``python -m pytest tests/ui/test_api_web.py -q``."""
from __future__ import annotations

import argparse
import gzip
import os
import shutil
import time
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from ui import api, api_answers, data, gate, state

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
BOARD = "/api/v1/leaderboard"
IDENTITY = {"Accept-Encoding": "identity"}


def make_client(data_dir: Path, monkeypatch) -> TestClient:
    monkeypatch.setenv("TIEBREAK_DATA", str(data_dir))
    monkeypatch.delenv(api.CORS_VARIABLE, raising=False)
    data.clear_answers()
    return TestClient(Starlette(routes=api.ROUTES), raise_server_exceptions=False)


@pytest.fixture
def client(monkeypatch):
    yield make_client(DATA, monkeypatch)
    data.clear_answers()


# ------------------------------------------------------------------------------------ compression
def test_gzip_when_the_client_asks_and_the_same_json(client):
    plain = client.get(BOARD, headers=IDENTITY)
    packed = client.get(BOARD, headers={"Accept-Encoding": "gzip"}, extensions={})
    assert plain.status_code == packed.status_code == 200
    assert "content-encoding" not in plain.headers and packed.headers["content-encoding"] == "gzip"
    assert int(packed.headers["content-length"]) < int(plain.headers["content-length"]) / 4  # 173 kB → ~25 kB
    assert packed.content == plain.content  # httpx decompresses: the same bytes
    for response in (plain, packed):
        assert "Accept-Encoding" in response.headers["vary"]


@pytest.mark.parametrize("accept, compressed", [
    ("gzip", True), ("deflate, gzip;q=0.5", True), ("*", True), ("br;q=1, *;q=0.1", True),
    ("gzip;q=0", False), ("identity", False), ("", False), ("deflate", False), ("gzip;q=abc", False),
])
def test_accept_encoding_is_read_with_its_weights(client, accept, compressed):
    response = client.get("/api/v1/conditions", headers={"Accept-Encoding": accept})
    assert (response.headers.get("content-encoding") == "gzip") is compressed
    if compressed:
        raw = client.get("/api/v1/conditions", headers={"Accept-Encoding": accept}).read()  # decoded by httpx
        assert raw == client.get("/api/v1/conditions", headers=IDENTITY).content


def test_the_gzip_bytes_are_a_plain_gzip_stream(client):
    """What a client without automatic decoding receives: a gzip member that ``gzip.decompress`` reads."""
    with client.stream("GET", BOARD, headers={"Accept-Encoding": "gzip"}) as response:
        raw = b"".join(response.iter_raw())
    assert gzip.decompress(raw) == client.get(BOARD, headers=IDENTITY).content


def test_a_small_answer_is_not_compressed(client):
    response = client.get("/api/v1/nope", headers={"Accept-Encoding": "gzip"})
    assert response.status_code == 404 and "content-encoding" not in response.headers


# ------------------------------------------------------------------------------------ revalidation
def test_an_answer_carries_validators_and_a_matching_revalidation_is_304(client):
    first = client.get(BOARD)
    tag, modified = first.headers["etag"], first.headers["last-modified"]
    assert tag.startswith('W/"') and parsedate_to_datetime(modified).timestamp() <= time.time()
    again = client.get(BOARD, headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    assert again.headers["cache-control"] == first.headers["cache-control"]
    assert client.get(BOARD, headers={"If-None-Match": f'"other", {tag}'}).status_code == 304  # one of a list
    assert client.get(BOARD, headers={"If-None-Match": tag.removeprefix("W/")}).status_code == 304  # weak match
    assert client.get(BOARD, headers={"If-None-Match": "*"}).status_code == 304
    assert client.get(BOARD, headers={"If-None-Match": '"something else"'}).status_code == 200
    assert client.head(BOARD, headers={"If-None-Match": tag}).status_code == 304
    assert client.get(BOARD, headers={"If-Modified-Since": modified}).status_code == 304
    earlier = formatdate(parsedate_to_datetime(modified).timestamp() - 1, usegmt=True)
    assert client.get(BOARD, headers={"If-Modified-Since": earlier}).status_code == 200
    assert client.get(BOARD, headers={"If-Modified-Since": "not a date"}).status_code == 200
    # If-None-Match decides when both are sent (RFC 9110 § 13.2.2)
    assert client.get(BOARD, headers={"If-None-Match": '"x"', "If-Modified-Since": modified}).status_code == 200


def test_the_same_answer_gzipped_or_not_has_the_same_validator(client):
    assert client.get(BOARD, headers={"Accept-Encoding": "gzip"}).headers["etag"] == \
        client.get(BOARD, headers=IDENTITY).headers["etag"]


def test_a_304_computes_nothing(client, monkeypatch):
    tag = client.get(BOARD, params={"level": "0.9"}).headers["etag"]

    def never(question):
        raise AssertionError("an answer was computed for a current copy")

    monkeypatch.setitem(api_answers.ANSWERS, "leaderboard", never)
    assert client.get(BOARD, params={"level": "0.9"}, headers={"If-None-Match": tag}).status_code == 304


def test_the_etag_names_the_question_the_code_and_the_data(tmp_path, monkeypatch):
    import synthetic_data

    folder = synthetic_data.write_small(tmp_path / "data")
    client = make_client(folder, monkeypatch)
    monkeypatch.setattr(data, "RESCAN_SECONDS", 0.0)
    first = client.get(BOARD)
    assert first.status_code == 200, first.text[:300]
    tag, modified = first.headers["etag"], parsedate_to_datetime(first.headers["last-modified"]).timestamp()
    assert client.get(BOARD).headers["etag"] == tag  # the same question, code and data: the same tag
    assert client.get(BOARD, params={"ranks": "simultaneous"}).headers["etag"] != tag  # another question
    assert client.get(BOARD, params={"ranks": "simultaneous", "level": "0.9"}).headers["etag"] != \
        client.get(BOARD, params={"level": "0.9", "ranks": "simultaneous"}).headers["etag"]  # another URL
    monkeypatch.setattr(api_answers, "CODE_DIGEST", "0" * 64)  # other code
    assert client.get(BOARD).headers["etag"] != tag
    monkeypatch.undo()
    monkeypatch.setenv("TIEBREAK_DATA", str(folder))
    monkeypatch.setattr(data, "RESCAN_SECONDS", 0.0)
    assert client.get(BOARD).headers["etag"] == tag
    later = max(time.time(), modified) + 5
    parquet = next(folder.glob("*.parquet"))
    os.utime(parquet, (later, later))  # a data file rewritten
    changed = client.get(BOARD, headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag
    assert parsedate_to_datetime(changed.headers["last-modified"]).timestamp() >= int(later)
    newest = changed.headers["last-modified"]
    shutil.copy(parquet, tmp_path / "aside.parquet")
    parquet.unlink()  # a file removed: its folder's time moves, so If-Modified-Since does not claim "unchanged"
    os.utime(folder, (later + 5, later + 5))
    gone = client.get(BOARD, headers={"If-Modified-Since": newest})
    assert gone.status_code != 304


# ------------------------------------------------------------------------------------ CORS
ORIGIN = {"Origin": "https://notebooks.example.org"}


@pytest.mark.parametrize("path, status", [(BOARD, 200), ("/api/v1/leaderboard?level=2", 400),
                                          ("/api/v1/nope", 404), ("/api/v1/system", 400)])
def test_cors_on_by_default_for_every_answer_never_with_credentials(client, path, status):
    response = client.get(path, headers=ORIGIN)
    assert response.status_code == status
    assert response.headers["access-control-allow-origin"] == "*"
    assert {"etag", "retry-after"} <= {h.strip().lower() for h in
                                       response.headers["access-control-expose-headers"].split(",")}
    assert "access-control-allow-credentials" not in response.headers
    post = client.post(path, headers=ORIGIN)
    assert post.status_code == 405 and post.headers["access-control-allow-origin"] == "*"


def test_a_preflight_allows_get_head_and_the_conditional_headers(client):
    response = client.options(BOARD, headers={**ORIGIN, "Access-Control-Request-Method": "GET",
                                              "Access-Control-Request-Headers": "if-none-match"})
    assert response.status_code == 204 and response.content == b""
    assert response.headers["access-control-allow-origin"] == "*"
    assert set(response.headers["access-control-allow-methods"].replace(" ", "").split(",")) == {"GET", "HEAD"}
    allowed = {h.strip().lower() for h in response.headers["access-control-allow-headers"].split(",")}
    assert {"if-none-match", "if-modified-since"} <= allowed
    assert int(response.headers["access-control-max-age"]) > 0
    assert "access-control-allow-credentials" not in response.headers
    revalidated = client.get(BOARD, headers={**ORIGIN, "If-None-Match": client.get(BOARD).headers["etag"]})
    assert revalidated.status_code == 304 and revalidated.headers["access-control-allow-origin"] == "*"


def test_the_operator_turns_cors_off(client, monkeypatch):
    monkeypatch.setenv(api.CORS_VARIABLE, "off")
    for response in (client.get(BOARD, headers=ORIGIN), client.get("/api/v1/nope", headers=ORIGIN),
                     client.options(BOARD, headers={**ORIGIN, "Access-Control-Request-Method": "GET"})):
        assert not any(name.startswith("access-control-") for name in response.headers), response.headers
    assert client.get(BOARD, headers=ORIGIN).status_code == 200  # the answer itself is unchanged


def test_the_operator_names_the_origins_allowed(client, monkeypatch):
    monkeypatch.setenv(api.CORS_VARIABLE, "https://lab.example.org, https://notebooks.example.org/")
    allowed = client.get(BOARD, headers=ORIGIN)
    assert allowed.headers["access-control-allow-origin"] == ORIGIN["Origin"]
    assert "Origin" in allowed.headers["vary"] and "Accept-Encoding" in allowed.headers["vary"]
    other = client.get(BOARD, headers={"Origin": "https://elsewhere.example.com"})
    assert "access-control-allow-origin" not in other.headers and "Origin" in other.headers["vary"]


# ------------------------------------------------------------------------------------ refusals
def test_a_refusal_says_so_and_names_every_bad_key(client):
    body = client.get(BOARD, params={f"k{i}": "1" for i in range(200)}).json()
    assert body["error"].startswith("Refused")
    assert body["refused"] == [f"k{i}" for i in range(200)]  # each named, none called unreadable
    assert all(f"`k{i}`" in body["error"] for i in range(200)) and "unreadable" not in body["error"]
    several = client.get(BOARD, params=[("ranks", "all"), ("level", "0.5"), ("sort", "x"), ("chart", "pie")])
    assert several.status_code == 400
    assert sorted(several.json()["refused"]) == ["chart", "level", "ranks", "sort"]  # all at once, not the first
    assert all(f"`{key}`" in several.json()["error"] for key in ("ranks", "level", "sort", "chart"))
    assert "ignor" not in several.text.lower()
    both = client.get(BOARD, params=[("colour", "red"), ("level", "0.8"), ("bench", "nope"), ("q", "<b>"),
                                     ("size_min", "10B"), ("size_max", "1B")])  # both gates' keys in one answer
    assert sorted(both.json()["refused"]) == ["bench", "colour", "level", "q", "size_max", "size_min"]
    flips = client.get("/api/v1/rank-flips", params=[("flip_a", "nope"), ("flip_task", "nope"), ("prec", "x")])
    assert sorted(flips.json()["refused"]) == ["flip_a", "flip_task", "prec"]
    assert client.get("/api/v1/system", params={"level": "0.8"}).json()["refused"] == ["system", "level"]


def test_size_bounds_that_exclude_everything_are_refused_not_ignored(client):
    response = client.get(BOARD, params={"size_min": "10B", "size_max": "1B"})
    assert response.status_code == 400 and response.json()["refused"] == ["size_min", "size_max"]


def test_busy_is_503_with_retry_after(client, monkeypatch):
    def busy(question):
        raise gate.Busy("a board", "queue full", 7, 1, 8)

    monkeypatch.setitem(api_answers.ANSWERS, "leaderboard", busy)
    response = client.get(BOARD, headers=ORIGIN)
    assert response.status_code == 503 and response.headers["retry-after"] == "7"
    assert response.headers["access-control-allow-origin"] == "*"
    assert "busy" in response.json()["error"] and "Traceback" not in response.text

    def out_of_memory(question):
        raise MemoryError

    monkeypatch.setitem(api_answers.ANSWERS, "leaderboard", out_of_memory)
    response = client.get(BOARD)
    assert response.status_code == 503 and int(response.headers["retry-after"]) >= 1

    def data_changed(question):  # new files arrived mid-answer (ui.data.DataChanged): ask again, not a 500
        from ui.data import DataChanged

        raise DataChanged("reloaded")

    monkeypatch.setitem(api_answers.ANSWERS, "leaderboard", data_changed)
    response = client.get(BOARD)
    assert response.status_code == 503 and response.headers["retry-after"] == "1"


# ------------------------------------------------------------------------------------ the link's keys
def test_the_endpoints_take_the_link_keys_of_the_state_table():
    assert api_answers.ENDPOINTS["leaderboard"].keys == state.view_keys("leaderboard")
    assert api_answers.ENDPOINTS["rank-flips"].keys == state.view_keys("rank-flips")
    assert set(state.view_keys("leaderboard")) >= {"bench", "q", "lens", "ranks", "level", "pin"}
    assert "flip_a" not in state.view_keys("leaderboard") and "sort" not in state.view_keys("rank-flips")


def test_every_leaderboard_key_of_the_state_table_is_answered():
    """A key added to the Leaderboard's part of ui/state.PARAMS must be wired into BOARD_CHOICES (the API's copy
    of the page's control), or the API answers 501 for it rather than a board that ignores it."""
    own = [key for key in state.view_keys("leaderboard") if state.PARAMS[key].view == "leaderboard"]
    unwired = [key for key in own if key not in api_answers.BOARD_CHOICES and key not in api_answers.BOARD_OWN]
    assert own and not unwired, (f"{unwired}: give each a line in ui/api_answers.BOARD_CHOICES — the page's "
                                 "options and default, and the ui.data.leaderboard argument it sets")
    assert set(state.view_keys("")) == set(api_answers.CONDITION_KEYS + api_answers.FILTER_KEYS)


def test_a_new_key_reaches_the_api_and_is_never_silently_ignored(client, monkeypatch):
    monkeypatch.setitem(state.PARAMS, "halo", state.Param("halo", "a future key: on | off", view="leaderboard"))
    response = client.get(BOARD, params={"halo": "on"})
    assert response.status_code == 501 and response.json()["refused"] == ["halo"]
    assert client.get("/api/v1/rank-flips", params={"halo": "on"}).status_code == 400  # not that view's key
    monkeypatch.setitem(api_answers.BOARD_CHOICES, "halo", api_answers.Choice(lambda b: ("on", "off"),
                                                                              lambda b: "off"))
    answered = client.get(BOARD, params={"halo": "on"})
    assert answered.status_code == 200 and answered.json()["api"]["params"]["halo"] == "on"
    assert client.get(BOARD, params={"halo": "nope"}).json()["refused"] == ["halo"]


# ------------------------------------------------------------------------------------ beside the CLI
def cli_parser() -> argparse.ArgumentParser:
    from evalcore.commands.leaderboard import add_arguments

    parser = argparse.ArgumentParser(exit_on_error=False)
    add_arguments(parser)
    return parser


@pytest.mark.parametrize("value", ["0.8", "0.5", "0.999"])
def test_the_api_takes_the_pages_levels_where_the_cli_takes_any(client, value):
    """docs/api.md § Parameters: an API URL is a link the page opens with the same numbers, so ``level`` takes
    what the page's control offers (0.9, 0.95, 0.99); the CLI takes any level from 0.5 to below 1."""
    assert cli_parser().parse_args(["--benchmark", "rar-b", "--level", value]).level == float(value)
    refused = client.get(BOARD, params={"level": value})
    assert refused.status_code == 400 and refused.json()["refused"] == ["level"]


@pytest.mark.parametrize("key, values", [("ranks", ("marginal", "simultaneous")), ("lens", ("queries", "tasks"))])
def test_the_other_keys_take_what_the_cli_takes(client, key, values):
    action = next(a for a in cli_parser()._actions if a.dest == key)
    assert tuple(action.choices) == values
    for value in values:
        assert client.get(BOARD, params={key: value}).json()["api"]["params"][key] == value


def test_the_defaults_beside_the_clis(client):
    """docs/api.md § Parameters: the API's absent keys take the page's first-visit values; the CLI's defaults
    differ in the benchmark alone (required there); the metric under MCR is p@1 in both."""
    from evalcore import schema

    cli = cli_parser().parse_args(["--benchmark", "rar-b"])
    answer = client.get(BOARD).json()
    params, uncertainty = answer["api"]["params"], answer["uncertainty"]
    assert cli.metric is None  # resolved from the setting, as the API does
    assert params == {"bench": "rar-b", "setting": cli.setting, "metric": schema.default_metric(cli.setting),
                      "instr": cli.instruction,
                      "prec": cli.precision, "ties": "docid-desc"}
    assert (uncertainty["level"], uncertainty["ranks"]) == (cli.level, cli.ranks)
    assert api_answers.BOARD_CHOICES["lens"].default("rar-b") == cli.lens
    mcr = client.get(BOARD, params={"setting": "mcr"}).json()["api"]["params"]
    assert mcr["metric"] == "p@1" == schema.default_metric("mcr")
