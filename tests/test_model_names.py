"""evalcore.model_names: which names of a board denote one model."""
from evalcore.model_names import model_key, same_model_groups


def test_key_is_the_name_after_the_organisation_ignoring_case():
    assert model_key("GritLM/GritLM-7B") == model_key("GritLM-7B") == "gritlm-7b"
    assert model_key("BAAI/bge-large-en-v1.5") == model_key("BGE-Large-en-v1.5")
    assert model_key("tiebreak-run/all-MiniLM-L6-v2") == model_key("sentence-transformers/all-MiniLM-L6-v2")
    assert model_key("mteb/baseline-bm25s") != model_key("BM25")  # two implementations, not one model


def test_groups_keep_order_and_drop_singletons_and_repeats():
    names = ["GritLM-7B", "BM25", "e5", "GritLM/GritLM-7B", "GritLM-7B", "x/E5", "y/e5"]
    assert same_model_groups(names) == [["GritLM-7B", "GritLM/GritLM-7B"], ["e5", "x/E5", "y/e5"]]
    assert same_model_groups(["a", "b", "org/c"]) == []
