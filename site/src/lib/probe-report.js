// A vram-probe report dropped on the page: read and checked here (its shape
// is probe-agent/src/measure/json_report_writer.cpp, documented in the
// README's "Report JSON"), matched to the GPU catalog, and compared with the
// page's estimate. The report is page state (lib/probe-state.js) but not URL
// state: a watch report's timeline is up to ~200 KB. This reader is a chunk
// of its own, loaded with the first report (probe-state.js).

import { MAX_INPUT_BYTES } from './limits.js';
import { ReportError } from './probe-state.js';

export { ReportError };

/** The `schema` of every probe report (kProbeSchema in measure/report.h). */
export const PROBE_SCHEMA = 'vram-planner-probe/1';

/** The core's CUDA context prior (core/src/overheads.h), for the words only. */
export const CONTEXT_PRIOR_BYTES = 512 * 1024 ** 2;

// A watch report is at most ~200 KB (2048 timeline points); anything far
// larger is not one. The core's input limit (lib/limits.js).
const MAX_REPORT_CHARS = MAX_INPUT_BYTES;

function fail(path, message) {
  throw new ReportError(path, message);
}

/** A value as words for a message: `the string "12"`, `-5`, `an array`. */
function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') {
    const s = v.length > 40 ? `${v.slice(0, 40)}…` : v;
    return `the string ${JSON.stringify(s)}`;
  }
  if (typeof v === 'object') return 'an object';
  return String(v);
}

function at(path, key) {
  return typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;
}

function object(v, path) {
  if (!v || typeof v !== 'object' || Array.isArray(v))
    fail(path, `${path} must be an object, not ${describe(v)}.`);
  return v;
}

function array(v, path) {
  if (!Array.isArray(v)) fail(path, `${path} must be a list, not ${describe(v)}.`);
  return v;
}

/** o[key], which the writer always writes; a missing key is an error naming it. */
function need(o, key, path) {
  const p = at(path, key);
  if (!Object.prototype.hasOwnProperty.call(o, key)) fail(p, `${p} is missing.`);
  return o[key];
}

/**
 * A non-negative integer (bytes, ms, counts): JSON integers, exact below
 * 2^53. `nullable`: null means "not reported" (never 0, STYLE.md).
 */
function whole(v, path, { nullable = false, unit = 'a whole number' } = {}) {
  if (v === null && nullable) return null;
  const wanted = `${unit}${nullable ? ' or null' : ''}`;
  if (typeof v !== 'number') fail(path, `${path} must be ${wanted}, not ${describe(v)}.`);
  if (!Number.isInteger(v)) fail(path, `${path} must be ${wanted}, not ${v}.`);
  if (v < 0) fail(path, `${path} must not be negative (it is ${v}).`);
  if (!Number.isSafeInteger(v)) fail(path, `${path} is too large to be exact (${v}).`);
  return v;
}

const bytes = (v, path) => whole(v, path, { nullable: true, unit: 'a whole number of bytes' });

function text(v, path, { nullable = true } = {}) {
  if (v === null && nullable) return null;
  if (typeof v !== 'string')
    fail(path, `${path} must be a string${nullable ? ' or null' : ''}, not ${describe(v)}.`);
  return v;
}

/** An optional header string: absent or null is null. */
function optionalText(doc, key) {
  return doc[key] === undefined ? null : text(doc[key], key);
}

function readGpu(v, path) {
  const g = object(v, path);
  const memory = (key) => (g[key] === undefined ? null : bytes(g[key], `${path}.${key}`));
  return {
    index: whole(need(g, 'index', path), at(path, 'index')),
    name: text(need(g, 'name', path), at(path, 'name')),
    uuid: g.uuid === undefined ? null : text(g.uuid, at(path, 'uuid')),
    total: bytes(need(g, 'memory.total', path), `${path}.memory.total`),
    reserved: memory('memory.reserved'),
    used: memory('memory.used'),
    free: memory('memory.free'),
    compute_capability:
      g.compute_capability === undefined
        ? null
        : text(g.compute_capability, at(path, 'compute_capability')),
  };
}

