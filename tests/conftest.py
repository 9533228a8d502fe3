"""Shared test settings: hypothesis without wall-clock deadlines (CI machines are shared and timing is
never what a test checks) and with a bounded number of examples."""
from hypothesis import HealthCheck, settings

settings.register_profile(
    "tiebreak", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True,
)
settings.load_profile("tiebreak")
