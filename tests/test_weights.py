"""Const decoding from the .bin, for every element type of SPEC §1's table, through real files."""

from __future__ import annotations

import numpy as np
import pytest

import irexec
from irexec.dtypes import numpy_dtype
from tests.support.irbuild import Net


def const_model(tmp_path, et, shape, raw: bytes, offset=0, size=None, convert_to=None, pad=b""):
    """A model whose only output is a Const (optionally through Convert) read from `raw`."""
    net = Net()
    net.blob += pad + raw
    attrs = {
        "element_type": et,
        "shape": ",".join(map(str, shape)),
        "offset": offset + len(pad),
        "size": len(raw) if size is None else size,
    }
    ref = net._layer("Const", "opset1", "c", attrs, [], [(et, list(shape), "c")])[0]
    if convert_to:
        ref = net.op("Convert", [ref], {"destination_type": convert_to}, out_et=convert_to, out_dims=shape)
    net.result(ref, "y")
    return irexec.load(net.save(tmp_path / "m.xml"))


@pytest.mark.parametrize("et", ["f64", "f32", "f16", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"])
def test_byte_types_little_endian(tmp_path, et):
    dt = numpy_dtype(et)
    value = (np.arange(12) * 7 - 20).astype(dt) if dt.kind != "u" else (np.arange(12) * 7).astype(dt)
    model = const_model(tmp_path, et, (3, 4), value.astype(dt.newbyteorder("<")).tobytes())
    got = model.infer({})["y"]
    assert got.dtype == dt
    np.testing.assert_array_equal(got, value.reshape(3, 4))


def test_boolean_is_one_byte(tmp_path):
    model = const_model(tmp_path, "boolean", (4,), bytes([0, 1, 1, 0]))
    np.testing.assert_array_equal(model.infer({})["y"], [False, True, True, False])


def test_u1_first_element_in_bit7(tmp_path):
    model = const_model(tmp_path, "u1", (10,), bytes([0b10110000, 0b01000000]), convert_to="u8")
    np.testing.assert_array_equal(model.infer({})["y"], [1, 0, 1, 1, 0, 0, 0, 0, 0, 1])


def test_u4_low_nibble_first(tmp_path):
    model = const_model(tmp_path, "u4", (3,), bytes([0x21, 0x0F]), convert_to="u8")
    np.testing.assert_array_equal(model.infer({})["y"], [1, 2, 15])


def test_i4_sign_extends(tmp_path):
    model = const_model(tmp_path, "i4", (4,), bytes([0xF7, 0x08]), convert_to="i8")
    np.testing.assert_array_equal(model.infer({})["y"], [7, -1, -8, 0])


def test_bf16_widens_to_float32(tmp_path):
    values = np.array([1.0, -2.5, 3.140625, np.inf], np.float32)
    words = (values.view(np.uint32) >> 16).astype("<u2")
    model = const_model(tmp_path, "bf16", (4,), words.tobytes())
    assert model.outputs[0].element_type == "bf16"
    got = model.infer({})["y"]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, values)


def test_unaligned_offset_and_larger_size_accepted(tmp_path):
    value = np.array([1.5, 2.5], np.float32)
    model = const_model(tmp_path, "f32", (2,), value.tobytes() + b"\0" * 5, size=13, pad=b"\x01\x02\x03")
    np.testing.assert_array_equal(model.infer({})["y"], value)


def test_shared_offset(tmp_path):
    net = Net()
    a = net.const(np.array([1, 2, 3], np.int32))
    b = net._layer(
        "Const",
        "opset1",
        "again",
        {"element_type": "i32", "shape": "3", "offset": 0, "size": 12},
        [],
        [("i32", [3], None)],
    )[0]
    net.result(net.op("Add", [a, b], {"auto_broadcast": "numpy"}, out_dims=[3]), "y")
    model = irexec.load(net.save(tmp_path / "m.xml"))
    np.testing.assert_array_equal(model.infer({})["y"], [2, 4, 6])


def test_const_output_is_writable_copy(tmp_path):
    model = const_model(tmp_path, "f32", (2,), np.array([1, 2], np.float32).tobytes())
    out = model.infer({})["y"]
    out[0] = 5  # results never alias the read-only memory map
    np.testing.assert_array_equal(model.infer({})["y"], [1, 2])


@pytest.mark.parametrize(
    "et,raw,shape,size", [("f32", b"\0" * 7, (2,), 7), ("u4", b"\0", (3,), 1), ("u1", b"\0", (9,), 1)]
)
def test_size_smaller_than_shape_needs(tmp_path, et, raw, shape, size):
    with pytest.raises(irexec.WeightsError, match="smaller than"):
        const_model(tmp_path, et, shape, raw, size=size)