function readErrors(doc) {
  if (doc.errors === undefined) return [];
  return array(doc.errors, 'errors').map((e, i) => {
    const p = `errors[${i}]`;
    const o = object(e, p);
    return {
      code: text(need(o, 'code', p), `${p}.code`, { nullable: false }),
      message: text(need(o, 'message', p), `${p}.message`, { nullable: false }),
    };
  });
}

/** Which subcommand wrote `doc` (the report has no kind field: its body says). */
function kindOf(doc) {
  // `vram-probe run`: a watch report (on a GPU) or a CPU run, plus the run object.
  if ('run' in doc) return 'run';
  if ('command' in doc || 'peak' in doc || 'timeline' in doc) return 'watch';
  if ('overheads' in doc) {
    const o = object(doc.overheads, 'overheads');
    if ('nccl_bytes' in o) return 'nccl';
    if ('cuda_context_bytes' in o) return 'overheads';
    fail(
      'overheads',
      'overheads has neither cuda_context_bytes (vram-probe overheads) nor nccl_bytes (vram-probe nccl).',
    );
  }
  if ('nccl_version' in doc || 'devices' in doc) return 'nccl';
  return 'device';
}

function gpuOfDevice(gpus, device, path) {
  const gpu = gpus.find((g) => g.index === device);
  if (!gpu) fail(path, `${path} is ${device}, but gpus lists no GPU with index ${device}.`);
  return gpu;
}

function readWatch(doc, gpus) {
  const command = array(need(doc, 'command', ''), 'command').map((a, i) =>
    text(a, `command[${i}]`, { nullable: false }),
  );
  if (!command.length) fail('command', 'command is empty: vram-probe watch always records one.');
  const device = whole(need(doc, 'device', ''), 'device');
  const exit = object(need(doc, 'exit', ''), 'exit');
  const peak = object(need(doc, 'peak', ''), 'peak');
  const baseline = object(need(doc, 'baseline', ''), 'baseline');
  const sampling = object(need(doc, 'sampling', ''), 'sampling');
  const w = {
    command,
    device,
    gpu: gpuOfDevice(gpus, device, 'device'),
    exit: {
      // The command's exit status (0-255) or null when a signal ended it.
      code: whole(need(exit, 'code', 'exit'), 'exit.code', { nullable: true }),
      signal: whole(need(exit, 'signal', 'exit'), 'exit.signal', { nullable: true }),
      signal_name:
        exit.signal_name === undefined ? null : text(exit.signal_name, 'exit.signal_name'),
    },
    peak: {
      process_used_bytes: bytes(
        need(peak, 'process_used_bytes', 'peak'),
        'peak.process_used_bytes',
      ),
      device_used_bytes: bytes(need(peak, 'device_used_bytes', 'peak'), 'peak.device_used_bytes'),
      accounting_max_bytes: bytes(
        need(peak, 'accounting_max_bytes', 'peak'),
        'peak.accounting_max_bytes',
      ),
      process_t_ms: whole(peak.process_t_ms ?? null, 'peak.process_t_ms', { nullable: true }),
      device_t_ms: whole(peak.device_t_ms ?? null, 'peak.device_t_ms', { nullable: true }),
    },
    baseline: {
      device_used_bytes: bytes(
        need(baseline, 'device_used_bytes', 'baseline'),
        'baseline.device_used_bytes',
      ),
    },
    sampling: {
      interval_ms: whole(need(sampling, 'interval_ms', 'sampling'), 'sampling.interval_ms'),
      samples: whole(need(sampling, 'samples', 'sampling'), 'sampling.samples'),
      failed_samples: whole(sampling.failed_samples ?? 0, 'sampling.failed_samples'),
      duration_ms: whole(need(sampling, 'duration_ms', 'sampling'), 'sampling.duration_ms'),
    },
    timeline: array(need(doc, 'timeline', ''), 'timeline').map((v, i) => {
      const p = `timeline[${i}]`;
      const s = object(v, p);
      return {
        t_ms: whole(need(s, 't_ms', p), `${p}.t_ms`),
        process_used_bytes: bytes(need(s, 'process_used_bytes', p), `${p}.process_used_bytes`),
        device_used_bytes: bytes(need(s, 'device_used_bytes', p), `${p}.device_used_bytes`),
      };
    }),
  };
  if (measuredPeak(w) === null) {
    fail(
      'peak',
      'peak has no measurement: process_used_bytes and accounting_max_bytes are null, and device_used_bytes or baseline.device_used_bytes too.',
    );
  }
  return w;
}

