#!/usr/bin/env node
// Time one ONNX model with onnxruntime-node on .npy inputs (weft's reference
// point in bench/run_inference_bench.py).
//
//   node bench/ort_bench.js --model MODEL.onnx --input NAME=FILE.npy ...
//        [--repeat N] [--warmup W] [--threads T] [--output-dir DIR]
//
// Session options: intraOpNumThreads = interOpNumThreads = T (default
// $WEFT_NUM_THREADS, else 2), sequential execution, all graph optimizations.
// Prints one JSON line like `weft run --repeat`:
//   {"iterations":N,"mean_s":..,"median_s":..,"min_s":..,"load_s":..}
// With --output-dir, writes DIR/<output name>.npy (same name rule as weft:
// chars outside [A-Za-z0-9._-] become '_').
// onnxruntime-node is looked up in bench/node_modules (installed by
// run_inference_bench.py with `npm install --ignore-scripts onnxruntime-node`).
'use strict';

const fs = require('fs');
const path = require('path');

function loadOrt() {
  const local = path.join(__dirname, 'node_modules', 'onnxruntime-node');
  try {
    return require(local);
  } catch (e) {
    return require('onnxruntime-node');
  }
}

// ---- .npy I/O (version 1/2/3, little-endian, C order) ----------------------
const NPY_TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i4': ['int32', Int32Array], '<i8': ['int64', BigInt64Array],
  '<i2': ['int16', Int16Array], '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array], '<u2': ['uint16', Uint16Array],
  '<u4': ['uint32', Uint32Array], '<u8': ['uint64', BigUint64Array],
  '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.readUInt32BE(0) !== 0x934e554d || buf[4] !== 0x50 || buf[5] !== 0x59)
    throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  let headerLen, offset;
  if (major === 1) { headerLen = buf.readUInt16LE(8); offset = 10; }
  else { headerLen = buf.readUInt32LE(8); offset = 12; }
  const header = buf.slice(offset, offset + headerLen).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header))
    throw new Error(`${file}: Fortran order is not supported`);
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)[1];
  const dims = shapeText.split(',').map(s => s.trim()).filter(s => s.length).map(Number);
  const entry = NPY_TYPES[descr];
  if (!entry) throw new Error(`${file}: dtype ${descr} is not supported`);
  const [type, Ctor] = entry;
  const dataStart = offset + headerLen;
  const count = dims.reduce((a, b) => a * b, 1);
  const bytes = Buffer.from(buf.slice(dataStart, dataStart + count * Ctor.BYTES_PER_ELEMENT));
  let data = new Ctor(bytes.buffer, bytes.byteOffset, count);
  if (type === 'bool') data = Uint8Array.from(data);
  return { type, dims, data };
}

function writeNpy(file, tensor) {
  let descr = null;
  for (const [d, [t]] of Object.entries(NPY_TYPES))
    if (t === tensor.type) descr = d;
  if (!descr) throw new Error(`cannot write ${tensor.type} to .npy`);
  const dims = tensor.dims.map(Number);
  const shape = dims.length === 0 ? '()' :
      dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.writeUInt32BE(0x934e554d, 0); pre[4] = 0x50; pre[5] = 0x59; pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const d = tensor.data;
  const body = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

// ---- main -------------------------------------------------------------------
function parseArgs(argv) {
  const args = { inputs: [], repeat: 20, warmup: 3, threads: null, outputDir: null };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--model') args.model = next();
    else if (a === '--input') args.inputs.push(next());
    else if (a === '--repeat') args.repeat = parseInt(next(), 10);
    else if (a === '--warmup') args.warmup = parseInt(next(), 10);
    else if (a === '--threads') args.threads = parseInt(next(), 10);
    else if (a === '--output-dir') args.outputDir = next();
    else throw new Error(`unknown argument ${a}`);
  }
  if (!args.model) throw new Error('--model is required');
  if (args.threads === null)
    args.threads = parseInt(process.env.WEFT_NUM_THREADS || '2', 10);
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(args.model, {
    intraOpNumThreads: args.threads,
    interOpNumThreads: args.threads,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const loadS = Number(process.hrtime.bigint() - t0) / 1e9;
  const feeds = {};
  for (const spec of args.inputs) {
    const eq = spec.indexOf('=');
    const name = spec.slice(0, eq);
    const npy = readNpy(spec.slice(eq + 1));
    feeds[name] = new ort.Tensor(npy.type, npy.data, npy.dims);
  }
  let results = null;
  for (let i = 0; i < args.warmup; ++i) results = await session.run(feeds);
  const times = [];
  for (let i = 0; i < args.repeat; ++i) {
    const s = process.hrtime.bigint();
    results = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - s) / 1e9);
  }
  if (!results) results = await session.run(feeds);
  if (args.outputDir) {
    fs.mkdirSync(args.outputDir, { recursive: true });
    for (const name of session.outputNames) {
      const t = results[name];
      writeNpy(path.join(args.outputDir, name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy'),
               { type: t.type, dims: t.dims, data: t.data });
    }
  }
  const sorted = times.slice().sort((a, b) => a - b);
  const n = sorted.length;
  const median = n === 0 ? 0 : (n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2);
  console.log(JSON.stringify({
    iterations: n,
    mean_s: n ? times.reduce((a, b) => a + b, 0) / n : 0,
    median_s: median,
    min_s: n ? sorted[0] : 0,
    load_s: loadS,
    threads: args.threads,
  }));
}

main().catch(e => {
  console.error(`ort_bench: error: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
