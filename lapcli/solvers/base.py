"""What every backend returns: the assignment in the original matrix's coordinates, plus its steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..report import StepStat


@dataclass
class BackendResult:
    rows: np.ndarray
    cols: np.ndarray
    device: str
    dtype: str
    steps: list[StepStat] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
