"""`irexec batch`: one model over many samples on Dask (placeholder wiring; see add_batch_parser)."""

from __future__ import annotations


def add_batch_parser(sub, common, feeds) -> None:
    """Register the `batch` subcommand (implemented with Dask, imported only when it runs)."""
    return None
