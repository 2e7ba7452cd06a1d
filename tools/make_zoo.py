"""Build the zoo: tiny-config, random-weight models of real architectures, converted to IR by
OpenVINO, with seeded inputs and OpenVINO CPU's outputs, as small test data (tests/zoo/).

Needs torch, torchvision, timm, transformers, openvino and onnx (NOT the test suite's deps):

    python3 -m venv /tmp/zoo && /tmp/zoo/bin/pip install torch==2.14.1 torchvision==0.29.1 \
        timm transformers openvino onnx lxml numpy
    /tmp/zoo/bin/python -m tools.make_zoo [--only NAME ...] [--out tests/zoo]

Each model: built seeded in eval mode with tiny widths; `ov.convert_model` (the PyTorch
frontend, from torch.jit tracing or, for ViT and Whisper, from torch.export; three also through
`torch.onnx.export` and the ONNX frontend, the f32 ONNX file kept as `NAME_onnx.onnx`) and
`ov.save_model` with its default f16 weight compression; then OpenVINO CPU
(INFERENCE_PRECISION_HINT f32) runs the saved IR on seeded inputs. `NAME.npz` holds
`in:<input name>` and `out:<output name>` arrays (names as irexec derives them from the XML) and
`meta` (JSON). Also printed: OpenVINO against torch on the same inputs, as a check of the
conversion itself.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


# ---- the models ---------------------------------------------------------------------------------


def _image(seed, shape=(1, 3, 32, 32)):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _tokens(seed, n=8, vocab=100):
    return np.random.default_rng(seed).integers(0, vocab, size=(1, n)).astype(np.int64)


def resnet18():
    import torch.nn as nn
    from torchvision.models.resnet import BasicBlock, conv1x1

    class TinyResNet(nn.Module):
        """ResNet-18's layout (stem, 4 stages of 2 BasicBlocks, avgpool, fc) at widths 8..64."""

        def __init__(self, widths=(8, 16, 32, 64), classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(widths[0])
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            layers, cin = [], widths[0]
            for i, w in enumerate(widths):
                stride = 1 if i == 0 else 2
                down = None if stride == 1 and cin == w else nn.Sequential(conv1x1(cin, w, stride), nn.BatchNorm2d(w))
                layers.append(nn.Sequential(BasicBlock(cin, w, stride, down), BasicBlock(w, w)))
                cin = w
            self.layers = nn.Sequential(*layers)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            return self.fc(self.avgpool(self.layers(x)).flatten(1))

    return TinyResNet(), {"x": _image(1)}


def squeezenet():
    import torch.nn as nn
    from torchvision.models.squeezenet import Fire

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, 2),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(16, 4, 8, 8),
        Fire(16, 4, 8, 8),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(16, 8, 16, 16),
        nn.Dropout(0.5),
        nn.Conv2d(32, 10, 1),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )
    return model, {"x": _image(2, (1, 3, 48, 48))}


def mobilenet_v3():
    from torchvision.models.mobilenetv3 import MobileNetV3, _mobilenet_v3_conf

    setting, _ = _mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25)
    return MobileNetV3(setting[:5], last_channel=64, num_classes=10), {"x": _image(3, (1, 3, 64, 64))}


def efficientnet_b0():
    from functools import partial

    from torchvision.models.efficientnet import EfficientNet, MBConvConfig

    conf = partial(MBConvConfig, width_mult=0.25, depth_mult=0.25)
    setting = [conf(1, 3, 1, 32, 16, 1), conf(6, 3, 2, 16, 24, 2), conf(6, 5, 2, 24, 40, 2), conf(6, 3, 2, 40, 80, 3)]
    return EfficientNet(setting, dropout=0.2, last_channel=64, num_classes=10), {"x": _image(4)}


def convnext():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    setting = [CNBlockConfig(8, 16, 1), CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)]
    return ConvNeXt(setting, stochastic_depth_prob=0.0, num_classes=10), {"x": _image(5)}


def shufflenet_v2():
    from torchvision.models.shufflenetv2 import ShuffleNetV2

    return ShuffleNetV2([1, 1, 1], [8, 16, 32, 64, 64], num_classes=10), {"x": _image(6, (1, 3, 64, 64))}


def vit():
    from torchvision.models.vision_transformer import VisionTransformer

    # 224: torchvision's ViT takes only image_size x image_size inputs (it asserts the size and adds
    # all its position embeddings), so the test input is 224x224 too; 16x16 patches: ViT-B/16's 196
    model = VisionTransformer(
        image_size=224, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=10
    )
    import torch

    with torch.no_grad():  # torchvision zero-initializes the head: the output would be all zeros
        torch.nn.init.normal_(model.heads.head.weight, std=0.2)
        torch.nn.init.normal_(model.heads.head.bias, std=0.2)
    return model, {"x": _image(7, (1, 3, 224, 224))}


