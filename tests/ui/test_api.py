"""The read-only JSON API (ui/api.py, ui/api_answers.py) on the shipped data/, through Starlette's TestClient.

Numbers: every view's default condition and a sample of shared links give the numbers of
``python -m evalcore leaderboard --format json`` (a separate process: the store opened and asked by the CLI,
not the dashboard's cached answers), within the CLI's six printed decimals; a system's task scores are its
board row's; rank flips are checked against a brute-force Kendall τ-b and pair enumeration over the CLI's
scores at both precisions. Hostile parameters (the URL screening's cases) give JSON errors with 400, never the
value, never a traceback or a 500; other methods 405; unknown paths under /api/ 404 in JSON; the server's path
prefix is honoured. Reproduce: ``python -m pytest tests/ui/test_api.py -q``.
"""
from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from urllib.parse import urlencode

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from api_numbers import assert_same_board, cli_args, cli_board, close
from ui import api, api_answers, data, rank_flips, sidebar

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
HOSTILE = {  # the URL screening's cases (tests/pages/test_url_state.py)
    "sql": "rar-b'; DROP TABLE query_metrics; --",
    "script": "<script>alert(document.cookie)</script>",
    "huge": "x" * 10_000,
    "unicode": "rar\u202eb\u0000",
    "markdown": "[click](javascript:alert(1))",
}


@pytest.fixture(scope="module")
def client():
    import os

    before = os.environ.get("TIEBREAK_DATA")
    os.environ["TIEBREAK_DATA"] = str(DATA)
    data.clear_answers()
    yield TestClient(Starlette(routes=api.ROUTES), raise_server_exceptions=False)
    data.clear_answers()
    if before is None:
        os.environ.pop("TIEBREAK_DATA", None)
    else:
        os.environ["TIEBREAK_DATA"] = before


def get(client, endpoint: str, params=(), status: int = 200) -> dict:
    response = client.get(f"/api/v1/{endpoint}", params=list(params.items()) if isinstance(params, dict) else params)
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"] == "application/json"
    return response.json()


# ------------------------------------------------------------------------------------ same numbers as the CLI
NEEDS = {  # each view's need (pages/*.py NEED); the Leaderboard has none
    "Leaderboard": None,
    "Ties & precision": sidebar.Need("per-query results", sidebar.rows_with_query_data, ignores=("precision",)),
    "Rank flips": rank_flips.NEED,
    "Instructions": sidebar.Need("both", sidebar.rows_with_both_instructions),
    "MCR vs full": sidebar.Need("both", sidebar.rows_with_both_settings),
    "Compare": sidebar.Need("two", sidebar.rows_with_two_systems_with_query_data, soft=True),
}


def default_links() -> dict[str, dict]:
    """Each view's default condition (the sidebar with every control at its default) as Leaderboard keys."""
    from evalcore.store import Store

    store = Store(DATA)
    facets, coverage = store.facets(), store.coverage()
    links = {}
    for view, need in NEEDS.items():
        cond = sidebar.choose_view_condition(facets, sidebar.by_default, need, coverage).cond
        links[view] = {"bench": cond.benchmark, "setting": cond.setting, "metric": cond.metric,
                       "instr": {None: "any", False: "without", True: "with"}[cond.instruction],
                       "prec": cond.precision, "ties": cond.tie_policy}
    return links


@pytest.fixture(scope="module")
def view_defaults():
    return default_links()


SHARED_LINKS = [  # links a visitor could copy from the Leaderboard
    {},
    {"bench": "r2med"},
    {"bench": "r2med", "setting": "full", "metric": "ndcg@10", "instr": "with", "prec": "fp32", "sort": "g"},
    {"bench": "rar-b", "setting": "mcr", "metric": "p@1", "instr": "without", "prec": "bf16"},
    {"bench": "rar-b", "setting": "full-pooled", "metric": "ndcg@10", "instr": "with", "prec": "fp32",
     "lens": "tasks", "ranks": "simultaneous", "level": "0.9"},
    {"bench": "rar-b", "setting": "full", "metric": "mrr@10", "instr": "without", "ties": "input-order",
     "sort": "mean"},
]


@pytest.mark.parametrize("view", list(NEEDS))
def test_every_views_default_condition_is_the_clis(client, view_defaults, view):
    link = view_defaults[view]
    assert_same_board(get(client, "leaderboard", link), cli_board(DATA, cli_args(link)))


