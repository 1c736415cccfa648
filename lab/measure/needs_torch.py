"""Imported first by the scripts beside it that run PyTorch: without it, one line naming the extra to install and exit
status 1, where the script's own ``import torch`` would print a traceback."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("torch") is None:
    sys.exit(f"{Path(sys.argv[0]).name} needs PyTorch and transformers: pip install 'estimator[gpu]'")
