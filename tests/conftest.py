"""Shared test settings: hypothesis without wall-clock deadlines (CI machines are shared and timing is
never what a test checks) and with a bounded number of examples."""
from hypothesis import HealthCheck, settings

settings.register_profile(
    "tiebreak", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True,
)
settings.load_profile("tiebreak")


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _private_sums_cache(tmp_path_factory):
    """The store's on-disk sums cache goes to a per-session temp folder (inherited by subprocesses), never
    to the user's ~/.cache."""
    import os

    folder = tmp_path_factory.mktemp("tiebreak-cache")
    previous = os.environ.get("TIEBREAK_CACHE")
    os.environ["TIEBREAK_CACHE"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("TIEBREAK_CACHE", None)
    else:
        os.environ["TIEBREAK_CACHE"] = previous
