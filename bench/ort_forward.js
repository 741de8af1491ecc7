#!/usr/bin/env node
// bench/ort_forward.js — bench/forward.c's BertModel forward in ONNX Runtime
// (npm onnxruntime-node, CPU, MLAS), the inference reference.
//
//   NODE_PATH=SCRATCH/node_modules node bench/ort_forward.js --model DIR/model.onnx
//       [--batch B] [--seq S] [--threads N] [--iters K] [--level all|extended|probe]
//       [--check PREFIX]
//
// The model is tools/export_onnx.py's (the same weights build/bench/forward
// --weights loads). intraOpNumThreads = N (interOp 1, sequential), one
// warm-up run, then K timed runs; prints one line in the C bench's format:
//   forward ort B=.. S=.. threads=.. level=.. median_ms .. min_ms .. peak_rss_mib ..
//   cores_used .. ort <version>
// peak_rss is process.resourceUsage().maxRSS (the whole node process, as a
// user pays it); cores_used is the CPU time of the timed runs over their wall
// time. --level probe times a session at 'all' and one at 'extended' in this
// process and prints "best_level NAME" (compare.sh then times the faster in
// processes of their own, so the RSS is one session's). --check PREFIX runs
// the inputs build/bench/forward --dump wrote (PREFIX.ids, int32) and prints
// the max |ORT - bertc| over last_hidden_state (PREFIX.hidden, float32) and
// the cosine of the two (over the whole tensor, as build/bench/forward's
// int8 and bf16 cosine), so an int8 graph's rounding is measured against
// bertc's float32 forward of the same weights.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const a = {model: null, batch: 1, seq: 128, threads: 1, iters: 5, level: 'all', check: null};
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, ''), v = argv[i + 1];
    if (!(k in a) || v === undefined) {
      console.error(`ort_forward: unknown flag or missing value: ${argv[i]}`);
      process.exit(2);
    }
    a[k] = ['batch', 'seq', 'threads', 'iters'].includes(k) ? parseInt(v, 10) : v;
    i++;
  }
  if (!a.model || !(a.batch > 0 && a.seq > 0 && a.threads > 0 && a.iters > 0)) {
    console.error('ort_forward: --model is required; batch, seq, threads, iters must be positive');
    process.exit(2);
  }
  return a;
}

function median(v) {
  const s = [...v].sort((x, y) => x - y), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

// input_ids: PREFIX.ids when checking, else seeded ids in [1000, 30522).
function inputIds(a) {
  const n = a.batch * a.seq, ids = new BigInt64Array(n);
  if (a.check) {
    const raw = fs.readFileSync(`${a.check}.ids`);
    const src = new Int32Array(raw.buffer, raw.byteOffset, raw.length / 4);
    if (src.length !== n) {
      console.error(`ort_forward: ${a.check}.ids holds ${src.length} ids, want ${a.batch}x${a.seq}`);
      process.exit(1);
    }
    src.forEach((x, i) => { ids[i] = BigInt(x); });
  } else {
    let s = 1;
    for (let i = 0; i < n; i++) {
      s = (s * 1103515245 + 12345) % 2147483648;
      ids[i] = BigInt(1000 + (s % 29522));
    }
  }
  return ids;
}

function feeds(a) {
  const dims = [a.batch, a.seq], n = a.batch * a.seq;
  return {
    input_ids: new ort.Tensor('int64', inputIds(a), dims),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), dims),
    token_type_ids: new ort.Tensor('int64', new BigInt64Array(n), dims),
  };
}

// Median and min ms of K timed runs at one optimisation level, and the cores used.
async function timeLevel(a, level, input) {
  const session = await ort.InferenceSession.create(a.model, {
    graphOptimizationLevel: level, intraOpNumThreads: a.threads, interOpNumThreads: 1,
    executionMode: 'sequential', executionProviders: ['cpu'],
  });
  let out = await session.run(input);  // warm-up
  const ms = [], cpu0 = process.cpuUsage(), wall0 = performance.now();
  for (let i = 0; i < a.iters; i++) {
    const t0 = performance.now();
    out = await session.run(input);
    ms.push(performance.now() - t0);
  }
  const cpu = process.cpuUsage(cpu0), wall = performance.now() - wall0;
  const hidden = out.last_hidden_state.data;
  await session.release();
  return {level, median: median(ms), min: Math.min(...ms),
          cores: (cpu.user + cpu.system) / 1e3 / wall, hidden};
}

function checkAgainstBertc(prefix, hidden) {
  const raw = fs.readFileSync(`${prefix}.hidden`);
  const ref = new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
  if (ref.length !== hidden.length) {
    console.error(`ort_forward: ${prefix}.hidden holds ${ref.length} floats, ORT gave ${hidden.length}`);
    process.exit(1);
  }
  let worst = 0, dot = 0, nr = 0, nh = 0;
  for (let i = 0; i < ref.length; i++) {
    worst = Math.max(worst, Math.abs(ref[i] - hidden[i]));
    dot += ref[i] * hidden[i];
    nr += ref[i] * ref[i];
    nh += hidden[i] * hidden[i];
  }
  return {worst, cosine: dot / Math.sqrt(nr * nh)};
}

async function main() {
  const a = parseArgs(process.argv);
  const input = feeds(a);
  const levels = a.level === 'probe' ? ['all', 'extended'] : [a.level];
  let best = null;
  for (const level of levels) {
    const r = await timeLevel(a, level, input);
    if (a.level === 'probe')
      console.log(`probe level=${level} median_ms ${r.median.toFixed(2)}`);
    if (!best || r.median < best.median)
      best = r;
  }
  const rss = process.resourceUsage().maxRSS / 1024;
  let check = '';
  if (a.check) {
    const c = checkAgainstBertc(a.check, best.hidden);
    check = ` max_abs_diff_vs_bertc ${c.worst.toExponential(2)} cosine_vs_bertc ${c.cosine.toFixed(6)}`;
  }
  console.log(`forward ort B=${a.batch} S=${a.seq} threads=${a.threads} level=${best.level} ` +
              `median_ms ${best.median.toFixed(2)} min_ms ${best.min.toFixed(2)} ` +
              `peak_rss_mib ${rss.toFixed(1)} cores_used ${best.cores.toFixed(2)}${check} ` +
              `ort ${ort.env.versions ? ort.env.versions.common : '?'}` +
              (a.level === 'probe' ? ` best_level ${best.level}` : ''));
}

main().catch((e) => { console.error(`ort_forward: ${e.message}`); process.exit(1); });