@pytest.mark.parametrize("link", SHARED_LINKS, ids=lambda link: urlencode(link) or "no-parameters")
def test_shared_links_give_the_clis_numbers(client, link):
    answer = get(client, "leaderboard", link)
    assert_same_board(answer, cli_board(DATA, cli_args(link)))
    for key, value in link.items():  # the answer names the question it answers in the link's keys
        assert answer["api"]["params"][key] == value


def test_a_filtered_common_task_link_is_the_clis_with_those_systems(client):
    link = {"bench": "rar-b", "setting": "full", "metric": "ndcg@10", "instr": "any", "prec": "fp32",
            "q": "e5", "common": "1", "ranks": "simultaneous"}
    answer = get(client, "leaderboard", link)
    names = [r["system"] for r in answer["ranked"] + answer["incomplete"]]
    assert len(names) >= 2 and all("e5" in name.lower() for name in names)
    cli = cli_board(DATA, cli_args(link) + [part for name in names for part in ("--system", name)])
    assert_same_board(answer, cli)
    assert answer["common_tasks"] == cli["common_tasks"]


def test_pinned_rows_ranked_on_common_tasks_are_the_clis_with_those_systems(client):
    board = get(client, "leaderboard", {"bench": "rar-b", "setting": "full", "metric": "ndcg@10"})
    pins = [board["incomplete"][0]["system"], board["ranked"][0]["system"], board["ranked"][5]["system"]]
    link = {"bench": "rar-b", "setting": "full", "metric": "ndcg@10", "common": "1"}
    answer = get(client, "leaderboard", [*link.items(), *(("pin", name) for name in pins)])
    assert sorted(r["system"] for r in answer["ranked"] + answer["incomplete"]) == sorted(pins)
    assert_same_board(answer, cli_board(DATA, cli_args(link) + [p for name in pins for p in ("--system", name)]))
    assert answer["api"]["params"]["pin"] == pins
    unpinned = get(client, "leaderboard", [("pin", pins[0]), ("pin", pins[1])])  # without common: the whole board
    assert len(unpinned["ranked"]) == len(board["ranked"])


def test_borda_order_is_the_pages(client):
    answer = get(client, "leaderboard", {"sort": "borda"})
    points = [row["borda"] for row in answer["ranked"]]
    assert points == sorted(points, reverse=True) and answer["order"] == "borda"


def test_a_systems_task_scores_are_its_board_row(client):
    link = {"bench": "rar-b", "setting": "full-pooled", "metric": "ndcg@10", "instr": "without", "prec": "bf16"}
    cli = cli_board(DATA, cli_args(link))
    row = cli["ranked"][-1]
    answer = get(client, "system", {**link, "system": row["system"]})
    assert answer["system"] == row["system"] and answer["incomplete"] is None
    assert [t["task"] for t in answer["tasks"]] == sorted(cli["tasks"])
    for task in answer["tasks"]:
        assert close(task["value"], row[task["task"]]), task
        assert task["min"] <= task["expected"] <= task["max"]  # per-query rows: the tie range holds the expectation
    assert all(close(answer["row"][k], v) for k, v in row.items())


def kendall_tau_b(xs: list[float], ys: list[float]) -> float:
    """Brute force over every pair: (concordant − discordant) / sqrt((n0 − ties in x)(n0 − ties in y))."""
    concordant = discordant = tied_x = tied_y = 0
    for i, j in itertools.combinations(range(len(xs)), 2):
        dx, dy = xs[i] - xs[j], ys[i] - ys[j]
        tied_x += dx == 0
        tied_y += dy == 0
        if dx * dy > 0:
            concordant += 1
        elif dx * dy < 0:
            discordant += 1
    n0 = len(xs) * (len(xs) - 1) // 2
    return (concordant - discordant) / math.sqrt((n0 - tied_x) * (n0 - tied_y))