def timm_vit():
    import timm

    model = timm.create_model(
        "vit_tiny_patch16_224",
        pretrained=False,
        img_size=224,  # position embeddings for 224x224 (timm's dynamic_img_size resamples them with
        patch_size=16,  # an antialiased Interpolate, which irexec refuses): the test input is 224x224
        embed_dim=32,
        depth=2,
        num_heads=2,
        num_classes=10,
    )
    return model, {"x": _image(8, (1, 3, 224, 224))}


def bert():
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,  # tools/bench_models.py runs it at 128 and 512 tokens
        attn_implementation="sdpa",
    )
    mask = np.ones((1, 8), np.int64)
    mask[0, 6:] = 0
    return BertModel(cfg), {"input_ids": _tokens(9), "attention_mask": mask}


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        vocab_size=100, n_positions=64, n_embd=32, n_layer=2, n_head=2, use_cache=False, attn_implementation="sdpa"
    )
    return GPT2LMHeadModel(cfg), {"input_ids": _tokens(10), "attention_mask": np.ones((1, 8), np.int64)}


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
        attn_implementation="sdpa",
    )
    return LlamaForCausalLM(cfg), {"input_ids": _tokens(11), "attention_mask": np.ones((1, 8), np.int64)}


def t5():
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = T5Config(
        vocab_size=100,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=4,
        decoder_start_token_id=0,
        use_cache=False,
    )
    return T5ForConditionalGeneration(cfg), {
        "input_ids": _tokens(12),
        "attention_mask": np.ones((1, 8), np.int64),
        "decoder_input_ids": _tokens(13, 4),
    }


def whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    cfg = WhisperConfig(
        vocab_size=100,
        num_mel_bins=16,
        encoder_layers=1,
        decoder_layers=1,
        d_model=32,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=1500,  # 30 s: the encoder takes exactly 2 x max_source_positions frames
        max_target_positions=16,
        use_cache=False,
        decoder_start_token_id=1,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    feats = np.random.default_rng(14).standard_normal((1, 16, 3000)).astype(np.float32)
    return WhisperForConditionalGeneration(cfg), {
        "input_features": feats,
        "decoder_input_ids": _tokens(15, 4),
        "decoder_position_ids": np.arange(4, dtype=np.int64)[None],
    }


def wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    cfg = Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_kernel=(10, 3),
        conv_stride=(5, 2),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        feat_extract_norm="group",
        do_stable_layer_norm=False,
    )
    audio = np.random.default_rng(16).standard_normal((1, 400)).astype(np.float32)
    return Wav2Vec2Model(cfg), {"input_values": audio}


# Axes converted dynamic, by model and input: {axis: name} (the batch axis stays as each path
# leaves it): tools/bench_models.py runs the models at real sizes, which the Reshape/Broadcast
# constants of a conversion specialized to the test inputs would not take. The ViTs and Whisper's
# encoder take only the size their config is for (image_size; 2 x max_source_positions frames:
# their forward checks it), so their configs are for the real sizes and their test inputs are too.
DYNAMIC = {"bert": {"input_ids": {1: "tokens"}, "attention_mask": {1: "tokens"}}}


MODELS = {
    "resnet18": (resnet18, "torchvision", ("onnx",)),
    "squeezenet": (squeezenet, "torchvision", ()),
    "mobilenet_v3": (mobilenet_v3, "torchvision", ("onnx",)),
    "efficientnet_b0": (efficientnet_b0, "torchvision", ()),
    "convnext": (convnext, "torchvision", ()),
    "shufflenet_v2": (shufflenet_v2, "torchvision", ()),
    "vit": (vit, "torchvision", ("export",)),
    "timm_vit": (timm_vit, "timm", ()),
    "bert": (bert, "transformers", ("onnx",)),
    "gpt2": (gpt2, "transformers", ()),
    "llama": (llama, "transformers", ()),
    "t5": (t5, "transformers", ()),
    "whisper": (whisper, "transformers", ("export",)),
    "wav2vec2": (wav2vec2, "transformers", ()),
}


# ---- conversion --------------------------------------------------------------------------------


def _wrap(model, inputs):
    """A module taking the inputs positionally, returning plain tensors (transformers' models
    return dataclasses; the image models take one positional input)."""
    import torch

    names = list(inputs)

    class Positional(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, *args):
            if names == ["x"]:
                out = self.inner(*args)
            else:
                out = self.inner(**dict(zip(names, args)), return_dict=False)
            if isinstance(out, (tuple, list)):
                return tuple(o for o in out if isinstance(o, torch.Tensor))
            return out

    return Positional().eval()


def _torch_out(model, inputs):
    import torch

    with torch.no_grad():
        out = model(*(torch.from_numpy(v) for v in inputs.values()))
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if not isinstance(out, (tuple, list)):
        out = (out,)
    return [o.numpy() for o in out if hasattr(o, "numpy")]