function readOverheads(doc, gpus) {
  const device = whole(need(doc, 'device', ''), 'device');
  const measurement = object(need(doc, 'measurement', ''), 'measurement');
  return {
    device,
    gpu: gpuOfDevice(gpus, device, 'device'),
    cuda_context_bytes: bytes(
      need(doc.overheads, 'cuda_context_bytes', 'overheads'),
      'overheads.cuda_context_bytes',
    ),
    method: text(need(measurement, 'method', 'measurement'), 'measurement.method', {
      nullable: false,
    }),
    cuda_module_loading:
      measurement.cuda_module_loading === undefined
        ? null
        : text(measurement.cuda_module_loading, 'measurement.cuda_module_loading'),
  };
}

function readNccl(doc, gpus) {
  const overheads = object(need(doc, 'overheads', ''), 'overheads');
  const measurement = object(need(doc, 'measurement', ''), 'measurement');
  const env = object(need(measurement, 'env', 'measurement'), 'measurement.env');
  const devices = array(need(doc, 'devices', ''), 'devices').map((v, i) => {
    const p = `devices[${i}]`;
    const d = object(v, p);
    return {
      index: whole(need(d, 'index', p), `${p}.index`),
      init_bytes: bytes(need(d, 'init_bytes', p), `${p}.init_bytes`),
      first_collective_bytes: bytes(
        need(d, 'first_collective_bytes', p),
        `${p}.first_collective_bytes`,
      ),
      nccl_bytes: bytes(need(d, 'nccl_bytes', p), `${p}.nccl_bytes`),
    };
  });
  devices.forEach((d, i) => gpuOfDevice(gpus, d.index, `devices[${i}].index`));
  return {
    nccl_bytes: bytes(need(overheads, 'nccl_bytes', 'overheads'), 'overheads.nccl_bytes'),
    nccl_version: text(need(doc, 'nccl_version', ''), 'nccl_version'),
    method: text(need(measurement, 'method', 'measurement'), 'measurement.method', {
      nullable: false,
    }),
    all_reduce_bytes: whole(
      need(measurement, 'all_reduce_bytes', 'measurement'),
      'measurement.all_reduce_bytes',
    ),
    // The NCCL_* variables that change the answer, as the probe saw them.
    env: Object.entries(env).map(([name, value]) => [name, text(value, `measurement.env.${name}`)]),
    devices,
  };
}

/** The phases `vram-probe run` records, in order (probe-agent/src/run/train_script.py PHASES). */
export const RUN_PHASES = ['load', 'forward', 'loss', 'backward', 'optimizer_step'];

