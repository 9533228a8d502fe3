"""``evalcore simulate``: rewrite a run's scores as a low-precision pipeline would have produced them.

No HPS: ``round(score)`` / ``round(sigmoid(round(z)))``; with ``--hps`` the final scoring step stays in FP32
(Yang et al., ACL 2026, arXiv 2508.03306). The output format follows --out's extension, else the input's.
"""
from __future__ import annotations

import argparse
from pathlib import Path

LOW_PRECISION_CHOICES = ("bf16", "fp16", "fp8-e4m3", "fp8-e5m2")  # mirrors precision.LOW_PRECISIONS


def _target(text: str) -> str:
    """``--to`` in its canonical spelling (``BF16``, `` bfloat16`` -> ``bf16``); argparse's choices check the rest."""
    from evalcore.precision import canonical_dtype

    try:
        return canonical_dtype(text)
    except ValueError:
        return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="input run (TREC, BEIR tsv/jsonl, parquet, CSV)")
    parser.add_argument("--to", required=True, type=_target, choices=LOW_PRECISION_CHOICES,
                        help="target precision (any case)")
    parser.add_argument(
        "--scoring", choices=("score", "sigmoid"), default="score",
        help="'score': scores are the model output (rounded); 'sigmoid': scores are logits -> probabilities",
    )
    parser.add_argument(
        "--hps", action="store_true", help="High-Precision Scoring: keep the final scoring step in FP32"
    )
    parser.add_argument(
        "--out", required=True,
        help="output run, written atomically; format from its extension, else the input's format; "
             "a .gz name (run.trec.gz) is gzip-compressed",
    )


def run(args: argparse.Namespace) -> int:
    import sys

    import ml_dtypes
    import numpy as np

    from evalcore import formats, precision
    from evalcore.errors import InputError
    from evalcore.outputs import check_output, is_standard_output

    check_output(args.out, [args.run], "--out run")
    try:
        with formats.readable_input(args.run) as run:  # a pipe is read once, not sniffed and then read
            input_format = formats.detect_run_format(run)
            table = formats.read_run(run, fmt=input_format)
    except OSError as exc:  # missing / unreadable file: bad input, not a crash
        raise InputError(f"cannot read run: {exc.strerror or exc}", args.run) from exc
    simulated = precision.simulate_run(table, args.to, args.scoring, args.hps)

    input_scores = table.column("score").to_numpy()
    output_scores = simulated.column("score").to_numpy()
    overflowed = ~np.isfinite(output_scores)  # inputs are finite (read_run checks); runs hold finite scores
    if overflowed.any():
        first = int(np.flatnonzero(overflowed)[0])
        limit = float(ml_dtypes.finfo(precision.FLOAT_DTYPES[args.to]).max)
        raise InputError(
            f"{int(overflowed.sum())} score(s) overflow {args.to} (largest finite value {limit:g}), "
            f"e.g. {float(input_scores[first])!r} for qid {table.column('qid')[first].as_py()}",
            args.run,
        )
    try:
        formats.write_run(simulated, args.out, fmt=_output_format(args.out, input_format))
    except (InputError, BrokenPipeError):  # a reader that stopped early (| head): the CLI exits 0
        raise
    except (OSError, ValueError) as exc:  # unwritable path, ids TREC text cannot hold
        raise InputError(f"cannot write run: {getattr(exc, 'strerror', None) or exc}", args.out) from exc
    mode = "HPS" if args.hps else "no HPS"
    print(f"wrote {simulated.num_rows} rows to {args.out} ({args.to}, scoring={args.scoring}, {mode})",
          file=sys.stderr if is_standard_output(args.out) else sys.stdout)
    return 0


def _output_format(out: str, input_format: str) -> str:
    """The format --out's extension names (so run.parquet is parquet), else the input's format family."""
    from evalcore.formats.detection import EXTENSION_FORMATS, strip_gz

    by_extension = EXTENSION_FORMATS.get(strip_gz(Path(out)).suffix.lower())
    return by_extension or input_format
