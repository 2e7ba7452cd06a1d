"""The reduction kernels: `kinds` (one record per reduction kind), `plan` (axes -> canonical
groups -> kernel passes, in plain Python), `loops` (the @njit kernels; importing it imports numba).
"""

from .kinds import KINDS, ReduceKind
from .plan import mean_broadcast, reduce_array, reduce_call

__all__ = ["KINDS", "ReduceKind", "mean_broadcast", "reduce_array", "reduce_call"]
