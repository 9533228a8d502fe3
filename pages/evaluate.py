"""Evaluate your run: get the shipped tasks' inputs, upload a run scored with any model, and see where it lands —
tie-aware, beside the shipped systems, in every view, for this browser session only."""
from __future__ import annotations

import time
from pathlib import Path

import streamlit as st

from evalcore.store import Condition
from ui import data, drawing, glossary, hints, notices, sidebar, state, tables, upload, words
from ui.navigation import PAGES_DIR

TITLE = "Evaluate your run"
SETTINGS = {"mcr": "Multiple choice (MCR)", "full-pooled": "Full (pooled candidates)"}
UPLOADS_DRAWN = "_ev_uploads_drawn"  # the file widget's generation: a new one after each evaluation
EVALUATED = "_ev_evaluated"  # what was evaluated and when "Evaluate" was clicked, said once after the rerun
PRECISIONS = ("fp32", "fp16", "bf16", "bf16+hps", "int8", "binary")
INTRO = (
    "Where would your model land? **1.** Download the tasks' queries and candidates. **2.** Score them with any "
    "model and upload one run file per task (named by the task, e.g. `ARCChallenge.trec`), or one parquet / CSV "
    "file with a `task` column. **3.** The run is evaluated tie-aware against the shipped relevance judgements "
    "and joins the Leaderboard, Compare and Ties & precision views as **“NAME (your run)”** — for this browser "
    "session only: it is kept in the server's memory for your session and written nowhere; reloading the page "
    "or opening a copied link starts without it.")

COMPARE_INTRO = (
    "Why doesn't a score match the one reported? Often it is ties: the same run scored with ties broken by "
    "document id (trec_eval, pytrec_eval), in input order (MTEB's MRR before 2.18.19, numpy argmax) or at another "
    "precision gives another number. Each reported number is checked against your run's value under each tie "
    "policy and its tie range [min, max] (the mean of the per-query ranges: queries are independent). "
    "*Reproduced* means within half a unit of its last decimal.")
EXAMPLE = "_ev_example"  # the worked example was opened (kept for the session's reruns)


def render() -> None:
    started = time.perf_counter()  # a click on "Evaluate" starts this run: the wait is timed from here
    view = hints.page_top(TITLE, INTRO)
    if view is None:
        return
    _limits()
    benchmarks = _benchmarks_with_tasks(view.data_dir)
    if not benchmarks:
        drawing.info("This data folder ships no task inputs (`tasks/<benchmark>/`, written by "
                     "`scripts/make_task_texts.py`), so there is nothing to score here.")
        return
    drawing.subheader("1 · Get the inputs")
    left, right = st.columns([1, 2])
    benchmark = left.selectbox("Benchmark", benchmarks, key="ev_bench", format_func=_benchmark_name)
    settings = list(SETTINGS)
    shown = view.cond.setting if view.cond.setting in settings else settings[0]  # the sidebar's, where it can
    setting = right.radio("Setting", settings, index=settings.index(shown), key="ev_setting",
                          format_func=SETTINGS.get, horizontal=True,
                          help="MCR: rank each query's own few candidates. Full (pooled): rank the task's whole "
                               "pool of documents for every query.")
    if view.cond.setting not in settings:  # the sidebar's Full retrieval: a whole corpus, not shipped as inputs
        drawing.caption(f"The sidebar's setting, {sidebar.SETTING_LABELS.get(view.cond.setting, view.cond.setting)}, is "
                        "not offered here: a run is scored over the inputs shipped for a task — each query's own "
                        "candidates (MCR) or the task's pooled candidates.")
    _inputs_download(view.data_dir, benchmark, setting)
    drawing.subheader("2 · Upload your run")
    evaluated = _upload_form(view, benchmark, setting, started)
    held = upload.candidate()
    if held is not None:
        drawing.subheader("3 · Where it lands")
        _result(view, held)
    drawing.subheader(("4 · " if held is not None else "") + "Compare with a reported number")
    drawing.caption(COMPARE_INTRO)
    if held is not None:
        _compare(view, held)
    else:
        drawing.caption("Upload a run above to compare it with numbers you type or with a system on the board — or "
                        "open the worked example, which needs no upload.")
    _example(view)
    if evaluated is not None:  # said once the result is drawn: the time is the whole wait
        slot, said = evaluated
        drawing.into(slot).success(_evaluated_text(said, time.perf_counter() - said["clicked"]), icon=":material/check_circle:")


