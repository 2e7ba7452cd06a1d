"""Fixtures shared by the OpenVINO-oracle test files: each corpus is built once per session."""

from __future__ import annotations

import pytest

from tests.support import ov_corpus as oc


@pytest.fixture(scope="session")
def opset13(tmp_path_factory):
    pytest.importorskip("openvino")
    return oc.opset13_corpus(tmp_path_factory)


@pytest.fixture(scope="session")
def onnx_cases(tmp_path_factory):
    pytest.importorskip("openvino")
    pytest.importorskip("onnx")
    return oc.onnx_corpus(tmp_path_factory)


# openvino_tokenizers (the tokenizer ops' oracle) patches OpenVINO for the whole process when it is
# imported or its node factory is used: every Core and FrontEnd loads its extension, and every
# NodeFactory made afterwards builds its legacy `extension` string ops (which OpenVINO's own
# opset15 string builders then return). Tests that need the extension ask for
# `tokenizers_extension`; after every test OpenVINO is put back as it was before any patch.
try:
    import openvino as _ov
    from openvino.frontend.frontend import FrontEnd as _FrontEnd
    from openvino.utils.node_factory import NodeFactory as _NodeFactory

    _PRISTINE = (_ov.Core.__init__, _FrontEnd.__init__, _NodeFactory.__init__)
except ImportError:  # pragma: no cover - openvino is in the test extra
    _PRISTINE = None


@pytest.fixture(autouse=True)
def _blas_as_on_a_loaded_machine(monkeypatch):
    """Products keep irexec's cap and split in every test (`tests/test_blas_threads.py` tests the
    quiet-machine rule itself): on an idle machine they would run on OpenBLAS's threads, and the
    kernels' thread counts that tests assert would depend on whether the machine was idle during
    a product in the last 0.1 s (`jit.cores_taken`)."""
    from irexec import config
    from irexec.kernels import jit

    monkeypatch.setattr(config, "BLAS_QUIET_FLOPS", 0)
    jit.cores_taken(0)


@pytest.fixture(autouse=True)
def _register_tiles_on_any_machine(monkeypatch):
    """The register-tile kernels run wherever the tests run (on AVX2 the dispatch leaves them to
    BLAS: `jit.wide_vectors`), so the tests that assert their paths hold on any machine;
    `tests/test_conv_kernels.py` tests the rule itself."""
    from irexec.kernels import jit

    monkeypatch.setattr(jit, "wide_vectors", lambda: True)


@pytest.fixture(autouse=True)
def _openvino_unpatched():
    yield
    if _PRISTINE is not None:
        _ov.Core.__init__, _FrontEnd.__init__, _NodeFactory.__init__ = _PRISTINE


@pytest.fixture
def tokenizers_extension():
    """openvino_tokenizers with its extension active in OpenVINO for this test only."""
    ovt = pytest.importorskip("openvino_tokenizers")
    _ov.Core.__init__ = ovt.new_core_init
    _FrontEnd.__init__ = ovt.new_fe_init
    oc.ov_core.cache_clear()  # the shared Core is made anew, with the extension, for this test
    yield ovt
    oc.ov_core.cache_clear()  # and anew without it afterwards
