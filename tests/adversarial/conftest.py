"""Adversarial corpus: helpers in this directory (cases, inject) are importable by name."""

import sys
from pathlib import Path

if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))
