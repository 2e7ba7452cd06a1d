"""Dask arrays through a model: `irexec.dask.infer(model_path, {name: dask_array}, batch_axis=0)`
maps the model over the chunks of the batch axis and returns {output name: dask array}, lazily,
so zarr- or xarray-backed data runs out of core. Each worker process loads the model once.

Every input is rechunked to whole rows along the other axes; the inputs must have the same
chunks along the batch axis, and every output has its batch on the same axis. Imported only on
use (`import irexec.dask`); needs `pip install "irexec[dask]"`.
"""

from __future__ import annotations

import numpy as np

from .batch import _model


def _run(source, names, *blocks):
    return dict(_model(source).infer(dict(zip(names, blocks))))


def infer(model_path, inputs: dict, batch_axis: int = 0) -> dict:
    import dask
    import dask.array as da

    from .model import load

    model = load(model_path)
    names = list(inputs)
    arrays = []
    chunks = None
    for name in names:
        a = da.asarray(inputs[name])
        wanted = tuple(a.chunks[i] if i == batch_axis else (a.shape[i],) for i in range(a.ndim))
        a = a.rechunk(wanted)
        if chunks is None:
            chunks = a.chunks[batch_axis]
        elif a.chunks[batch_axis] != chunks:
            a = a.rechunk({batch_axis: chunks})
        arrays.append(a)
    source = str(model_path)
    parts: dict = {o.name: [] for o in model.outputs}
    for i, n in enumerate(chunks):
        blocks = [a.blocks[tuple(i if d == batch_axis else 0 for d in range(a.ndim))] for a in arrays]
        result = dask.delayed(_run, pure=True)(source, names, *blocks)
        for info in model.outputs:
            if info.shape is None or any(d is None for j, d in enumerate(info.shape) if j != batch_axis):
                probe = _run(source, names, *(b.compute() for b in blocks))
                shape = probe[info.name].shape
            else:
                shape = tuple(n if j == batch_axis else d for j, d in enumerate(info.shape))
            parts[info.name].append(da.from_delayed(result[info.name], shape, dtype=np.dtype(info.dtype)))
    return {k: da.concatenate(v, axis=batch_axis) for k, v in parts.items()}
