"""The Ties & precision what-if's Run box labels (UI review: the options held each run's file name and were cut
off mid-name): "MODEL · TASK", the file name only where two runs would otherwise look the same."""
from page_code import page_function


def _run_labels():
    return page_function("ties-and-precision.py", "_run_labels")


def test_labels_are_model_and_task_without_the_file_name():
    runs = {"rar-b_ARCChallenge_full_all-MiniLM-L6-v2_fp32.parquet":
            {"system": "tiebreak-run/all-MiniLM-L6-v2", "task": "ARCChallenge"},
            "rar-b_WinoGrande_full_all-MiniLM-L6-v2_fp32.parquet":
            {"system": "tiebreak-run/all-MiniLM-L6-v2", "task": "WinoGrande"}}
    assert _run_labels()(runs) == {"rar-b_ARCChallenge_full_all-MiniLM-L6-v2_fp32.parquet":
                                   "all-MiniLM-L6-v2 · ARCChallenge",
                                   "rar-b_WinoGrande_full_all-MiniLM-L6-v2_fp32.parquet":
                                   "all-MiniLM-L6-v2 · WinoGrande"}


def test_two_runs_of_one_model_and_task_keep_their_file_names_apart():
    runs = {"a.parquet": {"system": "org/m", "task": "T"}, "b.parquet": {"system": "other/m", "task": "T"},
            "c.parquet": {"system": "org/m", "task": "U"}}
    assert _run_labels()(runs) == {"a.parquet": "m · T (a.parquet)", "b.parquet": "m · T (b.parquet)",
                                   "c.parquet": "m · U"}