def test_rank_flips_are_the_clis_scores_at_both_precisions(client):
    link = {"bench": "rar-b", "setting": "mcr", "metric": "p@1", "instr": "without", "flip_a": "fp32",
            "flip_b": "bf16"}
    answer = get(client, "rank-flips", link)
    base = {k: v for k, v in link.items() if not k.startswith("flip")}
    boards = {p: {r["system"]: r for r in cli_board(DATA, cli_args({**base, "prec": p}))["ranked"]}
              for p in ("fp32", "bf16")}
    ranks = answer["ranks"]
    assert len(ranks) >= 3 and answer["ranked_by"] == "G"
    for row in ranks:  # every board task is shared by both precisions here: G over them is each board's G
        assert close(row["G_a"], boards["fp32"][row["system"]]["G"])
        assert close(row["G_b"], boards["bf16"][row["system"]]["G"])
    g_a, g_b = [r["G_a"] for r in ranks], [r["G_b"] for r in ranks]
    assert math.isclose(answer["kendall_tau_b"], kendall_tau_b(g_a, g_b), abs_tol=1e-9)
    flipped = {frozenset((x["system"], y["system"])) for x, y in itertools.combinations(ranks, 2)
               if (x["G_a"] - y["G_a"]) * (x["G_b"] - y["G_b"]) < 0}
    assert {frozenset((p["system_1"], p["system_2"])) for p in answer["flipped_pairs"]} == flipped


def test_conditions_are_the_stores(client):
    from evalcore.store import Store

    answer = get(client, "conditions")
    table = Store(DATA).facets()["conditions"]
    assert len(answer["conditions"]) == len(table)
    assert set(answer["benchmarks"]) == set(table["benchmark"])
    assert {(c["benchmark"], c["setting"], c["metric"], c["precision"]) for c in answer["conditions"]} == \
        set(zip(table["benchmark"], table["setting"], table["metric"], table["precision"]))


# ------------------------------------------------------------------------------------ hostile parameters
def assert_refused(response, value: str = "", status: int = 400) -> dict:
    assert response.status_code == status, response.text[:300]
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["error"] and body["notices"]
    assert "Traceback" not in response.text
    if value:
        assert value not in response.text and value not in json.dumps(body, ensure_ascii=False)
    return body


@pytest.mark.parametrize("key", ["bench", "metric", "setting", "instr", "prec", "ties", "q", "family", "size_min",
                                 "open", "sort", "mean", "lens", "ranks", "level", "common", "chart",
                                 "pin"])
@pytest.mark.parametrize("kind", list(HOSTILE))
def test_hostile_values_are_json_errors(client, key, kind):
    value = HOSTILE[kind]
    body = assert_refused(client.get("/api/v1/leaderboard", params={key: value}), value)
    assert any(f"`{key}`" in notice for notice in body["notices"])


@pytest.mark.parametrize("endpoint", ["system", "rank-flips"])
@pytest.mark.parametrize("kind", list(HOSTILE))
def test_hostile_values_at_the_other_endpoints(client, endpoint, kind):
    value = HOSTILE[kind]
    key = "system" if endpoint == "system" else "flip_a"
    assert_refused(client.get(f"/api/v1/{endpoint}", params={key: value}), value,
                   status=404 if kind in ("sql", "script", "markdown") and endpoint == "system" else 400)


def test_unknown_repeated_and_too_many_keys_are_refused(client):
    body = assert_refused(client.get("/api/v1/leaderboard", params=[("bench", "rar-b"), ("bench", "r2med"),
                                                                    ("evil", "1"), ("<img src=x>", "2")]), "<img")
    assert any(n.startswith("`bench`") and "2 times" in n for n in body["notices"])
    assert body["refused"] == ["bench", "evil", "%3Cimg%20src%3Dx%3E"]  # every bad key, the odd one encoded
    assert "`evil`" in body["error"] and "`%3Cimg%20src%3Dx%3E`" in body["error"]
    assert_refused(client.get("/api/v1/leaderboard", params={"family": ["e5"] * 9}))
    assert_refused(client.get("/api/v1/leaderboard", params={f"k{i}": "1" for i in range(100)}))
    assert_refused(client.get("/api/v1/leaderboard", params={"flip_a": "fp32"}))  # another view's key
    for gone in ("seed", "resamples"):  # nothing is resampled: an old link's keys are named, not ignored silently
        body = assert_refused(client.get("/api/v1/leaderboard", params={gone: "7"}))
        assert any(f"`{gone}`" in n for n in body["notices"])
    assert_refused(client.get("/api/v1/conditions", params={"bench": "rar-b"}))
    assert_refused(client.get("/api/v1/leaderboard?" + "a" * (api.MAX_QUERY_BYTES + 1)))
    assert_refused(client.get("/api/v1/leaderboard?bench=%ff%fe&metric=%00"))
    assert_refused(client.get("/api/v1/system"))  # no system named
    assert_refused(client.get("/api/v1/system", params=[("system", "a"), ("system", "b")]))


