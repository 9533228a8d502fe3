"""Coverage, widths and false-positive rates of the uncertainty engine (``evalcore.uncertainty``) by simulation, on
more boards than the tests run: the tables behind docs/DESIGN.md § Uncertainty, printed as markdown.

    nice -n 10 python scripts/uncertainty_coverage.py [--scale 1.0] [--only SECTION ...]

Sections (``--only``; default all), each a table with its Monte Carlo standard error:

- ``rows``: the tasks lens' row intervals (bootstrap-t over tasks, as shipped) beside the plain t interval
  θ̂ ± t_(T−1)·se recomputed from the same values — T = 5, 8, 17; G and mean; task interaction σ = 0.3 and 1.0;
  coverage of the population aggregate, mean over systems and the worst system, widths as shown (clipped to [0, 1]).
- ``tasks``: the tasks lens' rank sets (marginal, simultaneous) at T = 5, 8, 17, with the mean widths beside the
  csranks max-t reference (tests/uncertainty/csranks_reference.py) on the first boards.
- ``queries``: the queries lens' rank sets and intervals, published / per-query / mixed rows, 0/1 and graded
  values, with the real query counts (data/query_counts.json) at T = 5, 8, 17, beside csranks.
- ``null``: the family-wise rate of "some adjacent pair differs" when the systems are equal (complete null: 2, 3,
  12 systems) and for one exact tie among separated systems (partial null), both lenses.
- ``near-zero``: the queries lens under G with a task whose mean is near 0 (its failure case): coverage per
  system, how often a row leaves the model (a task mean of exactly 0), coverage of the rows that stay.
- ``bound``: the bound's per-task interval against the per-query percentile bootstrap on every shipped per-query
  row: 5,000 resamples, and 100,000 for the rows not clearly inside after them (the test uses 2,000).

The models, the truth and the coverage rules are tests/uncertainty/simulation.py's (imported from there, as the
tests do); ``--scale`` multiplies every number of boards (0.05 for a quick look). Every board is drawn from a
fixed seed: the same command prints the same tables.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "uncertainty")]

import bootstrap_reference  # noqa: E402
import simulation as sim  # noqa: E402
from evalcore.uncertainty import intervals, queries_lens, separability, tasks_lens  # noqa: E402

SECTIONS = ("rows", "tasks", "queries", "null", "near-zero", "bound")
SPREAD = (0, 0.05, 0.1, 0.2, 0.3, 0.3, 0.5, 0.6, 0.8, 1.0, 1.05, 1.5)   # the tests' boards: near-ties, a tie
CLOSE = tuple(np.linspace(0, 0.6, 15))
THETA_Q = (0, 0.02, 0.05, 0.1, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)
REFERENCE_DRAWS = 1000


def boards(n: int, scale: float) -> int:
    return max(10, int(round(n * scale)))


def fmt(value: float, digits: int = 3) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def se_note(p: float, n: int) -> str:
    return f"Monte Carlo SE of a coverage near {p}: {sim.monte_carlo_se(p, n):.4f} ({n} boards)"


# -- sections ---------------------------------------------------------------------------------------------------
def section_rows(scale: float) -> str:
    """Tasks lens, row intervals: bootstrap-t (shipped) beside the t interval."""
    out, n_used = [], {}
    for n_tasks in (5, 8, 17):
        n = boards(3000 if n_tasks == 5 else 600, scale)
        n_used[n_tasks] = n
        for aggregate in ("G", "mean"):
            for sigma in (0.3, 1.0):
                found = sim.row_intervals(sim.TasksModel(SPREAD, sigma, aggregate), n_tasks, n, seed=n_tasks)
                close = found.theta <= 0.6
                cells = [n_tasks, aggregate, sigma]
                for method in sim.ROW_METHODS:
                    s = found.summary(method)
                    per_system = found.inside[method].mean(axis=0)
                    cells += [f"{fmt(s['mean'])} / {fmt(s['worst'])} (θ={s['worst_theta']:g})",
                              fmt(per_system[close].min()), f"{fmt(s['width'])} / {fmt(s['median_width'])}"]
                out.append(cells)
    header = ["T", "aggregate", "σ", "bootstrap-t: mean / worst system", "worst, θ ≤ 0.6",
              "width mean / median", "t interval: mean / worst system", "worst, θ ≤ 0.6", "width mean / median"]
    return (table(header, out) + "\n\nBoards of 12 systems θ = " + ", ".join(f"{t:g}" for t in SPREAD)
            + " (logistic task model, τ ~ N(0, 1), interaction σ); the truth is the population aggregate (G on its "
              "own scale). " + "; ".join(f"T = {t}: {n} boards" for t, n in n_used.items())
            + f"; per-system SE ≈ {sim.monte_carlo_se(0.95, n_used[8]):.4f} ({n_used[8]} boards), "
              f"{sim.monte_carlo_se(0.95, n_used[5]):.4f} ({n_used[5]}). Widths on the aggregate's scale, clipped to "
              "[0, 1] as shown for a metric bounded by one.")


def section_tasks(scale: float) -> str:
    """Tasks lens, rank sets: coverage per kind, widths beside csranks."""
    out = []
    n, n_ref = boards(400, scale), boards(40, scale)
    for n_tasks in (5, 8, 17):
        for aggregate in ("G", "mean"):
            for label, theta, sigma in (("12 spread, σ=0.3", SPREAD, 0.3), ("15 close, σ=1.0", CLOSE, 1.0)):
                found = sim.simulate_tasks(sim.TasksModel(theta, sigma, aggregate), n_tasks, n, seed=n_tasks,
                                           reference_draws=REFERENCE_DRAWS, reference_boards=n_ref,
                                           with_intervals=False)
                marginal = found["engine", "marginal"].summary()
                simultaneous = found["engine", "simultaneous"].summary()
                widths = [np.mean(found["engine", kind].widths[:n_ref]) for kind in sim.KINDS]
                reference = [found["csranks", kind].summary() for kind in sim.KINDS]
                out.append([n_tasks, aggregate, label, f"{fmt(marginal['mean'])} / {fmt(marginal['worst'])}",
                            fmt(simultaneous["joint"]), f"{fmt(widths[0], 2)} / {fmt(widths[1], 2)}",
                            f"{fmt(reference[0]['width'], 2)} / {fmt(reference[1]['width'], 2)}",
                            f"{fmt(reference[0]['worst'])} / {fmt(reference[1]['joint'])}"])
    header = ["T", "aggregate", "board", "marginal: mean / worst system", "simultaneous: joint",
              f"width marg. / simul. (first {n_ref})", "csranks width marg. / simul.",
              "csranks marg. worst / simul. joint"]
    return (table(header, out) + f"\n\n{n} boards each ({se_note(0.95, n)}); csranks max-t "
            f"({REFERENCE_DRAWS} normal draws on the plug-in covariance, step-down) on the first {n_ref} boards, "
            "widths compared on those boards. Width = mean rank-set size (ranks).")


def query_counts() -> dict:
    data = json.loads((REPO / "data" / "query_counts.json").read_text(encoding="utf-8"))["benchmarks"]
    return {"R2MED": tuple(e["queries"] for e in data["r2med"]["full"].values()),
            "MCR": tuple(e["queries"] for e in data["rar-b"]["mcr"].values()),
            "FULL": tuple(e["queries"] for e in data["rar-b"]["full"].values())}


def queries_models() -> list[tuple[str, sim.QueriesModel, int]]:
    counts = query_counts()
    tau = np.random.default_rng(11)  # the tests' task shifts (tests/uncertainty/test_queries_lens_coverage.py)
    r2med_graded = tuple(tau.normal(-1.2, 0.5, 8))
    mcr = tuple(tau.normal(0.0, 0.5, 8))
    full_graded = tuple(tau.normal(-1.5, 1.0, 17))
    r2med_five = tuple(tau.normal(-0.5, 0.5, 5))
    full_binary = tuple(np.random.default_rng(12).normal(-0.5, 1.0, 17))
    return [
        ("R2MED counts (first 5), 0/1, mean", sim.QueriesModel(THETA_Q, r2med_five, counts["R2MED"][:5], "bernoulli",
                                                                "mean"), 5),
        ("R2MED counts (first 5), graded, G", sim.QueriesModel(THETA_Q, r2med_five, counts["R2MED"][:5], "beta", "G"),
         5),
        ("R2MED counts, graded, mean", sim.QueriesModel(THETA_Q, r2med_graded, counts["R2MED"], "beta", "mean"), 8),
        ("MCR counts, 0/1, G", sim.QueriesModel(THETA_Q, mcr, counts["MCR"], "bernoulli", "G"), 8),
        ("RAR-b full counts, graded, G", sim.QueriesModel(THETA_Q, full_graded, counts["FULL"], "beta", "G"), 17),
        ("RAR-b full counts, 0/1, mean", sim.QueriesModel(THETA_Q, full_binary, counts["FULL"], "bernoulli", "mean"),
         17),
    ]


def section_queries(scale: float) -> str:
    """Queries lens: rank sets and intervals per kind, rows and values, widths beside csranks."""
    out = []
    for label, model, n_tasks in queries_models():
        n = boards(60 if n_tasks == 17 else 200, scale)
        n_ref = boards(20 if n_tasks == 17 else 30, scale)
        for rows in ("published", "per query", "mixed"):
            found = sim.simulate_queries(model, rows, n, seed=len(label), reference_draws=REFERENCE_DRAWS,
                                         reference_boards=n_ref)
            marginal = found["engine", "marginal"].summary()
            simultaneous = found["engine", "simultaneous"].summary()
            widths = [np.mean(found["engine", kind].widths[:n_ref]) for kind in sim.KINDS]
            versus = "–"
            if found["csranks", "marginal"].boards:
                reference = [found["csranks", kind].summary() for kind in sim.KINDS]
                versus = f"{fmt(reference[0]['width'], 2)} / {fmt(reference[1]['width'], 2)}"
            out.append([label, n_tasks, rows, n, f"{fmt(marginal['mean'])} / {fmt(marginal['worst'])}",
                        fmt(simultaneous["joint"]),
                        f"{fmt(marginal['interval_mean'])} / {fmt(marginal['interval_worst'])}",
                        f"{fmt(widths[0], 2)} / {fmt(widths[1], 2)}", versus])
    header = ["board", "T", "rows", "boards", "marginal: mean / worst", "simultaneous: joint",
              "interval: mean / worst", "width marg. / simul. (first boards)", "csranks width marg. / simul."]
    return (table(header, out) + "\n\n12 systems (θ = " + ", ".join(f"{t:g}" for t in THETA_Q) + "; a tie at 0.1); "
            "per-query values 0/1 (Bernoulli) or graded (Beta, κ = 2) around logistic(θ + τ_t + δ_q + η_iq); the "
            "truth is the population task means aggregated over these tasks. Rows: published = task means only "
            "(the bound), per query = every row's values, mixed = every other row's. csranks (normal draws on the "
            "plug-in covariance; no reference for mixed rows) on the first 20 (T = 17) or 30 boards. "
            + f"Monte Carlo SE of a coverage near 0.95: {sim.monte_carlo_se(0.95, boards(200, scale)):.4f} "
              f"({boards(200, scale)} boards), {sim.monte_carlo_se(0.95, boards(60, scale)):.4f} "
              f"({boards(60, scale)}).")


def _tasks_draw(model: sim.TasksModel, n_tasks: int):
    return lambda rng: tasks_lens.estimates(model.draw(n_tasks, rng), model.aggregate)


def _queries_draw(model: sim.QueriesModel, rows: str):
    return lambda rng: sim.queries_board(model, model.draw(rng), rows, reference=False)[0]


def _tied_pair_rate(draw, tied: set, n: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    wrong = 0
    for _ in range(n):
        est = draw(rng)
        pairs = separability.adjacent_pairs(est, np.argsort(-est.points, kind="stable"), 1 - sim.LEVEL)
        wrong += any(differ and {int(a), int(b)} == tied
                     for a, b, differ in zip(pairs.first, pairs.second, pairs.differ))
    return wrong / n


def section_null(scale: float) -> str:
    """Adjacent pairs under the null, both lenses."""
    n = boards(2000, scale)
    out = []
    counts = (100, 300, 1000, 150, 120, 500, 80, 200)  # the test's mixed query counts
    for n_tasks, aggregate in ((5, "G"), (8, "mean"), (17, "G")):
        for systems in (2, 3, 12):
            model = sim.TasksModel((0.3,) * systems, 0.5, aggregate)
            rate, mean = sim.null_adjacent_rate(_tasks_draw(model, n_tasks), n, seed=systems * 100 + n_tasks + 7)
            out.append(["tasks", f"{systems} equal systems", f"T={n_tasks}, {aggregate}, σ=0.5", fmt(rate),
                        fmt(mean)])
    for rows in ("published", "per query"):
        for systems in (2, 3, 12):
            model = sim.QueriesModel((0.2,) * systems, tuple(np.linspace(-1, 1, 8)), counts, "bernoulli", "mean")
            rate, mean = sim.null_adjacent_rate(_queries_draw(model, rows), n, seed=systems + 7)
            out.append(["queries", f"{systems} equal systems", f"T=8, 0/1, mean, {rows}", fmt(rate), fmt(mean)])
    separated = (3.0, 2.0, 1.0, 1.0, 0.0, -1.0)
    for n_tasks in (5, 8, 17):
        rate = _tied_pair_rate(_tasks_draw(sim.TasksModel(separated, 0.3, "mean"), n_tasks), {2, 3}, n, seed=n_tasks)
        out.append(["tasks", "one tie among 6 separated systems", f"T={n_tasks}, mean, σ=0.3", fmt(rate), "–"])
    model = sim.QueriesModel((2.0, 1.0, 0.3, 0.3, -0.5, -1.5), tuple(np.linspace(-0.5, 0.5, 8)), (500,) * 8,
                             "bernoulli", "mean")
    for rows in ("published", "per query"):
        rate = _tied_pair_rate(_queries_draw(model, rows), {2, 3}, n, seed=3)
        out.append(["queries", "one tie among 6 separated systems", f"T=8 × 500 queries, 0/1, mean, {rows}",
                    fmt(rate), "–"])
    header = ["lens", "null", "board", "rate of boards with a pair of equal systems said to differ",
              "mean number said to differ"]
    return (table(header, out) + f"\n\n{n} boards each; α = 0.05; "
            f"Monte Carlo SE of a rate near 0.05: {sim.monte_carlo_se(0.05, n):.4f}. The board's order is by the "
            "same data (as on the Leaderboard).")


def section_near_zero(scale: float) -> str:
    """Queries lens under G with a task near 0: where it fails and why."""
    n = boards(600, scale)
    out = []
    for mu0 in (0.005, 0.01, 0.02, 0.05):
        for n_low in (100, 1000):
            for values in ("bernoulli", "beta"):
                model = sim.near_zero_model(mu0, n_low, values)
                for rows in ("published", "per query"):
                    s = sim.simulate_near_zero(model, rows, n, seed=1).summary()
                    span = lambda a: f"{fmt(np.nanmin(a))}–{fmt(np.nanmax(a))}"  # noqa: E731
                    out.append([mu0, n_low, "0/1" if values == "bernoulli" else "graded", rows, span(s["coverage"]),
                                span(s["excluded"]), span(s["coverage_included"]), span(s["rank_coverage"])])
    header = ["μ₀ (system 0 on the low task)", "n (its queries)", "values", "rows",
              "interval coverage (range over the 4 systems)", "share of boards with a task mean of 0 (row left out)",
              "coverage of the rows left in", "marginal rank-set coverage"]
    return (table(header, out) + "\n\n4 systems (θ = 0, 0.3, 0.6, 1) ranked by G over 8 tasks: the low task (n "
            "queries) shifted so that system 0's population mean is μ₀ (the others' a little higher), seven tasks "
            f"of 500 queries with means 0.5–0.7. {n} boards each ({se_note(0.95, n)}); claimed: 0.95.")


def _excess(rows, resamples: int):
    """Each row's reach beyond the bound's per-task interval and the Monte Carlo SE of its resampled ends, in
    units of 1/n."""
    z = intervals.quantile(bootstrap_reference.LEVEL, None)
    n = rows["n"].to_numpy(dtype=np.float64)
    half = z * np.sqrt(queries_lens.bhatia_davis_variance(rows["x"].to_numpy(), n))
    rows = rows.assign(excess=np.maximum(rows["x"] - half - rows["boot_lo"], rows["boot_hi"] - rows["x"] - half) * n)
    resampled = (rows["how"] == "resampled").to_numpy()
    return rows.assign(mc_se=np.where(resampled, bootstrap_reference.mc_se(resamples) * rows["sd"] * np.sqrt(n), 0.0))


def section_bound(scale: float) -> str:
    """The bound's per-task interval against the per-query percentile bootstrap on every shipped row."""
    first = max(2000, int(round(5_000 * min(scale, 1.0))))
    again = max(first, int(round(100_000 * min(scale, 1.0))))
    rows = _excess(bootstrap_reference.shipped_rows(REPO / "data", first, seed=1), first)
    rows["resamples"] = np.where(rows["how"] == "resampled", first, 0)
    # a resampled row not clearly inside (its excess within 3 SE of 0 for graded metrics, of 1/n for 0/1 ones):
    # once more with many more resamples, so that what is left is the bootstrap's, not the Monte Carlo's
    tolerance = np.where(rows["metric"].isin(bootstrap_reference.ZERO_ONE_METRICS), 1.0, 0.0)
    unclear = (rows["how"] == "resampled") & (rows["excess"] > tolerance - 3 * rows["mc_se"])
    keys = bootstrap_reference.KEYS
    if unclear.any():
        wanted = {(*row, value) for row, value in zip(rows.loc[unclear, keys].itertuples(index=False, name=None),
                                                       rows.loc[unclear, "value"])}
        redone = _excess(bootstrap_reference.shipped_rows(REPO / "data", again, seed=2, only=wanted), again)
        redone["resamples"] = again
        rows = rows.set_index([*keys, "value"])
        redone = redone.set_index([*keys, "value"])
        rows.loc[redone.index, redone.columns] = redone
        rows = rows.reset_index()
    out = []
    for (metric, value, how), group in rows.groupby(["metric", "value", "how"], sort=True):
        worst = group.loc[group["excess"].idxmax()]
        out.append([metric, value, how, len(group), int((group["resamples"] == again).sum()) if how == "resampled"
                    else "–", int((group["excess"] > 0).sum()), fmt(worst["excess"]),
                    fmt(worst["mc_se"]) if how == "resampled" else "0 (exact)"])
    header = ["metric", "value", "bootstrap", "rows", f"of them repeated with {again:,} resamples",
              "rows reaching beyond the bound", "largest excess (units of 1/n; < 0: contained with that slack)",
              "its Monte Carlo SE (1/n)"]
    return (table(header, out) + f"\n\n{len(rows)} shipped per-query rows; exact = binomial quantiles (one or "
            f"two distinct values); resampled = {first:,} multinomial resamples (seed 1), and the rows not "
            f"clearly inside after them ({int(unclear.sum())}: excess within 3 Monte Carlo SE of the tolerance — 0 "
            f"for graded metrics, 1/n for 0/1 ones) once more with {again:,} (seed 2).")


RUNNERS = {"rows": section_rows, "tasks": section_tasks, "queries": section_queries, "null": section_null,
           "near-zero": section_near_zero, "bound": section_bound}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every number of boards (default 1)")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    args = parser.parse_args(argv)
    # the csranks reference takes logs of the plug-in scores as they are (a zero task gives −inf and is skipped)
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="csranks_reference")
    if not args.scale > 0:
        parser.error("--scale must be positive")
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    print(f"# Uncertainty engine by simulation (commit {commit}, scale {args.scale:g}, load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}, {os.cpu_count()} CPUs)\n", flush=True)
    started = time.process_time()
    for name in args.only:
        began = time.process_time()
        text = RUNNERS[name](args.scale)
        print(f"## {name}: {RUNNERS[name].__doc__}\n\n{text}\n\n({time.process_time() - began:.0f} s CPU)\n",
              flush=True)
    print(f"total {time.process_time() - started:.0f} s CPU; load average now "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