def _limits() -> None:
    """What an upload may cost on this server, said before anything is uploaded."""
    limits = upload.LIMITS
    cols = st.columns(4)
    drawing.into(cols[0]).metric("Per file", f"{limits.upload_mb} MB", help="Streamlit's server.maxUploadSize on this server.")
    drawing.into(cols[1]).metric("Run rows", f"{limits.rows:,}", help="All files of one upload together. A browser session "
                                                        "holds one run: a new upload replaces it.")
    drawing.into(cols[2]).metric("Evaluation time", f"{limits.seconds} s", help="An evaluation that takes longer is stopped.")
    drawing.into(cols[3]).metric("Evaluations at once", f"{limits.slots}", help="On this server; others wait their turn (at "
                                                                   f"most {limits.queue_seconds} s).")


def _benchmark_name(benchmark: str) -> str:
    from ui.board import benchmark_name

    return benchmark_name(benchmark)


def _benchmarks_with_tasks(data_dir: Path) -> list[str]:
    from evalcore.store.catalogue import TASKS_DIR

    folder = Path(data_dir) / TASKS_DIR
    try:
        return sorted(p.name for p in folder.iterdir() if (p / "queries.parquet").is_file())
    except OSError:
        return []


def _inputs_download(data_dir: Path, benchmark: str, setting: str) -> None:
    from evalcore.store.catalogue import TASKS_DIR

    folder = Path(data_dir) / TASKS_DIR / benchmark
    versions = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.glob("*.parquet")))
    st.download_button(
        f"Download the {SETTINGS[setting]} inputs (zip)", lambda: data.inputs_zip(str(data_dir), versions,
                                                                                  benchmark, setting),
        file_name=f"{benchmark}-{setting}-inputs.zip", mime="application/zip", icon=":material/download:",
        key="ev_inputs")
    what = ("`qid`, `docid`, `text`: each query's own candidates" if setting == "mcr"
            else "`docid`, `text`: the task's pool, which every query ranks")
    drawing.caption(f"Per task, `<task>/queries.jsonl` (`qid`, `text`, `instruction`), `<task>/candidates.jsonl` "
                    f"({what}) and `<task>/qrels.json` (the judgements, `{{qid: {{docid: grade}}}}`, to check a "
                    f"run yourself) — the same files as `python -m evalcore tasks export --benchmark {benchmark} "
                    f"--setting {setting} --out DIR`, with exactly the ids of the shipped results.")