def io_names(xml: Path):
    """Input and output names as irexec derives them (see irexec/model.py)."""
    from lxml import etree

    root = etree.parse(str(xml)).getroot()
    top = root.findall("layers/layer")  # not the layers of If/Loop/TensorIterator bodies
    layers = {el.get("id"): el for el in top}
    edges = {
        (e.get("to-layer"), e.get("to-port")): (e.get("from-layer"), e.get("from-port"))
        for e in root.findall("edges/edge")
    }

    def port_names(el, pid):
        for p in el.iter("port"):
            if p.get("id") == pid and p.getparent().tag == "output" and p.get("names"):
                return [n.replace("\\,", ",") for n in p.get("names").replace("\\,", "\x00").split(",")]
        return []

    ins, outs = [], []
    for el in top:
        if el.get("type") == "Parameter":
            out_port = el.find("output/port")
            names = port_names(el, out_port.get("id")) if out_port is not None else []
            ins.append(names[0].replace("\x00", ",") if names else el.get("name"))
        elif el.get("type") == "Result":
            listed = el.get("output_names")
            if listed:
                outs.append(listed.split(",")[0])
                continue
            in_port = el.find("input/port").get("id")
            src, sport = edges[(el.get("id"), in_port)]
            names = port_names(layers[src], sport)
            outs.append(names[0].replace("\x00", ",") if names else el.get("name"))
    return ins, outs


def build(name: str, out_dir: Path) -> list[dict]:
    import openvino as ov
    import torch

    fn, family, extra = MODELS[name]
    torch.manual_seed(0)
    model, inputs = fn()
    model.eval()
    model = _wrap(model, inputs)
    ref = _torch_out(model, inputs)
    rows = []
    variants = [("pytorch", name)] + [("onnx", f"{name}_onnx") for e in extra if e == "onnx"]
    dynamic = DYNAMIC.get(name, {})
    for frontend, stem in variants:
        example = tuple(torch.from_numpy(v) for v in inputs.values())
        if frontend == "pytorch" and "export" in extra:
            # torch.jit tracing fails on these (torchvision ViT's asserts, transformers' aten::diff):
            # OpenVINO converts the torch.export program instead
            ovm = ov.convert_model(torch.export.export(model, example))
            for port, nm in zip(ovm.inputs, inputs):
                port.get_tensor().set_names({nm})
        elif frontend == "pytorch":
            kw = {}
            if dynamic:
                kw["input"] = [
                    ov.PartialShape([-1 if ax == 0 or ax in dynamic.get(nm, {}) else n for ax, n in enumerate(v.shape)])
                    for nm, v in inputs.items()
                ]
            ovm = ov.convert_model(model, example_input=example, **kw)
            for port, nm in zip(ovm.inputs, inputs):
                port.get_tensor().set_names({nm})
        else:
            path = out_dir / f"{stem}.onnx"  # kept: tools/bench_models.py times onnxruntime on it
            axes = {nm: dynamic[nm] for nm in inputs if nm in dynamic} or None
            torch.onnx.export(
                model, example, str(path), input_names=list(inputs), dynamo=False, opset_version=17, dynamic_axes=axes
            )
            ovm = ov.convert_model(str(path))
        xml = out_dir / f"{stem}.xml"
        ov.save_model(ovm, str(xml))
        in_names, out_names = io_names(xml)
        core = ov.Core()
        compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        feeds = {}
        for port, nm in zip(compiled.inputs, in_names):
            key = next((k for k in inputs if k in port.get_names() or k == nm), None)
            if key is None:
                key = list(inputs)[len(feeds)]
            arr = inputs[key]
            feeds[nm] = (
                arr.astype(port.get_element_type().to_dtype()) if hasattr(port.get_element_type(), "to_dtype") else arr
            )
        res = compiled([feeds[n] for n in in_names])
        outs = [np.asarray(res[o]) for o in compiled.outputs]
        data = {f"in:{k}": v for k, v in feeds.items()}
        data.update({f"out:{k}": v for k, v in zip(out_names, outs)})
        meta = {"family": family, "frontend": frontend, "openvino": ov.get_version(), "source": name}
        data["meta"] = np.array(json.dumps(meta))
        np.savez_compressed(out_dir / f"{stem}.npz", **data)
        diff = max(
            (float(np.max(np.abs(a - b))) for a, b in zip(outs, ref) if a.shape == b.shape), default=float("nan")
        )
        size = xml.stat().st_size + xml.with_suffix(".bin").stat().st_size
        rows.append(
            {"model": stem, "bytes": size, "ov_vs_torch": diff, "inputs": {k: list(v.shape) for k, v in feeds.items()}}
        )
        print(
            f"{stem:<20} {size / 1024:8.1f} KiB  OV vs torch max abs {diff:.2e}  inputs {rows[-1]['inputs']}",
            flush=True,
        )
    return rows


def run_builders(doc: str, models, build) -> None:
    """The command line the zoo builders share: `--only NAME ...`, `--out DIR`; every model is
    built, and one that fails is reported without hiding the others (exit 1 at the end)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--out", default=str(ROOT / "tests" / "zoo"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in args.only or models:
        try:
            build(name, out)
        except Exception as e:  # report and go on: one broken model must not hide the others
            failed.append(name)
            print(f"{name}: FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
    if failed:
        sys.exit(f"failed: {failed}")


def main():
    run_builders(__doc__, MODELS, build)


if __name__ == "__main__":
    main()
