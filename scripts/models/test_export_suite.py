#!/usr/bin/env python3
"""Checks scripts/models/export_suite.py without torch: the exporter, the versions and the graph reading
are replaced by fakes, so that what is checked is the script's own logic: the manifest merge (fetched
models kept in place, an exported entry replaced in place, new ones appended), the token-id input files
(the same values as fetch_suite.py's rule of the same form, inside the vocabulary), idempotence (no second
export), a corrupted file or a changed recipe exported again, and the one-line exit-2 errors.
Python's standard library only: python3 scripts/models/test_export_suite.py"""
import contextlib
import io
import ast
import json
import os
import struct
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ beside the scripts in the work tree
sys.path.insert(0, here)
import export_suite  # noqa: E402
import fetch_suite  # noqa: E402

calls = []
VERSIONS = {"torch": "9.9.9", "torchvision": "8.8.8", "transformers": "7.7.7", "onnx": "1.0.0"}


def fake_export(m, path):
    calls.append(m["name"])
    with open(path, "wb") as f:
        f.write(("fake model %s" % m["name"]).encode())


def fake_facts(path):
    return {"control_flow": "ssdlite" in path, "ir_version": 8, "opset": 17, "ops": set()}


export_suite.export = fake_export
export_suite.versions = lambda: dict(VERSIONS)
export_suite.graph_facts = fake_facts


def load_npy(path):
    """(dtype descr, shape, values) of a .npy file, format 1.0, int64 or float32, without NumPy."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x93NUMPY\x01\x00", path
    hlen = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10:10 + hlen].decode("latin1"))
    body = data[10 + hlen:]
    fmt = {"<i8": "q", "<f4": "f"}[header["descr"]]
    return header["descr"], tuple(header["shape"]), list(struct.unpack("<%d%s" % (len(body) // struct.calcsize(fmt), fmt), body))


def run(root, *args):
    """export_suite's main with the arguments; (exit code, stderr)."""
    sys.argv = ["export_suite.py", "--dir", root] + list(args)
    err = io.StringIO()
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            export_suite.main()
        except SystemExit as e:
            code = e.code
    return code, err.getvalue()


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)
    print("ok: " + what)


def main():
    with tempfile.TemporaryDirectory() as root:
        fetched_a = {"name": "silero-vad", "file": "silero-vad-6.2.3/silero_vad.onnx", "source": "pypi:silero-vad==6.2.3"}
        stale = {"name": "resnet50", "file": "exported/resnet50.onnx", "source": "export:torch==0.1 stale"}
        fetched_b = {"name": "magika-v1", "file": "magika-0.5.1/model.onnx", "source": "pypi:magika==0.5.1"}
        with open(os.path.join(root, "manifest.json"), "w") as f:
            json.dump({"suite": "partex public models", "models": [fetched_a, stale, fetched_b]}, f)

        code, err = run(root, "--models", "resnet50,bert-base,ssdlite320-mobilenet-v3")
        check(code == 0 and sorted(calls) == ["bert-base", "resnet50", "ssdlite320-mobilenet-v3"],
              "first run exports the three chosen models")
        man = json.load(open(os.path.join(root, "manifest.json")))["models"]
        check([e["name"] for e in man] == ["silero-vad", "resnet50", "magika-v1", "bert-base", "ssdlite320-mobilenet-v3"],
              "fetched models keep their place, the stale entry is replaced in place, new ones are appended")
        check(man[0] == fetched_a and man[2] == fetched_b, "fetched entries are left untouched")
        r50 = man[1]
        check(r50["source"] == "export:torch==9.9.9 torchvision==8.8.8 resnet50" and r50["file"] == "exported/resnet50.onnx",
              "source names torch, the library and the architecture")
        check(r50["sha256"] == export_suite.sha256(os.path.join(root, r50["file"])), "sha256 is the file's")
        check(man[4]["control_flow"] is True and r50["control_flow"] is False, "control_flow from the graph")
        bert = man[3]
        check(set(bert["input_files"]) == {"input_ids", "attention_mask", "token_type_ids"}, "bert has its three input files")
        descr, shape, ids = load_npy(os.path.join(root, bert["input_files"]["input_ids"]))
        check(descr == "<i8" and shape == (1, 128) and min(ids) >= 0 and max(ids) < 30522 and len(set(ids)) > 100,
              "token ids: int64 1x128, inside the vocabulary, not constant")
        descr, shape, mask = load_npy(os.path.join(root, bert["input_files"]["attention_mask"]))
        check(descr == "<i8" and shape == (1, 128) and set(mask) == {1}, "attention mask of ones")
        check(export_suite.rule_values(export_suite.MODELS[0], "input_ids", bert["inputs"]["input_ids"]) == ids,
              "the ids the exporter traces with are the ids of the file")
        # The same rule through fetch_suite.py gives the same values: one form, one meaning for both scripts.
        with tempfile.TemporaryDirectory() as other:
            rel = fetch_suite.input_files({"name": "bert-base", "inputs": bert["inputs"]}, other)
            check(load_npy(os.path.join(other, rel["input_ids"]))[2] == ids,
                  "fetch_suite.py's rule of the same form writes the same token ids")

        calls.clear()
        code, _ = run(root, "--models", "resnet50,bert-base,ssdlite320-mobilenet-v3")
        check(code == 0 and calls == [], "second run exports nothing")
        check(json.load(open(os.path.join(root, "manifest.json")))["models"] == man, "second run: same manifest")

        with open(os.path.join(root, "exported/resnet50.onnx"), "ab") as f:
            f.write(b"x")
        code, _ = run(root, "--models", "resnet50,bert-base")
        check(code == 0 and calls == ["resnet50"], "a corrupted file is exported again")

        calls.clear()
        VERSIONS["torchvision"] = "8.8.9"
        code, _ = run(root, "--models", "resnet50,bert-base")
        check(code == 0 and calls == ["resnet50"], "a changed recipe (torchvision version) is exported again")

        def failing(m, path):
            raise RuntimeError("Exporting the operator 'aten::diff' to ONNX opset version 17 is not supported\nmore")
        export_suite.export = failing
        code, err = run(root, "--models", "gpt2-small")
        check(code == 2 and err.strip() == "export_suite: exported/gpt2-small.onnx: RuntimeError: Exporting the "
              "operator 'aten::diff' to ONNX opset version 17 is not supported", "a failed export: one line, exit 2")
        code, err = run(root, "--models", "nope")
        check(code == 2 and len(err.strip().splitlines()) == 1 and "unknown model(s) nope" in err, "unknown model: exit 2")
        with open(os.path.join(root, "manifest.json"), "w") as f:
            f.write("{broken")
        export_suite.export = fake_export
        code, err = run(root, "--models", "resnet50")
        check(code == 2 and err.startswith("export_suite: %s/manifest.json:" % root) and len(err.strip().splitlines()) == 1,
              "a broken manifest: one line naming it, exit 2")
    print("test_export_suite: all passed")


if __name__ == "__main__":
    main()