def _upload_form(view, benchmark: str, setting: str, started: float):
    """The form; after an evaluation, (an empty slot under it, what was evaluated) for :func:`render` to fill
    once the result is drawn, else None."""
    limits = upload.LIMITS
    with st.form("ev_form", enter_to_submit=False, border=True):
        left, mid, right = st.columns([2, 1, 1])
        name = left.text_input("Name of your run", max_chars=upload.NAME_CHARS, placeholder="e.g. my-encoder-v2",
                               key="ev_name")
        instruction = mid.radio("Queries scored", ["without instruction", "with instruction"], key="ev_instr",
                                help="Whether your model saw each query's instruction (queries.jsonl's "
                                     "`instruction`) before its text.")
        precision = right.selectbox("Precision", PRECISIONS, key="ev_prec",
                                    help="The precision your scores were computed in: the run joins that "
                                         "precision's leaderboard.")
        files = st.file_uploader(
            f"Run files for {SETTINGS[setting]} ({_benchmark_name(benchmark)})", type=list(upload.UPLOAD_TYPES),
            accept_multiple_files=True, key=f"ev_files_{st.session_state.get(UPLOADS_DRAWN, 0)}",
            help="TREC (qid Q0 docid rank score tag), TSV/CSV/JSON lines with qid, docid, score, nested JSON "
                 "{qid: {docid: score}} (pytrec_eval, ranx, mteb's saved predictions), or parquet; .gz too. One "
                 "file per task named by the task, or one file with a task column.")
        drawing.caption(notices.limits_sentence(limits) + " Bad files are refused with the file and line; nothing is written.")
        submitted = st.form_submit_button("Evaluate", type="primary", icon=":material/play_arrow:")
    said = st.session_state.pop(EVALUATED, None)
    evaluated = (st.empty(), said) if said else None
    if not submitted:
        return evaluated
    try:
        request = upload.Request(upload.check_name(name), benchmark, setting,
                                 instruction == "with instruction", precision)
        uploads = [(f.name, f.getvalue()) for f in (files or [])]
        shown = st.empty()  # the worker's progress, as it comes: task i of n, queries of this task
        try:
            with st.spinner(_wait_text()):
                held = upload.evaluate(request, uploads, view.data_dir, data.folder_store(view.data),
                                       on_progress=lambda words: shown.progress(words[0], text=words[1]))
        finally:
            shown.empty()
    except upload.UploadError as exc:
        drawing.error(f"Not evaluated — {notices.safe_text(str(exc))}", icon=":material/error:")
        return None
    # a new file widget next run: Streamlit then drops the uploaded bytes (the rows are what the session keeps)
    st.session_state[UPLOADS_DRAWN] = st.session_state.get(UPLOADS_DRAWN, 0) + 1
    st.session_state[EVALUATED] = {"system": held.system, "run_rows": held.run_rows, "values": held.rows.num_rows,
                                   "scored": held.seconds, "queued": held.queued, "clicked": started}
    st.rerun()


def _evaluated_text(said: dict, seconds: float) -> str:
    """What was evaluated and how long the visitor waited: ``seconds`` from the click on "Evaluate" to the
    drawn result, on the server, split into checking and scoring the files (:attr:`upload.Candidate.seconds`,
    less any wait for a slot) and placing the run on its board."""
    parts = [f"{said['scored'] - said['queued']:.1f} s checking and scoring the files"]
    if said["queued"] >= 0.05:
        parts.insert(0, f"{said['queued']:.1f} s waiting for a free evaluation slot")
    parts.append(f"{max(seconds - said['scored'], 0.0):.1f} s ranking it and drawing this page")
    return (f"Evaluated **{notices.safe_text(said['system'])}**: {said['run_rows']:,} run rows, "
            f"{said['values']:,} per-query values, in {seconds:.1f} s on the server from your click to this "
            f"result ({', '.join(parts)}).")


def _wait_text() -> str:
    queued = upload.waiting()
    return ("Evaluating your run…" if not queued else
            f"Evaluating your run… ({words.counted(queued, 'other evaluation')} "
            f"{'is' if queued == 1 else 'are'} waiting for this server's {words.counted(upload.LIMITS.slots, 'slot')})")


