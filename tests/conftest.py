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
