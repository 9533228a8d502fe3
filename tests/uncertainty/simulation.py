"""Simulation harness for the uncertainty engine: boards drawn from models whose truth is known, and what the
engine (``evalcore.uncertainty``) and the csranks reference (``csranks_reference``) say of them.

**Tasks lens model** (as tests/test_rank_sets_coverage.py): system i has quality θ_i; a task draws a difficulty
τ_t ~ N(0, 1) shared by every system and an interaction ε_it ~ N(0, σ²); the task score is
x_it = logistic(θ_i + τ_t + ε_it). The truth is the population aggregate over tasks: E[log x] (G, on the log
scale) or E[x] (mean), a one-dimensional Gaussian integral (θ_i + Z, Z ~ N(0, 1 + σ²)) computed by
Gauss–Hermite quadrature — exactly equal for equal θ, so exact ties stay exact.

**Queries lens model.** The tasks are fixed: task t has a base logit b_it = θ_i + τ_t (τ fixed per scenario).
Query q of task t has a difficulty δ_q ~ N(0, s²) shared by every system (so two systems' per-query scores are
positively correlated) and each system an interaction η_iq ~ N(0, e²); with m_iq = logistic(b_it + δ_q + η_iq),
the per-query value is Bernoulli(m_iq) (a p@1-like metric) or Beta(κ m_iq, κ (1 − m_iq)) (graded in [0, 1], an
nDCG-like metric; mean m_iq). The population task mean is μ_it = E[logistic(b_it + Z)], Z ~ N(0, s² + e²)
(quadrature), and the truth is the board's aggregate of the μ_it over these tasks (log G: mean of log μ_it;
mean: mean of μ_it). A board draws n_t queries per task (the real counts of data/query_counts.json); rows are
"published" (only the task means are handed over: the engine bounds them) or "per query" (the per-query values
are handed over, paired on the queries).

**Coverage.** A system's rank set covers when it contains every rank its true aggregate can take: [best, worst]
of its tie block (an exact tie's rank is any of the block's ranks, and a set claiming one of two tied systems is
above the other is wrong). Marginal sets: per system, and the mean over systems; simultaneous sets: all
systems at once. Intervals: the true aggregate inside [lo, hi] (on the aggregate's own scale: G, not log G).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

import csranks_reference as ref
from evalcore.uncertainty import intervals as engine_intervals
from evalcore.uncertainty import queries_lens, rank_sets, separability, tasks_lens

LEVEL = 0.95
KINDS = ("marginal", "simultaneous")
_NODES, _WEIGHTS = hermegauss(160)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def expit(x):
    return 1.0 / (1.0 + np.exp(-x))


def gaussian_mean(function, centre: np.ndarray, sd: float) -> np.ndarray:
    """E[function(centre + sd·Z)], Z ~ N(0, 1), elementwise in ``centre``, by Gauss–Hermite quadrature."""
    centre = np.asarray(centre, dtype=np.float64)
    return (function(centre[..., None] + sd * _NODES) * _WEIGHTS).sum(axis=-1)


def log_expit(x):
    return -np.logaddexp(0.0, -x)


def true_ranks(truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(best, worst) rank each system's true aggregate can take (rank 1 = largest; a tie block shares them)."""
    best = 1 + (truth[None, :] > truth[:, None]).sum(axis=1)
    worst = len(truth) - (truth[None, :] < truth[:, None]).sum(axis=1)
    return best, worst