function readRun(run) {
  const est = object(need(run, 'estimate', 'run'), 'run.estimate');
  const out = {
    request: object(need(run, 'request', 'run'), 'run.request'),
    device: text(need(run, 'device', 'run'), 'run.device', { nullable: false }),
    steps: whole(need(run, 'steps', 'run'), 'run.steps'),
    script: run.script === undefined ? null : text(run.script, 'run.script'),
    estimate: {
      peak_bytes: whole(need(est, 'peak_bytes', 'run.estimate'), 'run.estimate.peak_bytes'),
      peak_phase: text(need(est, 'peak_phase', 'run.estimate'), 'run.estimate.peak_phase'),
      time: readEstimateTime(est),
      components: object(est.components ?? {}, 'run.estimate.components'),
      phases: array(need(est, 'phases', 'run.estimate'), 'run.estimate.phases').map((v, i) => {
        const p = `run.estimate.phases[${i}]`;
        const o = object(v, p);
        return {
          key: text(need(o, 'key', p), `${p}.key`, { nullable: false }),
          allocated_bytes: bytes(need(o, 'allocated_bytes', p), `${p}.allocated_bytes`),
          reserved_bytes: bytes(need(o, 'reserved_bytes', p), `${p}.reserved_bytes`),
        };
      }),
    },
    phases: array(need(run, 'phases', 'run'), 'run.phases').map((v, i) => {
      const p = `run.phases[${i}]`;
      const o = object(v, p);
      const phase = text(need(o, 'phase', p), `${p}.phase`, { nullable: false });
      if (!RUN_PHASES.includes(phase))
        fail(
          `${p}.phase`,
          `${p}.phase is ${describe(phase)}, not one of ${RUN_PHASES.join(', ')}.`,
        );
      const seconds = need(o, 'seconds', p);
      if (typeof seconds !== 'number' || !(seconds >= 0))
        fail(`${p}.seconds`, `${p}.seconds must be a number of seconds, not ${describe(seconds)}.`);
      return {
        phase,
        step: whole(need(o, 'step', p), `${p}.step`),
        micro_step: whole(need(o, 'micro_step', p), `${p}.micro_step`),
        allocated_bytes: bytes(need(o, 'allocated_bytes', p), `${p}.allocated_bytes`),
        max_allocated_bytes: bytes(need(o, 'max_allocated_bytes', p), `${p}.max_allocated_bytes`),
        reserved_bytes: bytes(need(o, 'reserved_bytes', p), `${p}.reserved_bytes`),
        max_reserved_bytes: bytes(need(o, 'max_reserved_bytes', p), `${p}.max_reserved_bytes`),
        seconds,
      };
    }),
    notes: array(run.plan?.notes ?? [], 'run.plan.notes').map((n, i) =>
      text(n, `run.plan.notes[${i}]`, { nullable: false }),
    ),
    tensor_bytes:
      run.tensor_bytes === undefined ? null : object(run.tensor_bytes, 'run.tensor_bytes'),
    error: null,
  };
  if (run.error !== undefined) {
    const e = object(run.error, 'run.error');
    out.error = {
      code: text(need(e, 'code', 'run.error'), 'run.error.code', { nullable: false }),
      message: text(need(e, 'message', 'run.error'), 'run.error.message', { nullable: false }),
      path: e.path === undefined ? '' : text(e.path, 'run.error.path', { nullable: false }),
    };
  }
  return out;
}

/** A spread of the probe's step times ({median, min, max, count}) or null. */
function spread(v, path) {
  if (v === null || v === undefined) return null;
  const o = object(v, path);
  const out = {};
  for (const k of ['median', 'min', 'max']) {
    const x = need(o, k, path);
    if (typeof x !== 'number' || !(x >= 0))
      fail(`${path}.${k}`, `${path}.${k} must be a number ≥ 0.`);
    out[k] = x;
  }
  out.count = whole(need(o, 'count', path), `${path}.count`);
  return out;
}

function optionalNumber(o, key, path) {
  const v = o[key];
  if (v === null || v === undefined) return null;
  if (typeof v !== 'number' || !(v >= 0))
    fail(`${path}.${key}`, `${path}.${key} must be a number ≥ 0.`);
  return v;
}

/**
 * The step times the job printed (a watch or run report's `timing`, docs/schema.md
 * "Probe reports: timing"), or null when it printed none or the probe predates it.
 */
function readTiming(doc) {
  if (doc.timing === null || doc.timing === undefined) return null;
  const t = object(doc.timing, 'timing');
  const trainer =
    t.trainer === undefined || t.trainer === null ? null : object(t.trainer, 'timing.trainer');
  return {
    format: text(need(t, 'format', 'timing'), 'timing.format', { nullable: false }),
    steps_logged: whole(need(t, 'steps_logged', 'timing'), 'timing.steps_logged'),
    warmup_skipped: whole(need(t, 'warmup_skipped', 'timing'), 'timing.warmup_skipped'),
    step_seconds: spread(t.step_seconds, 'timing.step_seconds'),
    tokens_per_second_per_gpu: spread(
      t.tokens_per_second_per_gpu,
      'timing.tokens_per_second_per_gpu',
    ),
    iteration_seconds: spread(t.iteration_seconds, 'timing.iteration_seconds'),
    trainer: trainer && {
      train_runtime: optionalNumber(trainer, 'train_runtime', 'timing.trainer'),
      train_steps_per_second: optionalNumber(trainer, 'train_steps_per_second', 'timing.trainer'),
      train_tokens_per_second: optionalNumber(trainer, 'train_tokens_per_second', 'timing.trainer'),
      mean_step_seconds: optionalNumber(trainer, 'mean_step_seconds', 'timing.trainer'),
    },
  };
}

