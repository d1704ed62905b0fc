#!/usr/bin/env python3
"""Adds the exporter-made part of the public model suite (docs/model-suite.md, "Exported models"):
real architectures (transformers, torchvision classifiers, segmentation and detection networks) built
from their definitions with seeded random weights, exported with torch.onnx.export into DIR/exported/,
and added to DIR/manifest.json in the format fetch_suite.py writes (source "export:torch==X ..."),
beside the models already there. No weights are downloaded: transformers models come from their Config
classes, torchvision ones from weights=None.

Run it with the export venv's python (torch, torchvision, transformers, onnx), which
scripts/models/export_suite.sh makes:
  export_suite.py --dir DIR [--models a,b] [--force]

Exporter: the TorchScript-based one (torch.onnx.export(..., dynamo=False)) at opset 17, what most
users' exports are and what the torch.onnx tutorials produced until torch 2.9 made dynamo=True the
default. Idempotent: a model whose file is in DIR with the SHA-256 recorded for the same recipe (the
versions, the exporter and the model's settings) is not exported again. One line naming the model and
exit 2 on a failure.
"""
import argparse
import hashlib
import json
import os
import random
import re
import sys
import warnings

# One file hash and one .npy writer for both halves of the suite: fetch_suite.py's.
sys.dont_write_bytecode = True  # no __pycache__ beside the scripts in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fetch_suite import sha256, write_npy  # noqa: E402

EXPORT_DIR = "exported"
OPSET = 17
RECIPES = "exported/recipes.json"


