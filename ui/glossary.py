"""The glossary: every jargon word the dashboard uses, defined once, with its citation.

Labels reach it two ways: ``help=glossary.tip("hps", "bf16")`` puts the definitions into the label's tooltip
(with a link to the full entry), and the Glossary page (:func:`page`, ``/glossary``) lists every entry under
an anchor named by its key; links to an entry (:func:`href`, ``glossary?term=hps#hps``) open the page with
that entry first. Pages never write their own definition of a term listed here.
"""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui import drawing

GLOSSARY_PATH = "glossary"
"""The URL path of the Glossary page (``ui.navigation.GLOSSARY``); links to it are relative, so they work
under a path prefix too."""


@dataclass(frozen=True)
class Citation:
    key: str
    text: str
    url: str


CITATIONS = {c.key: c for c in (
    Citation("mcsherry-najork-2008", "McSherry & Najork, *Computing Information Retrieval Performance Measures "
             "Efficiently in the Presence of Tied Scores*, ECIR 2008", "https://doi.org/10.1007/978-3-540-78646-7_38"),
    Citation("yang-2026", "Yang et al., *Reliable Evaluation Protocol for Low-Precision Retrieval*, ACL 2026 "
             "(arXiv 2508.03306)", "https://arxiv.org/abs/2508.03306"),
    Citation("rarb", "Xiao et al., *RAR-b: Reasoning as Retrieval Benchmark*, 2024 (arXiv 2404.06347)",
             "https://arxiv.org/abs/2404.06347"),
    Citation("crumb", "Killingback & Zamani, *Benchmarking Information Retrieval Models on Complex Retrieval "
             "Tasks* (CRUMB), 2025 (arXiv 2509.07253)", "https://arxiv.org/abs/2509.07253"),
    Citation("mogstad-2024", "Mogstad, Romano, Shaikh & Wilhelm, *Inference for Ranks with Applications to "
             "Mobility across Neighbourhoods and Academic Achievement across Countries*, Review of Economic "
             "Studies 91(1), 2024", "https://doi.org/10.1093/restud/rdad006"),
    Citation("neuhof-benjamini-2026", "Neuhof & Benjamini, *Rank Intervals for Leaderboards*, 2026 (arXiv "
             "2606.08679): ranks on these tasks vs on a new task like these", "https://arxiv.org/abs/2606.08679"),
    Citation("bhatia-davis-2000", "Bhatia & Davis, *A Better Bound on the Variance*, The American Mathematical "
             "Monthly 107(4), 2000", "https://doi.org/10.1080/00029890.2000.12005203"),
    Citation("agresti-coull-1998", "Agresti & Coull, *Approximate is Better than “Exact” for Interval Estimation "
             "of Binomial Proportions*, The American Statistician 52(2), 1998",
             "https://doi.org/10.1080/00031305.1998.10480550"),
    Citation("smucker-2007", "Smucker, Allan & Carterette, *A Comparison of Statistical Significance Tests for "
             "Information Retrieval Evaluation*, CIKM 2007", "https://doi.org/10.1145/1321440.1321528"),
    Citation("holm-1979", "Holm, *A Simple Sequentially Rejective Multiple Test Procedure*, Scandinavian "
             "Journal of Statistics 6(2), 1979", "https://www.jstor.org/stable/4615733"),
)}


@dataclass(frozen=True)
class Term:
    """One entry: its key (the page anchor), the words shown, the definition (markdown) and its citations."""

    key: str
    name: str
    text: str
    cites: tuple[str, ...] = ()


