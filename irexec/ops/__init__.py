"""Layer implementations. Importing this package registers every op."""

from . import elementwise, onnx, reduce, structural  # noqa: F401
from .registry import lookup, supported

__all__ = ["lookup", "supported"]
