#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (onnxruntime-node, CPU execution provider): the yardstick of
// Partex's CPU runtime, for benchmarks and output checks only (the product never depends on it).
//
//   node scripts/ort/run.js MODEL [--input NAME=FILE.npy]... [--dim NAME=V]... [--seed S]
//        [--outputs DIR] [--threads N] [--reps N] [--warmup N] [--opt all|basic|extended|disabled]
//
// Inputs: .npy files (float32/float64/int32/int64/uint8/int8/bool, C order); inputs not given are
// seeded random floats in [-1, 1) (integers 0) with their symbolic dims bound by --dim.
// Prints one JSON object: runs_ms, median_ms, peak_rss_bytes, threads, outputs (name -> dims).
// --outputs DIR writes every output as DIR/NAME.npy. onnxruntime-node is looked up in
// $PARTEX_ORT_DIR/node_modules (default ~/.local/share/partex/onnxruntime-node, where
// scripts/ort/install.sh puts it). Exit 3 when it is not installed, 2 on bad arguments or files.
'use strict';
const fs = require('fs');
const path = require('path');
const os = require('os');

function die(code, msg) {
  process.stderr.write(`ort/run.js: ${msg}\n`);
  process.exit(code);
}

const ortDir = process.env.PARTEX_ORT_DIR || path.join(os.homedir(), '.local/share/partex/onnxruntime-node');
let ort;
try {
  ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));
} catch (e) {
  die(3, `onnxruntime-node is not installed in ${ortDir} (run scripts/ort/install.sh): ${e.message.split('\n')[0]}`);
}

const DT = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i4': ['int32', Int32Array],
  '<i8': ['int64', BigInt64Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array],
  '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  let buf;
  try { buf = fs.readFileSync(file); } catch (e) { die(2, `${file}: ${e.message}`); }
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') die(2, `${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hoff = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hoff, hoff + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) die(2, `${file}: bad .npy header`);
  if (fortran[1] === 'True') die(2, `${file}: Fortran order is not supported`);
  const t = DT[descr[1]];
  if (!t) die(2, `${file}: dtype ${descr[1]} is not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const n = dims.reduce((a, b) => a * b, 1);
  const data = buf.subarray(hoff + hlen);
  if (data.length !== n * t[1].BYTES_PER_ELEMENT) die(2, `${file}: ${data.length} data bytes for shape [${dims}]`);
  const arr = new t[1](n);
  Buffer.from(arr.buffer).set(data);
  return new ort.Tensor(t[0], t[0] === 'bool' ? Uint8Array.from(arr) : arr, dims);
}

function writeNpy(file, tensor) {
  const descr = { float32: '<f4', float64: '<f8', int32: '<i4', int64: '<i8', uint8: '|u1', int8: '|i1', bool: '|b1' }[tensor.type];
  if (!descr) die(2, `output type ${tensor.type} cannot be written as .npy`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const d = tensor.data;
  const body = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, file);
}

function rng(seed) {  // xorshift64*: deterministic, seedable
  let s = BigInt.asUintN(64, BigInt(seed) * 0x9E3779B97F4A7C15n + 1n);
  return () => {
    s ^= s >> 12n; s ^= BigInt.asUintN(64, s << 25n); s ^= s >> 27n;
    return Number(BigInt.asUintN(64, s * 0x2545F4914F6CDD1Dn) >> 11n) / 2 ** 53;
  };
}

async function main() {
  const args = process.argv.slice(2);
  const opt = { inputs: {}, dims: {}, seed: 1, outputs: null, threads: 1, reps: 1, warmup: 0, level: 'all' };
  let model = null;
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    const next = () => { if (i + 1 >= args.length) die(2, `${a} needs a value`); return args[++i]; };
    if (a === '--input') { const [k, v] = next().split(/=(.*)/s); opt.inputs[k] = v; }
    else if (a === '--dim') { const [k, v] = next().split('='); opt.dims[k] = Number(v); }
    else if (a === '--seed') opt.seed = Number(next());
    else if (a === '--outputs') opt.outputs = next();
    else if (a === '--threads') opt.threads = Number(next());
    else if (a === '--reps') opt.reps = Number(next());
    else if (a === '--warmup') opt.warmup = Number(next());
    else if (a === '--opt') opt.level = next();
    else if (a.startsWith('--')) die(2, `unknown option ${a}`);
    else model = a;
  }
  if (!model) die(2, 'no model given');
  let session;
  try {
    session = await ort.InferenceSession.create(model, {
      executionProviders: ['cpu'], graphOptimizationLevel: opt.level,
      intraOpNumThreads: opt.threads, interOpNumThreads: 1, executionMode: 'sequential',
    });
  } catch (e) { die(2, `${model}: ${e.message.split('\n')[0]}`); }
  const feeds = {};
  const meta = session.inputMetadata || [];
  session.inputNames.forEach((name, idx) => {
    if (opt.inputs[name]) { feeds[name] = readNpy(opt.inputs[name]); return; }
    const m = meta[idx] || {};
    const shape = (m.shape || []).map((d, ax) => {
      if (typeof d === 'number' && d >= 0) return d;
      const key = typeof d === 'string' && d in opt.dims ? d : `${name}:${ax}`;
      if (!(key in opt.dims)) die(2, `input ${name} axis ${ax} (${d}) needs --dim`);
      return opt.dims[key];
    });
    const n = shape.reduce((a, b) => a * b, 1);
    const r = rng(opt.seed + idx);
    const type = m.type || 'float32';
    if (type === 'float32') feeds[name] = new ort.Tensor('float32', Float32Array.from({ length: n }, () => r() * 2 - 1), shape);
    else if (type === 'int64') feeds[name] = new ort.Tensor('int64', new BigInt64Array(n), shape);
    else die(2, `input ${name}: no random ${type} inputs; give --input`);
  });
  for (const k of Object.keys(opt.inputs)) if (!session.inputNames.includes(k)) die(2, `the model has no input ${k}`);
  let out;
  for (let i = 0; i < opt.warmup; ++i) out = await session.run(feeds);
  const runs = [];
  for (let i = 0; i < Math.max(1, opt.reps); ++i) {
    const t0 = process.hrtime.bigint();
    out = await session.run(feeds);
    runs.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const sorted = [...runs].sort((a, b) => a - b);
  const outputs = {};
  for (const [name, t] of Object.entries(out)) outputs[name] = t.dims;
  if (opt.outputs) {
    fs.mkdirSync(opt.outputs, { recursive: true });
    for (const [name, t] of Object.entries(out)) writeNpy(path.join(opt.outputs, `${name.replace(/[^A-Za-z0-9_.-]/g, '_')}.npy`), t);
  }
  process.stdout.write(JSON.stringify({
    model: path.basename(model), threads: opt.threads, runs_ms: runs, median_ms: sorted[Math.floor(sorted.length / 2)],
    peak_rss_bytes: process.resourceUsage().maxRSS * 1024, outputs,
  }) + '\n');
}
main().catch((e) => die(2, e.message.split('\n')[0]));
