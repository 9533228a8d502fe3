"""How sure a leaderboard can be of each row: intervals, rank sets, tiers and which neighbours differ — through
two lenses that answer two different questions.

- **queries** (:mod:`~evalcore.uncertainty.queries_lens`) — *on this benchmark's tasks, is A better than B?*
  The tasks are fixed; each task score is a mean over a finite sample of queries. Rows with per-query values
  use their own (paired) variances; published rows are bounded from each task's query count
  (:mod:`~evalcore.uncertainty.query_counts`, ``data/query_counts.json``) and the Bhatia–Davis bound.
- **tasks** (:mod:`~evalcore.uncertainty.tasks_lens`) — *had the benchmark drawn other tasks like these?* The
  tasks are a sample; the paired t statistic over tasks with T − 1 degrees of freedom.

Both lenses hand the same things (:class:`~evalcore.uncertainty.estimates.Estimates`: points on the comparison
scale, standard errors of every pairwise difference, the reference distribution) to the same procedures:

- :mod:`~evalcore.uncertainty.intervals` — each row's interval (closed form);
- :mod:`~evalcore.uncertainty.rank_sets` — marginal or simultaneous rank sets (Mogstad, Romano, Shaikh &
  Wilhelm 2024's construction with Holm's step-down on exact p-values: no Monte Carlo error);
- :mod:`~evalcore.uncertainty.separability` — the adjacent pairs' one-sided tests (Holm), tiers from the rank
  sets' own decisions, the Pareto front of real differences;
- :mod:`~evalcore.uncertainty.board` — all of it for one board's ranked rows, both lenses;
- :mod:`~evalcore.uncertainty.student` — the normal and Student t distributions in closed form;
- :mod:`~evalcore.uncertainty.paired_test` — the Compare view's paired randomization test over queries.

Nothing here reads files or databases except :mod:`~evalcore.uncertainty.query_counts`; the store
(:mod:`evalcore.store.statistics`) hands the rows in. docs/DESIGN.md § Uncertainty states each method's
question, assumptions, coverage (by simulation) and failure cases.
"""
