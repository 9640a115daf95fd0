"""Agent tests: helpers in this directory (slurm_fake) are importable by name, also under
``--import-mode=importlib``."""

import sys
from pathlib import Path

if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))