def _result(view, held: upload.Candidate) -> None:
    req = held.request
    cond = upload.board_condition(held, view.cond)  # the sidebar's metric and tie policy where they apply
    board = data.leaderboard(data.snapshot(view.data_dir), cond)  # a snapshot taken now holds the new run
    drawing.markdown(f"**{notices.safe_text(held.system)}** — {_benchmark_name(req.benchmark)}, {SETTINGS[req.setting]}, "
                     f"{'with' if req.instruction else 'without'} instruction, {req.precision}; files: "
                     + ", ".join(f"`{notices.safe_text(Path(f).name)}`" for f in held.files[:10])
                     + (f" and {len(held.files) - 10} more" if len(held.files) > 10 else ""))
    hints.board_line(board, cond, held, name_setting=cond.setting != view.cond.setting)
    moved = notices.run_moved_line(cond, view.cond)
    if moved:
        drawing.caption(":material/alt_route: " + notices.safe_text(moved))
    left, mid, right, far = st.columns(4)
    if left.button("Show in the Leaderboard", icon=":material/leaderboard:", key="ev_go_board"):
        _go("leaderboard.py", held, cond)
    others = [s for s in board.ranked["system"].tolist() if s != held.system]
    if mid.button("Compare with the top system", icon=":material/compare_arrows:", key="ev_go_compare",
                  disabled=not others):
        _go("compare.py", held, cond, sys=[held.system, others[0]], values="expected")
    if right.button("Its ties & precision", icon=":material/balance:", key="ev_go_ties"):
        _go("ties-and-precision.py", held, cond)
    if far.button("Remove from this session", icon=":material/delete:", key="ev_forget"):
        upload.forget()
        st.rerun()
    frame = held.frame()
    drawing.dataframe(frame.drop(columns=["system", "benchmark", "source"]).head(1000), hide_index=True,
                      width="stretch", height=300, column_config=_per_query_columns())
    drawing.caption(f"The first {min(len(frame), 1000):,} of {len(frame):,} per-query rows (one per task × query × "
                    "metric × tie policy). The download holds them all, in the data contract's `query_metrics` "
                    "columns: share it, or ingest it elsewhere.")
    st.download_button("Per-query results (parquet)", held.parquet_bytes, icon=":material/download:",
                        file_name=f"{upload.file_stem(held)}.parquet", mime="application/vnd.apache.parquet",
                        key="ev_rows")
    _keep_it(view, held)


def _compare(view, held: upload.Candidate) -> None:
    """Typed numbers or a board system's numbers against the uploaded run's rows: one verdict per number."""
    req = held.request
    left, right = st.columns([1, 2])
    metric = left.selectbox("Metric", held.metrics, key="ev_cmp_metric")
    cond = Condition(req.benchmark, metric, req.setting, req.instruction, req.precision)
    others = [s for s in dict.fromkeys(data.task_table(view.data, cond)["system"]) if s != held.system]
    system = right.selectbox("A system on the board", ["(none)", *others], key="ev_cmp_system",
                             help="Its numbers for each task, under every tie policy its rows carry.")
    typed = st.text_area("Reported numbers", key="ev_cmp_typed", height=80,
                         placeholder="TASK=VALUE, one a line, e.g. ARCChallenge=0.2406 (or 24.06 as a percentage)")
    if not typed.strip() and system == "(none)":
        return
    try:
        numbers = data.system_numbers(view.data, system, cond) if system != "(none)" else ()
        verdicts = data.explain_rows(held.rows, typed, metric, numbers)
    except ValueError as exc:  # evalcore's InputError: one line
        drawing.error(f"Not compared — {notices.safe_text(str(exc))}", icon=":material/error:")
        return
    drawing.caption(f"Tie policies named: those your run was evaluated under ({', '.join(held.tie_policies)}).")
    _verdicts(verdicts, "ev_cmp_table")


def _example(view) -> None:
    """The shipped raw runs against the same system's shipped numbers: open with one click."""
    opened = st.button("Open the worked example (a shipped run)", icon=":material/school:", key="ev_example")
    if opened:
        st.session_state[EXAMPLE] = True
    if not st.session_state.get(EXAMPLE):
        return
    example = data.explain_example(view.data)
    if example is None:
        drawing.info("This data folder ships no raw run with its system's numbers at bf16 to compare with.")
        return
    drawing.markdown(f"**Worked example.** The shipped FP32 runs of `{notices.safe_text(example.system)}` "
                     f"({', '.join(notices.safe_text(r) for r in example.runs)}) against the same system's shipped "
                     f"{example.metric} at **bf16** (its real bf16 inference) and at fp32, as if they were numbers "
                     "reported in a paper. The fp32 number is reproduced; the bf16 one is not always explained by the "
                     "fp32 run's ties, but rounding the run's scores to bf16 reaches it. The same from a terminal: "
                     "`python -m evalcore explain --run RUN --qrels QRELS --reported VALUE --precision`.")
    _verdicts(example.verdicts, "ev_example_table")


