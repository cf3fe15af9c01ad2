"""The contract suite's shared specs (``contract_specs``) are importable from its tests
and from the platform's (``tests/stack/training/test_contract.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