_ENTRIES = (
    # -- tie-aware values
    Term("oblivious", "Oblivious value", "The metric as a tie-oblivious evaluator reports it: tied documents are "
         "put in one fixed order (the **tie policy**) and the metric is computed on that order. What trec_eval, "
         "pytrec_eval, MTEB and BEIR report.", ("yang-2026",)),
    Term("expected", "Expected value", "The metric's mean over every ordering of tied documents, each equally "
         "likely — computed in closed form per tie group, not by sampling. It does not depend on the tie policy.",
         ("mcsherry-najork-2008", "yang-2026")),
    Term("tie-range", "Tie range [min, max]", "The lowest and highest value the metric (or an aggregate such as "
         "G) takes when every tie is broken against the system / in its favour. Published scores carry none: "
         "they come without per-query results.", ("yang-2026",)),
    Term("range", "Range", "max − min: how far the tie policy alone can move a score.", ("yang-2026",)),
    Term("bias", "Bias", "oblivious − expected: how much the chosen tie policy favours (positive) or penalises "
         "(negative) a system against a fair tie-break.", ("yang-2026",)),
    Term("tied-at-cutoff", "Tied at the cutoff", "A query where one group of equal scores holds both rank k and "
         "rank k+1 (e.g. 10 and 11 for nDCG@10): which documents make the top k is decided by the tie policy."),
    Term("tie-dependent", "Tie-dependent score", "A query whose score is not the same for every ordering of its "
         "tied documents (min < max): the reported score is the one the tie policy happened to pick. A tie at the "
         "cutoff is one cause; a tie inside the top k is another for rank-sensitive metrics (nDCG, MRR), and a tie "
         "at the cutoff among documents of equal relevance changes nothing.", ("yang-2026",)),
    # -- tie policies
    Term("tie-policy", "Tie policy", "How a tie-oblivious evaluator orders documents with equal scores. "
         "**docid-desc**: by document id, descending — trec_eval, pytrec_eval, MTEB, BEIR (the default). "
         "**docid-asc**: by document id, ascending. **input-order**: a stable sort, ties keep the run's order — "
         "numpy's argmax, RAR-b's multiple-choice accuracy, MTEB's MRR before mteb 2.18.19. **random:SEED**: a "
         "seeded shuffle.", ("yang-2026",)),
    # -- precision
    Term("precision", "Precision", "The number format the scores were computed or stored in: fp32, fp16, bf16 "
         "(16-bit floats with fewer distinct values, hence more ties), int8 and binary (quantised embeddings), "
         "q4 (4-bit weights). Lower precision maps different scores to the same value.", ("yang-2026",)),
    Term("precision-kind", "Precision kind", "What a precision label means for a run: **inference** — the model "
         "itself ran at that precision; **storage** — its output (embeddings or scores) was computed at full "
         "precision and stored at that precision afterwards; **native** — the system's own output as produced "
         "(BM25's scores, a 4-bit model). Published scores do not say, so they show no kind."),
    Term("hps", "HPS (high-precision scoring)", "Keep the embeddings or logits at low precision but compute the "
         "final scoring step (the dot product or similarity) in FP32: most ties created by low precision "
         "disappear at almost no cost. `bf16+hps` = BF16 inference with FP32 scoring.", ("yang-2026",)),
    # -- settings
    Term("full", "Full retrieval", "Each query ranks the benchmark's whole corpus, as MTEB and the R2MED paper "
         "publish it (task-level scores only).", ("rarb",)),
    Term("full-pooled", "Full (pooled candidates)", "Our own RAR-b runs: each query ranks every candidate answer "
         "of its task pooled together — a retrieval setting with per-query results, but not RAR-b's official "
         "corpus, so it is kept apart from the published full-retrieval numbers."),
    Term("mcr", "MCR (multiple-choice retrieval)", "RAR-b's multiple-choice setting: each query ranks only its "
         "own answer options; accuracy is p@1 (is the correct option ranked first?). Chance is 1 / options.",
         ("rarb",)),
    Term("passage", "Passages (CRUMB)", "CRUMB's passage collection: documents split into chunks `DOC:CHUNK`. For "
         "clinical_trial, set_operation_entity_retrieval and tip_of_the_tongue each document is scored by its best "
         "passage (**MaxP**) and judged with the full-document labels, as CRUMB's evaluator does.", ("crumb",)),
    Term("full-document", "Full documents (CRUMB)", "CRUMB's full-document collection (five tasks have one; the "
         "other three are evaluated on their only collection); never MaxP.", ("crumb",)),
    Term("instruction", "Instruction use", "Whether queries were prefixed with a task instruction. **as "
         "published** takes, per system, its with-instruction results when it has them, else without, else "
         "those whose instruction use is **unknown** (a model card that never says)."),
    # -- aggregates and ranks
    Term("g", "G (geometric mean)", "(Π task scores)^(1/n) over a benchmark's tasks — RAR-b's own aggregate. A "
         "single zero task makes G zero.", ("rarb",)),
    Term("mean", "Mean (arithmetic)", "The average of the task scores — R2MED's own aggregate (its site's "
         "“Avg”) and CRUMB's (its paper's average over the eight tasks)."),
    Term("borda", "Borda count", "Per task, a system scores one point per other system it beats and ½ per "
         "tie; the points are summed over tasks. Insensitive to how far apart scores are."),
    Term("aggregate", "Ranking aggregate", "Each benchmark is ranked by its own aggregate: RAR-b by **G**, R2MED "
         "and CRUMB by the **mean**. The other stays selectable; the board says which one ranks."),
    Term("on-these-tasks", "On these tasks", "The question most readers bring: *on this benchmark's tasks, is "
         "A better than B?* The tasks are fixed; what is uncertain is each task score, a mean over a finite sample "
         "of queries. Rows with per-query results use their own variances, paired with each other; a published "
         "row (one score per task) is bounded from the task's number of queries — a score in [0, 1] with mean μ "
         "has variance at most μ(1 − μ) — assuming two systems' per-query scores are not negatively correlated. "
         "Ties count against a claim: a pair is ordered only if it stays ordered with every tie broken against "
         "the upper system. **Worked example** (RAR-b, full retrieval, nDCG@10): codefuse-ai/F2LLM-v2-14B "
         "(G 0.3141) is ahead of Alibaba-NLP/gte-Qwen2-7B-instruct (G 0.2800) by 8.2 standard errors on these "
         "tasks, whose scores are means over 1,172 to 10,042 queries: they differ, and F2LLM-v2-14B's rank range "
         "is 1.", ("neuhof-benjamini-2026", "bhatia-davis-2000", "agresti-coull-1998")),
    Term("on-new-tasks", "On new tasks like these", "The other question: *had the benchmark drawn other tasks "
         "like these, would A still lead B?* The tasks are taken as a sample from a population of similar tasks "
         "and each system's task scores as given: the paired t test over tasks (log scores for G), with T − 1 "
         "degrees of freedom. With 8 or 17 tasks only large, consistent differences survive. **Worked "
         "example**: the same two systems lead each other on different tasks; the gap is 1.9 standard errors of a "
         "paired t over the 17 tasks (two-sided p = 0.075 before any correction): not told apart, and their rank "
         "ranges are 1–10 and 1–16. It assumes tasks are exchangeable draws; a benchmark built from deliberately "
         "different tasks makes “tasks like these” a population that does not exist.",
         ("neuhof-benjamini-2026", "smucker-2007")),
    Term("rank", "# (rank by the aggregate)", "The order of the aggregate's point values, as a competition rank "
         "(1, 2, 2, 4). It is what the benchmark's own leaderboard shows; the rank range beside it says which "
         "ranks the row can take once uncertainty is counted."),
    Term("interval", "Interval (95%)", "Where the aggregate lies through the chosen lens, at the level: a normal "
         "interval on these tasks, a bootstrap-t interval over tasks on new tasks like these; for G on the log "
         "scale "
         "(positive and asymmetric). Closed forms: the same data give the same interval, whatever the seed."),
    Term("rank-range", "Rank range", "The ranks the row's true position can take, at the level: from 1 + the "
         "systems surely above it to the count of systems less the ones surely below. “Surely” comes from testing "
         "every pairwise comparison with Holm's step-down. **Marginal** (the default) covers each row's rank at "
         "the level on its own; **simultaneous** covers every row's at once and is wider. A row with a zero task "
         "under G sits with the other zero rows at the bottom.", ("mogstad-2024", "holm-1979")),
    Term("tier", "Tier", "The longest chain of “surely above” ending at the row, plus one: tier 1 holds exactly the "
         "systems that could be #1; a system in tier 3 has two systems above it, each surely above the next. "
         "Tiers come from the same decisions as the rank ranges, so they never contradict them.",
         ("mogstad-2024",)),
    Term("separable", "Adjacent pairs that differ", "Of each pair of neighbours on the board, whether the upper "
         "system is surely better than the lower, through the lens: a two-sided test (the board's order was "
         "picked by the same data) that counts only with the upper system ahead, Holm-adjusted over all the "
         "adjacent pairs shown. Two systems tied on the aggregate never differ. When "
         "no pair differs the board says how far the strongest pair is from Holm's first threshold. MTEB's own "
         "board separates 4 of 180 adjacent pairs over tasks.", ("smucker-2007", "holm-1979")),
    Term("could-be-first", "Could be #1", "The systems whose rank range through the lens includes 1: none is "
         "surely better than them. They are the board's tier 1."),
    Term("common-tasks", "Common-task ranking", "Ranks the shown systems on the tasks all of them have, naming "
         "the tasks dropped — never an average over different task subsets, never a filled-in task."),
    Term("task-level-only", "Task-level scores only", "Published numbers (MTEB, the R2MED paper) come as one score "
         "per task, without per-query results and without the inference precision they were run at: they have an "
         "interval and a rank range through both lenses (on these tasks from each task's query count), but no "
         "tie range."),
    Term("policy-swap", "Policy swap", "Two systems that the chosen tie policy orders one way and their expected "
         "values the other: their order is decided by how ties are broken, not by the models."),
)
TERMS: dict[str, Term] = {term.key: term for term in _ENTRIES}