# -- the two models -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TasksModel:
    theta: tuple
    sigma: float
    aggregate: str

    def truth(self) -> np.ndarray:
        """The population aggregate on the comparison scale (E[log x] for G, E[x] for the mean)."""
        sd = math.sqrt(1.0 + self.sigma ** 2)
        function = log_expit if self.aggregate == "G" else expit
        return gaussian_mean(function, np.asarray(self.theta), sd)

    def draw(self, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
        theta = np.asarray(self.theta, dtype=np.float64)
        logits = theta[:, None] + rng.normal(0, 1, n_tasks)[None, :] + rng.normal(0, self.sigma,
                                                                                  (len(theta), n_tasks))
        return expit(logits)


@dataclass(frozen=True)
class QueriesModel:
    theta: tuple
    tau: tuple                  # fixed task difficulties (logit shift)
    n_queries: tuple            # per task
    values: str                 # "bernoulli" | "beta"
    aggregate: str
    query_sd: float = 1.0       # s: shared query difficulty
    interaction_sd: float = 0.7  # e: system × query
    kappa: float = 2.0          # Beta concentration

    @property
    def base(self) -> np.ndarray:
        return np.asarray(self.theta, dtype=np.float64)[:, None] + np.asarray(self.tau, dtype=np.float64)[None, :]

    def task_means(self) -> np.ndarray:
        """μ_it, the population mean of the per-query values (S × T)."""
        return gaussian_mean(expit, self.base, math.hypot(self.query_sd, self.interaction_sd))

    def truth(self) -> np.ndarray:
        mu = self.task_means()
        return np.log(mu).mean(axis=1) if self.aggregate == "G" else mu.mean(axis=1)

    def draw(self, rng: np.random.Generator) -> list[np.ndarray]:
        """One board's per-query values: per task, (S × n_t)."""
        base = self.base
        found = []
        for t, n in enumerate(self.n_queries):
            m = expit(base[:, t:t + 1] + rng.normal(0, self.query_sd, n)[None, :]
                      + rng.normal(0, self.interaction_sd, (base.shape[0], n)))
            if self.values == "bernoulli":
                found.append((rng.random(m.shape) < m).astype(np.float64))
            else:
                found.append(rng.beta(self.kappa * m, self.kappa * (1 - m)))
        return found


def per_query_input(per_query: list[np.ndarray], rows: np.ndarray) -> queries_lens.PerQuery:
    """The engine's :class:`PerQuery` for ``rows``, from per-task (S × n_t) arrays."""
    values = np.concatenate([q[rows] for q in per_query], axis=1)
    task = np.concatenate([np.full(q.shape[1], t) for t, q in enumerate(per_query)])
    return queries_lens.PerQuery(rows=np.asarray(rows, dtype=np.int64), values=values, task=task)


# -- what is measured --------------------------------------------------------------------------------------------
@dataclass
class Tally:
    """Running counts over boards for one method and kind."""

    covered: list = field(default_factory=list)   # per board: bool per system (rank set)
    widths: list = field(default_factory=list)    # per board: mean width (ranks)
    inside: list = field(default_factory=list)    # per board: bool per system (interval)

    def add_sets(self, rank_lo, rank_hi, best, worst) -> None:
        self.covered.append((rank_lo <= best) & (worst <= rank_hi))
        self.widths.append(float(np.mean(rank_hi - rank_lo + 1)))

    @property
    def boards(self) -> int:
        return len(self.covered)

    def per_system(self) -> np.ndarray:
        return np.mean(self.covered, axis=0)

    def summary(self) -> dict:
        covered = np.array(self.covered)
        found = {"boards": self.boards, "mean": float(covered.mean()), "worst": float(covered.mean(axis=0).min()),
                 "joint": float(covered.all(axis=1).mean()), "width": float(np.mean(self.widths))}
        if self.inside:
            inside = np.array(self.inside)
            found.update(interval_mean=float(inside.mean()), interval_worst=float(inside.mean(axis=0).min()))
        return found


def monte_carlo_se(p: float, boards: int) -> float:
    """The standard error of a coverage estimated from ``boards`` independent boards."""
    return math.sqrt(max(p * (1 - p), 1e-12) / boards)


def engine_sets(est, kind: str):
    return rank_sets.rank_sets(est, LEVEL, kind)


def engine_interval_inside(est, truth: np.ndarray) -> np.ndarray:
    lo, hi = engine_intervals.intervals(est, LEVEL)
    scale = np.exp(truth) if est.aggregate == "G" else truth
    return (lo <= scale) & (scale <= hi)


def reference_interval_inside(est: ref.Estimates, truth: np.ndarray) -> np.ndarray:
    lo, hi = ref.intervals(est, LEVEL)
    scale = est.to_scale(truth)
    return (lo <= scale) & (scale <= hi)


def simulate_tasks(model: TasksModel, n_tasks: int, boards: int, seed: int = 0, reference_draws: int = 0,
                   reference_boards: int | None = None, with_intervals: bool = True) -> dict:
    """{("engine" | "csranks", kind): Tally} over ``boards`` boards of ``n_tasks`` tasks; the csranks reference
    (normal draws on the plug-in covariance, ``reference_draws`` each step) on the first ``reference_boards``.
    ``with_intervals`` False leaves the row intervals out (their bootstrap-t is most of the cost; the many-board
    check of the intervals is :func:`row_intervals`)."""
    truth = model.truth()
    best, worst = true_ranks(truth)
    rng = np.random.default_rng(seed)
    tallies = {(method, kind): Tally() for method in ("engine", "csranks") for kind in KINDS}
    reference_boards = boards if reference_boards is None else reference_boards
    for board in range(boards):
        scores = model.draw(n_tasks, rng)
        est = tasks_lens.estimates(scores, model.aggregate)
        inside = engine_interval_inside(est, truth) if with_intervals else None
        for kind in KINDS:
            sets = engine_sets(est, kind)
            tallies["engine", kind].add_sets(sets.rank_lo, sets.rank_hi, best, worst)
            if with_intervals:
                tallies["engine", kind].inside.append(inside)
        if reference_draws and board < reference_boards:
            plug_in = ref.tasks_estimates(scores, model.aggregate)
            for kind in KINDS:
                sets = ref.csranks(plug_in.theta, plug_in.sigma, LEVEL, kind == "simultaneous", reference_draws,
                                   seed=board)
                tallies["csranks", kind].add_sets(sets.rank_lo, sets.rank_hi, best, worst)
    return tallies


def queries_board(model: QueriesModel, per_query: list[np.ndarray], rows: str, reference: bool = True):
    """(engine Estimates, reference Estimates, task scores) of one board whose rows are "published" (task means
    only), "per query" (all rows hand over their per-query values) or "mixed" (every other row does); the
    reference is None when not asked for (``reference`` False) and for mixed rows."""
    scores = np.stack([q.mean(axis=1) for q in per_query], axis=1)
    n = np.asarray(model.n_queries, dtype=np.float64)
    size = scores.shape[0]
    if rows == "published":
        est = queries_lens.estimates(scores, n, model.aggregate)
        plug_in = ref.queries_estimates_published(scores, n, model.aggregate, z=2.0) if reference else None
    elif rows == "per query":
        est = queries_lens.estimates(scores, n, model.aggregate, per_query_input(per_query, np.arange(size)))
        plug_in = ref.queries_estimates_per_query(per_query, model.aggregate) if reference else None
    elif rows == "mixed":
        with_values = np.arange(0, size, 2)
        est = queries_lens.estimates(scores, n, model.aggregate, per_query_input(per_query, with_values))
        plug_in = None
    else:
        raise ValueError(rows)
    return est, plug_in, scores


def simulate_queries(model: QueriesModel, rows: str, boards: int, seed: int = 0, reference_draws: int = 0,
                     reference_boards: int | None = None) -> dict:
    """As :func:`simulate_tasks`, for the queries lens with rows ``rows`` (:func:`queries_board`)."""
    truth = model.truth()
    best, worst = true_ranks(truth)
    rng = np.random.default_rng(seed)
    tallies = {(method, kind): Tally() for method in ("engine", "csranks") for kind in KINDS}
    reference_boards = boards if reference_boards is None else reference_boards
    for board in range(boards):
        per_query = model.draw(rng)
        est, plug_in, scores = queries_board(model, per_query, rows,
                                             reference=bool(reference_draws) and board < reference_boards)
        inside = engine_interval_inside(est, truth)
        for kind in KINDS:
            sets = engine_sets(est, kind)
            tallies["engine", kind].add_sets(sets.rank_lo, sets.rank_hi, best, worst)
            tallies["engine", kind].inside.append(inside)
        if reference_draws and plug_in is not None and board < reference_boards \
                and np.isfinite(plug_in.theta).all():
            for kind in KINDS:
                sets = ref.csranks(plug_in.theta, plug_in.sigma, LEVEL, kind == "simultaneous", reference_draws,
                                   seed=board)
                tallies["csranks", kind].add_sets(sets.rank_lo, sets.rank_hi, best, worst)
                tallies["csranks", kind].inside.append(reference_interval_inside(plug_in, truth))
    return tallies


def null_adjacent_rate(draw_estimates, boards: int, seed: int = 0) -> tuple[float, float]:
    """(family-wise rate of "some adjacent pair differs", mean number differing) over ``boards`` boards whose
    systems are all equal: ``draw_estimates(rng)`` gives one board's engine Estimates; the board's order is by
    its points, as on the Leaderboard."""
    rng = np.random.default_rng(seed)
    any_differ, counts = [], []
    for _ in range(boards):
        est = draw_estimates(rng)
        order = np.argsort(-est.points, kind="stable")
        pairs = separability.adjacent_pairs(est, order, 1.0 - LEVEL)
        any_differ.append(pairs.n_differ > 0)
        counts.append(pairs.n_differ)
    return float(np.mean(any_differ)), float(np.mean(counts))


# -- the row intervals of the tasks lens, many boards at once ------------------------------------------------------
@dataclass
class RowIntervals:
    """Per system (columns) over boards (rows): whether each interval holds the truth, and its width, on the
    aggregate's own scale clipped to [0, 1] as the Leaderboard shows it for a metric bounded by one — the engine's
    bootstrap-t and the plain t interval θ̂ ± t_(T−1) s/√T beside it."""

    theta: np.ndarray
    inside: dict     # method -> bool boards × S
    width: dict      # method -> float boards × S

    def summary(self, method: str) -> dict:
        inside, width = self.inside[method], self.width[method]
        per_system = inside.mean(axis=0)
        worst = int(np.argmin(per_system))
        return {"boards": inside.shape[0], "mean": float(inside.mean()), "worst": float(per_system[worst]),
                "worst_theta": float(self.theta[worst]), "width": float(width.mean()),
                "median_width": float(np.median(width))}


ROW_METHODS = ("bootstrap-t", "t")


def row_intervals(model: TasksModel, n_tasks: int, boards: int, seed: int = 0) -> RowIntervals:
    """The tasks lens' row intervals over ``boards`` boards of ``n_tasks`` tasks: the engine's bootstrap-t
    (:func:`evalcore.uncertainty.intervals.bootstrap_t` on every board's rows in one call, then exp for G and the
    clip to [0, 1] — what :func:`~evalcore.uncertainty.intervals.intervals` does for the tasks lens) and the t
    interval recomputed from the same values."""
    truth = model.truth()
    scale = np.exp(truth) if model.aggregate == "G" else truth
    rng = np.random.default_rng(seed)
    size = len(model.theta)
    scores = np.concatenate([model.draw(n_tasks, rng) for _ in range(boards)])        # (boards·S) × T
    values = np.log(scores) if model.aggregate == "G" else scores
    lo, hi = engine_intervals.bootstrap_t(values, LEVEL)
    q = engine_intervals.quantile(LEVEL, n_tasks - 1)
    centre, se = values.mean(axis=1), values.std(axis=1, ddof=1) / math.sqrt(n_tasks)
    found = {"bootstrap-t": (lo, hi), "t": (centre - q * se, centre + q * se)}
    inside, width = {}, {}
    for method, (lo, hi) in found.items():
        with np.errstate(over="ignore"):
            lo, hi = (np.exp(lo), np.exp(hi)) if model.aggregate == "G" else (lo, hi)
        lo, hi = (np.clip(v, 0.0, 1.0).reshape(boards, size) for v in (lo, hi))
        inside[method] = (lo <= scale) & (scale <= hi)
        width[method] = hi - lo
    return RowIntervals(np.asarray(model.theta, dtype=np.float64), inside, width)


# -- the queries lens under G with a task near 0 -------------------------------------------------------------------
NEAR_ZERO_THETA = (0.0, 0.3, 0.6, 1.0)
NEAR_ZERO_OTHER_TASKS = 7
NEAR_ZERO_OTHER_QUERIES = 500


def near_zero_model(mu0: float, n_low: int, values: str) -> QueriesModel:
    """Four systems (θ = 0, 0.3, 0.6, 1), ranked by G over 8 tasks: on the first (``n_low`` queries) system 0's
    population mean is ``mu0`` (the others' a little higher: the same task shift), on the other seven (500 queries
    each) the task shift is 0 (means 0.5–0.7)."""
    sd = math.hypot(1.0, 0.7)  # the model's default query and interaction spread
    lo, hi = -20.0, 5.0
    for _ in range(80):  # the task shift that puts system 0's mean at mu0 (bisection; the mean rises with it)
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gaussian_mean(expit, np.array([mid]), sd)[0] < mu0 else (lo, mid)
    tau = ((lo + hi) / 2,) + (0.0,) * NEAR_ZERO_OTHER_TASKS
    return QueriesModel(NEAR_ZERO_THETA, tau, (n_low,) + (NEAR_ZERO_OTHER_QUERIES,) * NEAR_ZERO_OTHER_TASKS, values,
                        "G")


@dataclass
class NearZero:
    """Per system, over boards: interval covers, the row left the model (a task mean of exactly 0: G = 0, tied at
    the bottom, no interval), and the marginal rank set covers."""

    inside: np.ndarray      # bool boards × S
    excluded: np.ndarray    # bool boards × S
    rank_covered: np.ndarray

    def summary(self) -> dict:
        included = ~self.excluded
        with np.errstate(invalid="ignore"):
            inside_included = (self.inside & included).sum(axis=0) / included.sum(axis=0)
        return {"boards": self.inside.shape[0], "coverage": self.inside.mean(axis=0),
                "excluded": self.excluded.mean(axis=0), "coverage_included": inside_included,
                "rank_coverage": self.rank_covered.mean(axis=0)}


def simulate_near_zero(model: QueriesModel, rows: str, boards: int, seed: int = 0) -> NearZero:
    truth = model.truth()
    best, worst = true_ranks(truth)
    rng = np.random.default_rng(seed)
    inside, excluded, covered = [], [], []
    for _ in range(boards):
        est, _, _ = queries_board(model, model.draw(rng), rows, reference=False)
        inside.append(engine_interval_inside(est, truth))
        excluded.append(~est.included)
        sets = engine_sets(est, "marginal")
        covered.append((sets.rank_lo <= best) & (worst <= sets.rank_hi))
    return NearZero(np.array(inside), np.array(excluded), np.array(covered))