/** The time model's step in a run report's estimate (cli_run.cpp estimate_summary), or null. */
function readEstimateTime(est) {
  if (est.time === null || est.time === undefined) return null;
  const t = object(est.time, 'run.estimate.time');
  const range = (key) => {
    const r = object(need(t, key, 'run.estimate.time'), `run.estimate.time.${key}`);
    return {
      low: optionalNumber(r, 'low', `run.estimate.time.${key}`),
      high: optionalNumber(r, 'high', `run.estimate.time.${key}`),
    };
  };
  return {
    gpu: text(need(t, 'gpu', 'run.estimate.time'), 'run.estimate.time.gpu', { nullable: false }),
    gpus: whole(need(t, 'gpus', 'run.estimate.time'), 'run.estimate.time.gpus'),
    step_seconds: range('step_seconds'),
    tokens_per_second_per_gpu: range('tokens_per_second_per_gpu'),
  };
}

/**
 * A run's phases against its estimate: per phase, the largest measured
 * max_memory_allocated / max_memory_reserved over all steps and micro-steps
 * (null on a CPU run), and the estimate's allocated / reserved bytes at that
 * phase (backward: the larger of the start of backward and the layer sweep;
 * load: the estimate's weights, it has no load phase). `error`: (estimate -
 * measured) / measured, docs/validation.md's sign.
 */
export function runPhaseRows(run) {
  const est = (keys) => {
    const ps = run.estimate.phases.filter((p) => keys.includes(p.key));
    if (!ps.length) return { allocated: null, reserved: null };
    const max = (k) => (ps.some((p) => p[k] === null) ? null : Math.max(...ps.map((p) => p[k])));
    return { allocated: max('allocated_bytes'), reserved: max('reserved_bytes') };
  };
  const estimated = {
    load: { allocated: run.estimate.components.weights ?? null, reserved: null },
    forward: est(['forward']),
    loss: est(['loss']),
    backward: est(['backward_start', 'backward']),
    optimizer_step: est(['optimizer_step']),
  };
  return RUN_PHASES.map((phase) => {
    const records = run.phases.filter((p) => p.phase === phase);
    const peak = (k) => {
      const v = records.map((r) => r[k]).filter((x) => x !== null);
      return v.length ? Math.max(...v) : null;
    };
    const measured = {
      allocated: peak('max_allocated_bytes'),
      reserved: peak('max_reserved_bytes'),
    };
    const e = estimated[phase];
    const error =
      measured.allocated && e.allocated !== null
        ? (e.allocated - measured.allocated) / measured.allocated
        : null;
    const seconds = records.length ? Math.max(...records.map((r) => r.seconds)) : null;
    return { phase, records: records.length, estimated: e, measured, error, seconds };
  });
}

/**
 * A parsed report object -> the fields the page uses, checked. Throws a
 * ReportError naming the field for anything the writer would not produce.
 */