def tip(*keys: str, before: str = "") -> str:
    """A tooltip (``help=``) holding the definitions of ``keys`` after ``before``, and a link to the Glossary."""
    parts = [before] if before else []
    for key in keys:
        term = TERMS[key]
        parts.append(f"**{term.name}**: {term.text}")
    parts.append(f"[Glossary →]({href(keys[0] if keys else None)})")
    return "\n\n".join(parts)


def link(key: str, text: str | None = None) -> str:
    """A markdown link to a term's entry on the Glossary page."""
    return f"[{text or TERMS[key].name}]({href(key)})"


def href(key: str | None = None) -> str:
    """The relative address of ``key``'s entry: ``glossary?term=KEY#KEY`` (the page alone without a key).

    The query names the entry to the page, which shows it first (:func:`page`): a fragment alone is lost,
    because Streamlit rewrites the address without it when the view writes its state into the URL, before
    the heading it names is drawn. The fragment still scrolls to the entry wherever the address is kept."""
    if key is None:
        return GLOSSARY_PATH
    if key not in TERMS:
        raise KeyError(key)
    return f"{GLOSSARY_PATH}?term={key}#{key}"


def page() -> None:
    """The Glossary page: a look-up bound to URL key ``term`` (what :func:`href` links set) showing the chosen
    entry first, then every term under its own anchor, then the references."""
    from ui import state

    drawing.title("Glossary")
    drawing.markdown("The words the dashboard uses, what they mean here, and where they come from. Every label with "
                     "a question-mark icon shows its entry on hover.")
    chosen = state.select("term", "Look up a term", ["", *TERMS], "", always=False,
                          format_func=lambda key: TERMS[key].name if key else "— every entry below —")
    if chosen:
        with st.container(border=True):
            _entry(TERMS[chosen], anchor=False)
    for term in _ENTRIES:
        _entry(term)
    drawing.subheader("References", anchor="references")
    drawing.markdown("\n".join(f"- [{c.text}]({c.url})" for c in CITATIONS.values()))


def _entry(term: Term, anchor: bool = True) -> None:
    """One entry: its name as a heading (under the anchor ``term.key``), its definition and citations."""
    drawing.subheader(term.name, anchor=term.key if anchor else False)
    cites = "; ".join(f"[{CITATIONS[c].text}]({CITATIONS[c].url})" for c in term.cites)
    drawing.markdown(term.text + (f"\n\n<small>{cites}</small>" if cites else ""), unsafe_allow_html=True)
