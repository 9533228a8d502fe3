"""The dashboard's main script: Streamlit runs it on every rerun (``app.py`` serves it as an ``st.App``).
It holds nothing else; the page table and the frame are in ``ui/navigation.py``."""
import sys
from pathlib import Path

REPO_ROOT = str(Path(__file__).resolve().parents[2])
if REPO_ROOT not in sys.path:  # Streamlit puts this script's folder on sys.path, not the repository's
    sys.path.insert(0, REPO_ROOT)

from ui import navigation  # noqa: E402

navigation.run()