export function readProbeReport(doc) {
  object(doc, 'report');
  if (!('schema' in doc) && doc.error && typeof doc.error === 'object') {
    const { code, message } = doc.error;
    fail(
      'error',
      `This is vram-probe's error output, not a report: ${code ?? 'error'}: ${message ?? 'no message'}.`,
    );
  }
  const schema = need(doc, 'schema', '');
  if (schema !== PROBE_SCHEMA) {
    fail(
      'schema',
      `schema is ${describe(schema)}; this page reads vram-probe reports with schema "${PROBE_SCHEMA}".`,
    );
  }
  if (doc.tool !== undefined && doc.tool !== 'vram-probe')
    fail('tool', `tool is ${describe(doc.tool)}, not "vram-probe".`);
  const kind = kindOf(doc);
  const gpus = array(need(doc, 'gpus', ''), 'gpus').map((g, i) => readGpu(g, `gpus[${i}]`));
  // A `run` on a machine without a GPU ran on the CPU and saw no GPU.
  if (!gpus.length && kind !== 'run')
    fail('gpus', 'gpus is empty: a probe report lists the GPUs it saw.');
  const report = {
    kind,
    version: optionalText(doc, 'version'),
    host: optionalText(doc, 'host'),
    time: optionalText(doc, 'time'),
    source: optionalText(doc, 'source'),
    driver_version: optionalText(doc, 'driver_version'),
    cuda_driver_version: optionalText(doc, 'cuda_driver_version'),
    gpus,
    errors: readErrors(doc),
  };
  if (kind === 'watch' || kind === 'run') report.timing = readTiming(doc);
  if (kind === 'watch') report.watch = readWatch(doc, gpus);
  if (kind === 'run') {
    report.run = readRun(object(doc.run, 'run'));
    // On a GPU the script ran under `watch`: its NVML measurement comes too.
    if ('peak' in doc) report.watch = readWatch(doc, gpus);
  }
  if (kind === 'overheads') report.overheads = readOverheads(doc, gpus);
  if (kind === 'nccl') report.nccl = readNccl(doc, gpus);
  return report;
}

/** Report text -> {report} or {error: ReportError}. Never throws. */
export function parseProbeReport(textIn) {
  const t = String(textIn ?? '');
  if (t.length > MAX_REPORT_CHARS) {
    return {
      error: new ReportError(
        'report',
        `This file is ${(t.length / 1024 ** 2).toFixed(1)} MB: far larger than any vram-probe report.`,
      ),
    };
  }
  if (!t.trim()) return { error: new ReportError('report', 'The report is empty.') };
  let doc;
  try {
    doc = JSON.parse(t);
  } catch (e) {
    return {
      error: new ReportError(
        'report',
        `That is not valid JSON (${e.message}). Drop the file vram-probe wrote with --json or --out.`,
      ),
    };
  }
  try {
    return { report: readProbeReport(doc) };
  } catch (e) {
    if (e instanceof ReportError) return { error: e };
    return { error: new ReportError('report', `The report could not be read: ${e.message}`) };
  }
}

/**
 * The job's measured peak, best first: the driver's high-water mark
 * (accounting), else the polled per-process peak (NVML usedGpuMemory), else
 * the device's growth over the baseline (when the driver never listed the
 * job's processes, as in containers). {bytes, source} or null.
 */
export function measuredPeak(w) {
  const p = w.peak;
  if (p.accounting_max_bytes !== null)
    return { bytes: p.accounting_max_bytes, source: 'accounting' };
  if (p.process_used_bytes !== null) return { bytes: p.process_used_bytes, source: 'process' };
  if (p.device_used_bytes !== null && w.baseline.device_used_bytes !== null) {
    return {
      bytes: Math.max(0, p.device_used_bytes - w.baseline.device_used_bytes),
      source: 'device_growth',
    };
  }
  return null;
}

/**
 * The timeline series that matches measuredPeak: the process's usage, or the
 * device's growth over the baseline. [{t_ms, bytes}] without gaps.
 */
export function measuredSeries(w) {
  const perProcess = w.peak.process_used_bytes !== null || w.peak.accounting_max_bytes !== null;
  const base = w.baseline.device_used_bytes ?? 0;
  const points = [];
  for (const s of w.timeline) {
    const v = perProcess
      ? s.process_used_bytes
      : s.device_used_bytes === null
        ? null
        : Math.max(0, s.device_used_bytes - base);
    if (v !== null) points.push({ t_ms: s.t_ms, bytes: v });
  }
  return points;
}

// ---- the GPU catalog --------------------------------------------------------

// Words in NVML / rocm-smi names that name the vendor or the product line, not
// the card ("NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-32GB", "AMD Instinct
// MI300X", "NVIDIA RTX 6000 Ada Generation").
const VENDOR_WORDS = new Set([
  'NVIDIA',
  'TESLA',
  'GEFORCE',
  'QUADRO',
  'AMD',
  'INSTINCT',
  'GENERATION',
]);