def test_values_the_data_do_not_offer_are_refused_with_the_choices(client):
    body = assert_refused(client.get("/api/v1/leaderboard", params={"bench": "r2med", "setting": "mcr"}))
    assert "full" in body["error"]  # the setting R2MED has
    assert_refused(client.get("/api/v1/leaderboard", params={"family": "no-such-family"}))
    assert_refused(client.get("/api/v1/rank-flips", params={"flip_a": "bf16", "flip_b": "bf16"}))
    assert_refused(client.get("/api/v1/system", params={"system": "no such system"}), status=404)


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("path", ["/api/v1/leaderboard", "/api/v1/conditions", "/api/anything"])
def test_only_get_and_head(client, method, path):
    body = assert_refused(client.request(method, path), status=405)
    assert "GET" in body["error"]
    assert client.request(method, path).headers["allow"] == "GET, HEAD, OPTIONS"
    options = client.options(path)  # a question about the methods (or a CORS preflight): answered, no body
    assert options.status_code == 204 and options.content == b"" and options.headers["allow"] == "GET, HEAD, OPTIONS"


def test_head_gives_the_get_headers_without_a_body(client):
    for encoding in ("identity", "gzip"):
        plain = {"Accept-Encoding": encoding}
        whole = client.get("/api/v1/conditions", headers=plain)
        head = client.head("/api/v1/conditions", headers=plain)
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-length"] == whole.headers["content-length"]
        assert head.headers.get("content-encoding") == whole.headers.get("content-encoding")
        assert head.headers["etag"] == whole.headers["etag"]
    assert int(client.head("/api/v1/conditions", headers={"Accept-Encoding": "identity"}).headers["content-length"]) \
        == len(whole.content)
    assert whole.headers["cache-control"].startswith("public, max-age=")


@pytest.mark.parametrize("path", ["/api", "/api/", "/api/v1", "/api/v1/", "/api/v1/nope", "/api/v2/leaderboard",
                                  "/api/v1/leaderboard/extra", "/api/v1/..%2f..%2fetc%2fpasswd"])
def test_other_paths_under_api_are_json_404s(client, path):
    assert_refused(client.get(path), status=404)


def test_answers_hold_no_nan_and_name_their_question(client):
    response = client.get("/api/v1/leaderboard", params={"bench": "rar-b", "setting": "full-pooled",
                                                         "metric": "ndcg@10", "instr": "with"})
    assert "NaN" not in response.text and "Infinity" not in response.text
    meta = response.json()["api"]
    assert meta["endpoint"] == "leaderboard" and meta["params"]["prec"] == "fp32" and meta["data_fingerprint"]


def test_the_server_path_prefix(client, monkeypatch):
    monkeypatch.setattr(api, "base_path", lambda: "/tiebreak")
    assert client.get("/tiebreak/api/v1/conditions").status_code == 200
    assert_refused(client.get("/tiebreak/api/v1/nope"), status=404)
    assert client.get("/api/v1/conditions").status_code == 404  # outside the prefix: not the API's


def test_a_failure_of_the_server_is_a_json_500_without_a_traceback(client, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("secret detail")

    monkeypatch.setattr(api_answers, "answer", broken)
    response = client.get("/api/v1/leaderboard")
    body = assert_refused(response, "secret detail", status=500)
    assert "incident" in body["error"]


@pytest.mark.parametrize("page, endpoint, expected", [
    ("http://host:8080/tiebreak/", "leaderboard", "http://host:8080/tiebreak/api/v1/leaderboard?bench=rar-b"),
    ("http://host:8080/tiebreak/rank-flips", "rank-flips", "http://host:8080/tiebreak/api/v1/rank-flips?bench=rar-b"),
    ("http://localhost:8501/", "leaderboard", "http://localhost:8501/api/v1/leaderboard?bench=rar-b"),
])
def test_the_api_url_beside_a_share_link(page, endpoint, expected):
    assert api.api_url(page, {"bench": "rar-b"}, endpoint) == expected