def die(msg):
    print("export_suite: " + msg, file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------------
# The models. Each: name, task, lib and arch (for the source string), build() -> the torch module, wrap
# (turns its output into a tuple of tensors), inputs (name, dtype, example shape, dynamic axes), output
# names, the manifest's dims, and the rules for the inputs that must not be random (token ids within the
# vocabulary, masks of ones), in fetch_suite.py's form.

def hf(cls_name, cfg_name, **cfg):
    def build():
        import transformers
        config = getattr(transformers, cfg_name)(**cfg)
        # Eager attention: the attention as MatMul/Softmax/MatMul, what an exported transformer looks
        # like whichever backend the user trains with (sdpa exports to the same ops at opset 17).
        config._attn_implementation = "eager"
        return getattr(transformers, cls_name)(config)
    return build


class First:
    """Wraps a module whose output is a ModelOutput or dict: the listed fields, as a tuple."""

    def __init__(self, fields, names=None):
        self.fields = fields
        self.names = names  # the forward's keyword for each input, where they are not its first parameters

    def __call__(self, module):
        import torch

        fields, names = self.fields, self.names

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = module

            def forward(self, *args):
                out = self.m(**dict(zip(names, args))) if names else self.m(*args)
                return tuple(out[f] for f in fields)

        return Wrapped()


def tv(fn, **kw):
    def build():
        import torchvision
        return getattr(torchvision.models, fn)(weights=None, **kw)
    return build


def tv_seg(fn):
    def build():
        import torchvision
        return getattr(torchvision.models.segmentation, fn)(weights=None, weights_backbone=None)
    return build


def tv_det(fn):
    def build():
        import torchvision
        return getattr(torchvision.models.detection, fn)(weights=None, weights_backbone=None)
    return build


class DetectionWrapper:
    """torchvision detection models take a list of 3-D images and return a list of dicts: one image in,
    boxes, scores and labels out, as users export them."""

    def __call__(self, module):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = module

            def forward(self, image):
                out = self.m([image])[0]
                return out["boxes"], out["scores"], out["labels"]

        return Wrapped()


def ids(vocab, shape):
    return {"dtype": "int64", "shape": shape, "int_range": [0, vocab]}


def ones(shape):
    return {"dtype": "int64", "shape": shape, "value": 1}


def zeros(shape):
    return {"dtype": "int64", "shape": shape, "value": 0}


SEQ_BERT = 128
SEQ_GPT = 128

MODELS = [
    dict(name="bert-base", task="transformer", lib="transformers", arch="BertModel(BertConfig())",
         build=hf("BertModel", "BertConfig"), wrap=First(["last_hidden_state", "pooler_output"]),
         inputs=[("input_ids", "int64", [1, SEQ_BERT], {0: "batch", 1: "sequence"}),
                 ("attention_mask", "int64", [1, SEQ_BERT], {0: "batch", 1: "sequence"}),
                 ("token_type_ids", "int64", [1, SEQ_BERT], {0: "batch", 1: "sequence"})],
         outputs=["last_hidden_state", "pooler_output"],
         dims=["batch=1", "sequence=%d" % SEQ_BERT],
         rules={"input_ids": ids(30522, [1, SEQ_BERT]), "attention_mask": ones([1, SEQ_BERT]),
                "token_type_ids": zeros([1, SEQ_BERT])},
         note="BERT-base encoder (12 layers, hidden 768, 12 heads), sequence 128, random weights"),
    dict(name="minilm-l6", task="transformer", lib="transformers",
         arch="BertModel(BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, "
              "intermediate_size=1536))",
         build=hf("BertModel", "BertConfig", hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                  intermediate_size=1536),
         wrap=First(["last_hidden_state"]),
         inputs=[("input_ids", "int64", [1, SEQ_BERT], {0: "batch", 1: "sequence"}),
                 ("attention_mask", "int64", [1, SEQ_BERT], {0: "batch", 1: "sequence"}),
                 ("token_type_ids", "int64", [1, SEQ_BERT], {0: "batch", 1: "sequence"})],
         outputs=["last_hidden_state"],
         dims=["batch=1", "sequence=%d" % SEQ_BERT],
         rules={"input_ids": ids(30522, [1, SEQ_BERT]), "attention_mask": ones([1, SEQ_BERT]),
                "token_type_ids": zeros([1, SEQ_BERT])},
         note="MiniLM-L6 shape (all-MiniLM-L6-v2's BERT: 6 layers, hidden 384, 12 heads), sequence 128"),
    dict(name="gpt2-small", task="transformer", lib="transformers", arch="GPT2Model(GPT2Config(use_cache=False))",
         build=hf("GPT2Model", "GPT2Config", use_cache=False), wrap=First(["last_hidden_state"], ["input_ids", "attention_mask"]),
         # With an attention mask, as users export it (and without one, transformers 5 looks for packed
         # sequences in the position ids with torch.diff, which the TorchScript exporter cannot export).
         inputs=[("input_ids", "int64", [1, SEQ_GPT], {0: "batch", 1: "sequence"}),
                 ("attention_mask", "int64", [1, SEQ_GPT], {0: "batch", 1: "sequence"})],
         outputs=["last_hidden_state"],
         dims=["batch=1", "sequence=%d" % SEQ_GPT],
         rules={"input_ids": ids(50257, [1, SEQ_GPT]), "attention_mask": ones([1, SEQ_GPT])},
         note="GPT-2 small decoder (12 layers, hidden 768, causal mask), sequence 128, no KV cache"),
    dict(name="deit-small", task="transformer", lib="transformers",
         arch="ViTModel(ViTConfig(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, "
              "intermediate_size=1536))",
         build=hf("ViTModel", "ViTConfig", hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                  intermediate_size=1536),
         wrap=First(["last_hidden_state"]),
         inputs=[("pixel_values", "float32", [1, 3, 224, 224], {0: "batch"})],
         outputs=["last_hidden_state"], dims=["batch=1"], rules={},
         note="DeiT-small / ViT-S/16 shape (12 layers, hidden 384, 6 heads), 224x224"),
    dict(name="whisper-tiny-encoder", task="speech", lib="transformers",
         arch="WhisperModel(WhisperConfig()).encoder (tiny: 4 layers, d_model 384)",
         build=lambda: hf("WhisperModel", "WhisperConfig")().get_encoder(), wrap=First(["last_hidden_state"]),
         inputs=[("input_features", "float32", [1, 80, 3000], {0: "batch"})],
         outputs=["last_hidden_state"], dims=["batch=1"], rules={},
         note="Whisper tiny encoder (two Conv1d, 4 layers, d_model 384), 30 s of 80 log-mel bins"),
    dict(name="resnet50", task="classification", lib="torchvision", arch="resnet50",
         build=tv("resnet50"), wrap=None,
         inputs=[("input", "float32", [1, 3, 224, 224], {0: "batch"})], outputs=["logits"],
         dims=["batch=1"], rules={}, note="torchvision ResNet-50, 224x224"),
    dict(name="mobilenet-v3-large", task="classification", lib="torchvision", arch="mobilenet_v3_large",
         build=tv("mobilenet_v3_large"), wrap=None,
         inputs=[("input", "float32", [1, 3, 224, 224], {0: "batch"})], outputs=["logits"],
         dims=["batch=1"], rules={}, note="torchvision MobileNetV3-Large, 224x224 (HardSwish, squeeze-excite)"),
    dict(name="efficientnet-b0", task="classification", lib="torchvision", arch="efficientnet_b0",
         build=tv("efficientnet_b0"), wrap=None,
         inputs=[("input", "float32", [1, 3, 224, 224], {0: "batch"})], outputs=["logits"],
         dims=["batch=1"], rules={}, note="torchvision EfficientNet-B0, 224x224 (SiLU, squeeze-excite)"),
    dict(name="lraspp-mobilenet-v3", task="segmentation", lib="torchvision",
         arch="segmentation.lraspp_mobilenet_v3_large",
         build=tv_seg("lraspp_mobilenet_v3_large"), wrap=First(["out"]),
         inputs=[("input", "float32", [1, 3, 520, 520], {0: "batch"})], outputs=["out"],
         dims=["batch=1"], rules={}, note="torchvision LR-ASPP MobileNetV3-Large, 21 classes, 520x520"),
    dict(name="deeplabv3-mobilenet-v3", task="segmentation", lib="torchvision",
         arch="segmentation.deeplabv3_mobilenet_v3_large",
         build=tv_seg("deeplabv3_mobilenet_v3_large"), wrap=First(["out"]),
         inputs=[("input", "float32", [1, 3, 520, 520], {0: "batch"})], outputs=["out"],
         dims=["batch=1"], rules={},
         note="torchvision DeepLabV3 MobileNetV3-Large (dilated convolutions, ASPP), 21 classes, 520x520"),
    dict(name="ssdlite320-mobilenet-v3", task="detection", lib="torchvision",
         arch="detection.ssdlite320_mobilenet_v3_large",
         build=tv_det("ssdlite320_mobilenet_v3_large"), wrap=DetectionWrapper(), calibrate_batchnorm=True,
         inputs=[("image", "float32", [3, 320, 320], {})], outputs=["boxes", "scores", "labels"],
         dims=[], rules={},
         note="torchvision SSDlite320 MobileNetV3-Large with its post-processing (resize, box decoding, "
              "TopK, batched NonMaxSuppression), one 320x320 image"),
]


# ---------------------------------------------------------------------------------------------------

def versions():
    import onnx
    import torch
    import torchvision
    import transformers
    return {"torch": torch.__version__.split("+")[0], "torchvision": torchvision.__version__.split("+")[0],
            "transformers": transformers.__version__, "onnx": onnx.__version__}


def source_of(m, v):
    libs = "torch==%s %s==%s" % (v["torch"], m["lib"], v[m["lib"]])
    return "export:%s %s" % (libs, m["arch"])


def recipe_key(m, v):
    spec = {"source": source_of(m, v), "opset": OPSET, "exporter": "torchscript", "onnx": v["onnx"],
            "batchnorm": "calibrated on 2 seeded images" if m.get("calibrate_batchnorm") else None,
            "inputs": [(n, d, s, sorted(ax.items())) for n, d, s, ax in m["inputs"]], "seed": seed_of(m)}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def seed_of(m):
    return int(hashlib.sha256(m["name"].encode()).hexdigest()[:8], 16)


def example_inputs(m):
    """The example arguments the exporter traces with: the rule's values where there is one (token
    ids inside the vocabulary), else seeded uniform [0, 1)."""
    import torch
    out = []
    for name, dtype, shape, _ in m["inputs"]:
        rule = m["rules"].get(name)
        if rule:
            out.append(torch.tensor(rule_values(m, name, rule), dtype=getattr(torch, rule["dtype"])).reshape(rule["shape"]))
        else:
            g = torch.Generator().manual_seed(seed_of(m))
            out.append(torch.rand(*shape, generator=g, dtype=getattr(torch, dtype)))
    return tuple(out)


def rule_values(m, name, rule):
    """The values of a rule, flat, as fetch_suite.py makes them (random.Random seeded by 'MODEL/INPUT')."""
    count = 1
    for d in rule["shape"]:
        count *= d
    if "value" in rule:
        return [rule["value"]] * count
    lo, hi = rule["int_range"]
    rng = random.Random("%s/%s" % (m["name"], name))
    return [rng.randrange(lo, hi) for _ in range(count)]


def calibrate_batchnorm(module, m):
    """Random convolution weights with BatchNormalization's initial statistics (mean 0, variance 1) let the
    activations shrink layer by layer: SSDlite's last features come out near 1e-26, every class score
    then ties at 1/91 and NMS compares ties. So the BatchNormalization statistics are set from one
    forward pass over two seeded random images (momentum None: the batch's own mean and variance), as a
    trained network's keep its activations near unit scale; the weights stay random. Only where needed
    (SSDlite): on the classifiers it makes the outputs ill-conditioned (channels of near-zero variance
    amplified; EfficientNet-B0's ORT optimised/unoptimised difference went from 1e-6 to 4e-3), and they
    are well scaled without it."""
    import torch
    bns = [x for x in module.modules() if isinstance(x, torch.nn.modules.batchnorm._BatchNorm)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
        bn.train()
    g = torch.Generator().manual_seed(seed_of(m) + 1)
    shape = m["inputs"][0][2]
    with torch.no_grad():
        if m["task"] == "detection":
            module.m([torch.rand(*shape, generator=g) for _ in range(2)])
        else:
            module(torch.rand(2, *shape[1:], generator=g))
    for bn in bns:
        bn.eval()


def export(m, path):
    import torch
    torch.manual_seed(seed_of(m))
    module = m["build"]()
    if m["wrap"]:
        module = m["wrap"](module)
    module.eval()
    if m.get("calibrate_batchnorm"):
        calibrate_batchnorm(module, m)
    args = example_inputs(m)
    dynamic = {n: ax for n, _, _, ax in m["inputs"] if ax}
    for o in m["outputs"]:
        if dynamic and m["task"] != "detection":
            dynamic[o] = {0: "batch"}
    part = path + ".part"
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = dict(input_names=[n for n, _, _, _ in m["inputs"]], output_names=m["outputs"],
                  opset_version=OPSET, dynamic_axes=dynamic or None, do_constant_folding=True)
        try:
            torch.onnx.export(module, args, part, dynamo=False, **kw)
        except TypeError as e:
            if "dynamo" not in str(e):
                raise
            torch.onnx.export(module, args, part, **kw)
    os.replace(part, path)


def graph_facts(path):
    import onnx
    model = onnx.load(path, load_external_data=False)
    ops = set()

    def walk(g):
        for n in g.node:
            ops.add(n.op_type)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for sub in a.graphs:
                    walk(sub)
    walk(model.graph)
    return {"control_flow": bool(ops & {"If", "Loop", "Scan"}), "ir_version": model.ir_version,
            "opset": max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), "ops": ops}


def write_inputs(m, root):
    """DIR/inputs/NAME/INPUT.npy for each rule, written by fetch_suite.py's own writer: one file format and
    one seeding for both halves of the suite."""
    out = {}
    for name, rule in sorted(m["rules"].items()):
        rel = "inputs/%s/%s.npy" % (m["name"], re.sub(r"[^A-Za-z0-9_.-]", "_", name))
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        write_npy(os.path.join(root, rel), rule["dtype"], rule["shape"], rule_values(m, name, rule))
        out[name] = rel
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--models", help="comma-separated names (default: all)")
    ap.add_argument("--force", action="store_true", help="export again even when the file is up to date")
    a = ap.parse_args()
    chosen = MODELS
    if a.models:
        names = a.models.split(",")
        unknown = [n for n in names if n not in {m["name"] for m in MODELS}]
        if unknown:
            die("unknown model(s) %s; known: %s" % (", ".join(unknown), ", ".join(m["name"] for m in MODELS)))
        chosen = [m for m in MODELS if m["name"] in names]
    try:
        v = versions()
    except ImportError as e:
        die("%s (run scripts/models/export_suite.sh, which makes the export venv)" % e)
    os.makedirs(os.path.join(a.dir, EXPORT_DIR), exist_ok=True)
    recipes_path = os.path.join(a.dir, RECIPES)
    recipes = {}
    if os.path.isfile(recipes_path):
        with open(recipes_path) as f:
            recipes = json.load(f)

    entries = {}
    for m in chosen:
        rel = "%s/%s.onnx" % (EXPORT_DIR, m["name"])
        path = os.path.join(a.dir, rel)
        key = recipe_key(m, v)
        known = recipes.get(m["name"], {})
        if not a.force and known.get("recipe") == key and os.path.isfile(path) and sha256(path) == known.get("sha256"):
            print("export_suite: %s up to date" % rel)
        else:
            print("export_suite: exporting %s (%s)" % (rel, m["arch"]), flush=True)
            try:
                export(m, path)
            except Exception as e:  # the exporter's errors are of many types: one line, the model named
                die("%s: %s: %s" % (rel, type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else ""))
            recipes[m["name"]] = {"recipe": key, "sha256": sha256(path)}
            with open(recipes_path + ".part", "w") as f:
                json.dump(recipes, f, indent=1, sort_keys=True)
            os.replace(recipes_path + ".part", recipes_path)
        facts = graph_facts(path)
        e = {"name": m["name"], "file": rel, "source": source_of(m, v), "path_in_source": rel,
             "sha256": recipes[m["name"]]["sha256"], "task": m["task"], "control_flow": facts["control_flow"],
             "dims": m["dims"]}
        if m["rules"]:
            e["input_files"] = write_inputs(m, a.dir)
            e["inputs"] = m["rules"]
        e["exporter"] = "torch.onnx.export TorchScript (dynamo=False), opset %d, IR %d" % (OPSET, facts["ir_version"])
        e["bytes"] = os.path.getsize(path)
        e["note"] = m["note"] + "; seeded random weights" + (
            ", BatchNormalization statistics from two seeded random images" if m.get("calibrate_batchnorm") else "")
        entries[m["name"]] = e
        print("export_suite: %s ok (%.1f MB, %s)" % (rel, e["bytes"] / 1e6,
                                                      "control flow" if facts["control_flow"] else "no control flow"))

    manifest, total = merge_manifest(a.dir, [entries[m["name"]] for m in chosen])
    print("export_suite: %d exported models, manifest %s (%d models)" % (len(chosen), manifest, total))


def merge_manifest(root, entries):
    """The other models of DIR/manifest.json stay as they are (fetch_suite.py's, and exported models not
    chosen this time); an exported model replaces its earlier entry in place, a new one is appended."""
    manifest = os.path.join(root, "manifest.json")
    spec = {"suite": "partex public models", "models": []}
    if os.path.isfile(manifest):
        try:
            with open(manifest) as f:
                spec = json.load(f)
        except ValueError as e:
            die("%s: %s" % (manifest, e))
    new = {e["name"]: e for e in entries}
    models = [new.pop(old["name"]) if old["name"] in new else old for old in spec.get("models", [])]
    models.extend(e for e in entries if e["name"] in new)
    spec["models"] = models
    with open(manifest + ".part", "w") as f:
        json.dump(spec, f, indent=1)
        f.write("\n")
    os.replace(manifest + ".part", manifest)
    return manifest, len(models)


if __name__ == "__main__":
    main()