function tokens(name) {
  return String(name)
    .toUpperCase()
    .split(/[\s\-_/]+/)
    .filter((t) => t && !VENDOR_WORDS.has(t));
}

// A catalog name without its memory suffix: "RTX 6000 Ada 48GB" -> RTX 6000 ADA.
function modelTokens(catalogName) {
  return tokens(catalogName).filter((t) => !/^\d+GB$/.test(t));
}

/**
 * The catalog card for a GPU the probe saw. Its name's tokens are matched
 * against each catalog name without the memory suffix, so "NVIDIA
 * A100-SXM4-80GB" finds the A100s and "NVIDIA H100 NVL" prefers "H100 NVL
 * 94GB" over "H100 80GB" (more tokens); the memory total picks among the
 * rest (A100 80GB vs 40GB). With no name match, a card whose total is within
 * 2 % of the GPU's is taken when it is the only one (several are offered).
 * Returns {name, how, candidates, memory_differs} or null.
 */
export function matchCatalogGpu(gpu, catalog) {
  if (!gpu || !catalog?.length) return null;
  const have = new Set(tokens(gpu.name ?? ''));
  const total = gpu.total;
  const distance = (g) => (total === null ? 0 : Math.abs(g.memory_bytes - total) / total);
  const byName = catalog
    .map((g) => ({ g, words: modelTokens(g.name) }))
    .filter(({ words }) => words.length && words.every((w) => have.has(w)));
  if (byName.length) {
    const most = Math.max(...byName.map((c) => c.words.length));
    const named = byName.filter((c) => c.words.length === most).map((c) => c.g);
    const best = [...named].sort((a, b) => distance(a) - distance(b))[0];
    return {
      name: best.name,
      how: named.length > 1 && total !== null ? 'name and memory' : 'name',
      candidates: [best.name],
      // A variant the catalog lacks (GH200 with 144 GB): the name matches,
      // the memory does not.
      memory_differs: distance(best) > 0.05,
    };
  }
  if (total === null) return null;
  const close = catalog.filter((g) => distance(g) <= 0.02);
  if (!close.length) return null;
  close.sort((a, b) => distance(a) - distance(b));
  return {
    name: close.length === 1 ? close[0].name : null,
    how: 'memory',
    candidates: close.map((g) => g.name),
    memory_differs: false,
  };
}

// ---- comparing with the estimate ----------------------------------------------

/**
 * A watch report against an estimate result: the estimate's device-view peak
 * (peak_bytes: what nvidia-smi shows for the process) minus the measured
 * peak, in bytes and as a fraction of the measurement (docs/validation.md's
 * sign: negative = the estimate is below). `tone` picks the reading.
 */
export function compareWatch(w, result) {
  const measured = measuredPeak(w);
  const estimate = result?.peak_bytes;
  if (!measured || !Number.isSafeInteger(estimate)) return null;
  const gap = estimate - measured.bytes;
  const error = measured.bytes > 0 ? gap / measured.bytes : null;
  // Over by more than ~10 % of the estimate: beyond what the context and the
  // cuBLAS workspaces explain (allocator fragmentation, or another job).
  const over = estimate > 0 ? (measured.bytes - estimate) / estimate : null;
  // Half as much again either way is no overhead: the form and the job
  // differ (another model, batch or sequence length).
  let tone = 'close';
  if (error === null || over === null) tone = 'unknown';
  else if (over > 0.5) tone = 'far_under';
  else if (over > 0.1) tone = 'under';
  else if (error > 0.5) tone = 'far_over';
  else if (error > 0.05) tone = 'over';
  else if (error < -0.05) tone = 'slightly_under';
  const context = result.components?.find((c) => c.key === 'cuda_context')?.bytes ?? null;
  const allocated = result.peak_allocated_bytes;
  // The fragmentation that closes the gap: the core adds
  // overheads.fragmentation x allocated (core/src/train/estimate_train.cpp).
  const fragmentation =
    tone === 'under' && Number.isSafeInteger(allocated) && allocated > 0
      ? Math.min(4, (measured.bytes - estimate) / allocated)
      : null;
  return { estimate, measured, gap, error, tone, context, fragmentation };
}