def _verdicts(verdicts, key: str) -> None:
    """The verdict table: one row per reported number, values under each tie policy, the verdict in words."""
    tip, number = glossary.tip, tables.number
    policies = [c for c in verdicts.columns if c in ("docid-desc", "docid-asc", "input-order")
                or c.startswith("random:")]
    config = {"task": "Task", "metric": "Metric", "reported": number("Reported"), "reported_by": "From",
              "expected": number("Expected", help=tip("expected")), "min": number("Min", help=tip("tie-range")),
              "max": number("Max", help=tip("tie-range")), "verdict": "Verdict", "explained": None,
              "equals_expected": st.column_config.CheckboxColumn("= Expected", help=tip("expected", before=(
                  "The number equals the expected value over tie orders (within its tolerance): what a tie-aware "
                  "evaluator reports, not one tie policy's value."))),
              "line": st.column_config.TextColumn("Why", width="large"),
              **{p: number(p, help=tip("tie-policy")) for p in policies}}
    order = ["task", "metric", "reported", "reported_by", "verdict", "equals_expected", "expected", "min", "max",
             *policies, "line"]
    drawing.dataframe(verdicts, hide_index=True, width="stretch", column_config=config, column_order=order, key=key)
    unexplained = int((~verdicts["explained"]).sum())
    drawing.caption(f"{len(verdicts) - unexplained} of {len(verdicts)} reported numbers explained by ties"
                    + (f"; {unexplained} not (another precision, prompt, corpus?)." if unexplained else "."))


def _per_query_columns() -> dict:
    """Headers and tooltips of the per-query table (the download keeps the data contract's column names)."""
    tip, number = glossary.tip, tables.number
    return {"task": "Task", "setting": st.column_config.TextColumn("Setting", help=tip("mcr", "full-pooled")),
            "instruction": st.column_config.CheckboxColumn("With instruction", help=tip("instruction")),
            "precision": st.column_config.TextColumn("Precision", help=tip("precision")), "qid": "Query",
            "metric": "Metric", "oblivious": number("Oblivious", help=tip("oblivious")),
            "expected": number("Expected", help=tip("expected")), "min": number("Min", help=tip("tie-range")),
            "max": number("Max", help=tip("tie-range")),
            "tie_policy": st.column_config.TextColumn("Tie policy", help=tip("tie-policy")),
            "n_candidates": number("Candidates", 0),
            "tied_at_cutoff": st.column_config.CheckboxColumn("Tied at the cutoff", help=tip("tied-at-cutoff"))}


def _go(page: str, held: upload.Candidate, cond: Condition, **extra) -> None:
    """Open ``page`` showing ``cond`` — the board the result was ranked on — as the visitor's choice (kept by
    the sidebar) in this session."""
    for key, value in {**upload.condition_wishes(held, cond.metric, cond.tie_policy), **extra}.items():
        state.set_wish(key, value)
    st.switch_page(PAGES_DIR / page)


def _keep_it(view, held: upload.Candidate) -> None:
    if not upload.ingest_allowed():
        drawing.caption(":material/lock: This server keeps uploads for your session only. Its operator can allow "
                        "adding them to the shared leaderboard (`TIEBREAK_ALLOW_INGEST=1`, see the README).")
        return
    drawing.markdown("**Keep it.** This server allows adding uploaded runs to its data folder: the run becomes an "
                     "ordinary system that every visitor sees and links can share.")
    if st.button("Add to the leaderboard", icon=":material/publish:", key="ev_ingest"):
        try:
            written = upload.ingest(held, view.data_dir)
        except upload.UploadError as exc:
            drawing.error(f"Not added — {notices.safe_text(str(exc))}", icon=":material/error:")
            return
        upload.forget()
        drawing.success(f"Added as `{notices.safe_text(written)}`; it appears in every view within a few seconds.")


render()
