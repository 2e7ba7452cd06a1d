"""irexec: run and check OpenVINO IR graphs in Python, with numba reduction kernels.

Public API: `load`, `Model`, `TensorInfo`, `Limits`, and the error classes.
"""

from .errors import (
    ExecutionError,
    FormatError,
    InputError,
    IRExecError,
    LimitError,
    ShapeInferenceError,
    UnsupportedDtypeError,
    UnsupportedOpError,
    UsageError,
    WeightsError,
)
from .limits import Limits
from .model import Issue, LayerInfo, Model, TensorInfo, ValidationReport, load

__version__ = "0.1.0"

__all__ = [
    "load",
    "Model",
    "TensorInfo",
    "LayerInfo",
    "Issue",
    "ValidationReport",
    "Limits",
    "IRExecError",
    "FormatError",
    "WeightsError",
    "UnsupportedOpError",
    "UnsupportedDtypeError",
    "ShapeInferenceError",
    "InputError",
    "LimitError",
    "ExecutionError",
    "UsageError",
    "__version__",
]
