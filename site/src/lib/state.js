// The page's state, in @preact/signals. Three inputs (the model, the form
// settings, the loaded estimator) and two derived values (the request JSON and
// the estimator's outcome). Every component reads these; nothing else holds
// state that the URL must carry.

import { batch, signal, computed, effect } from '@preact/signals';
import { coreDefault, fieldInfo } from './fields.js';
import { getPath, putPath } from './paths.js';
import { DEFAULT_PRESET, hasPreset, loadPreset, loadedPreset } from './presets.js';
import { OPTIMIZERS } from './vocabulary.js';
import { callOffThread, workersAvailable } from './planner.js';

export { DEFAULT_PRESET };

/**
 * Where the form deliberately starts away from the core's default
 * (core/src/fields.cpp), in one place. buildRequest sends each of these, so
 * the request for the default form is what `vram-probe estimate` computes
 * with the matching flags (site/tests/wasm/fields.test.js).
 */
export const FORM_START = Object.freeze({
  // The default preset is a 1B model; the page opens on the job most people
  // plan for it, a LoRA fine-tune, where the core's default is full training.
  'train.method': 'lora',
  // PEFT's "all-linear", the first choice of the target select; the core's
  // default (absent) is PEFT's per-family list, which the select cannot show.
  'train.lora.targets': 'all-linear',
  // '' = the framework release's FSDP version, not sent: the core's release
  // rule picks it and lists it (hf from transformers 5.10.3: the Trainer's
  // FSDP2; before: FSDP1, the field's own default).
  'parallel.fsdp_version': '',
});

// How the form's boxes hold a field whose core default is "absent" (null):
// prompt 0 = the whole context, nodes 1 = one node, '' = not set, 'auto' =
// decided by the GPU. buildRequest sends none of these as such.
const FORM_ABSENT = {
  'infer.prompt_len': 0,
  // llama.cpp: 0 / -1 / '' = the engine's default for its release (not sent).
  'infer.ctx_size': 0,
  'infer.n_gpu_layers': -1,
  'infer.n_batch': 0,
  'infer.flash_attn': '',
  'infer.cache_type_v': '',
  'infer.engine_version': '',
  'parallel.nodes': 1,
  'parallel.fsdp_reduce_dtype': '',
  'parallel.nvls': 'auto',
  deepspeed: '',
  'gpu.name': '',
  // The custom-capacity box's start, sent only once "custom" is chosen.
  'gpu.memory_gib': 24,
  'hardware.link': '',
  'time.prices': {},
};

/** The form's start value of a request field: FORM_START, else the core's default. */
export function formStart(path) {
  if (path in FORM_START) return FORM_START[path];
  const d = coreDefault(path);
  return d === null && path in FORM_ABSENT ? FORM_ABSENT[path] : d;
}

const f = formStart;

export const DEFAULT_SETTINGS = Object.freeze({
  task: f('task'),
  train: {
    // The training framework (train.framework): its recipe's defaults fill
    // the form (applyFramework) and are left out of the request, so the core
    // applies and lists them.
    framework: f('train.framework'),
    // Its release ('' = the newest, which the core names in the result):
    // sent as train.framework NAME@RELEASE (core/include/vram/releases.h).
    release: '',
    method: f('train.method'),
    micro_batch: f('train.micro_batch'),
    seq_len: f('train.seq_len'),
    // VLMs only (the box shows when the model has a vision tower).
    images_per_sample: f('train.images_per_sample'),
    grad_accum: f('train.grad_accum'),
    precision: f('train.precision'),
    optimizer: f('train.optimizer'),
    grad_checkpointing: f('train.grad_checkpointing'),
    attention: f('train.attention'),
    padding: f('train.padding'),
    fused_loss: f('train.fused_loss'),
    activation_offload: f('train.activation_offload'),
    optimizer_in_backward: f('train.optimizer_in_backward'),
    // torch.compile: accepted, not modelled (the core warns the estimate is eager mode's).
    compile: f('train.compile'),
    lora: {
      rank: f('train.lora.rank'),
      alpha: f('train.lora.alpha'),
      targets: f('train.lora.targets'),
    },
    // Method freeze: trainable modules, comma-separated; '' = the last two
    // layers (LLaMA-Factory's freeze_trainable_layers default of 2).
    freeze_modules: '',
  },
  infer: {
    engine: f('infer.engine'),
    batch: f('infer.batch'),
    context_len: f('infer.context_len'),
    prompt_len: f('infer.prompt_len'),
    images_per_prompt: f('infer.images_per_prompt'),
    weights_dtype: f('infer.weights_dtype'),
    kv_dtype: f('infer.kv_dtype'),
    entrypoint: f('infer.entrypoint'),
    gpu_memory_utilization: f('infer.gpu_memory_utilization'),
    max_num_seqs: f('infer.max_num_seqs'),
    max_num_batched_tokens: f('infer.max_num_batched_tokens'),
    block_size: f('infer.block_size'),
    enforce_eager: f('infer.enforce_eager'),
    // llama.cpp, Ollama, LM Studio.
    ctx_size: f('infer.ctx_size'),
    n_gpu_layers: f('infer.n_gpu_layers'),
    n_batch: f('infer.n_batch'),
    n_ubatch: f('infer.n_ubatch'),
    flash_attn: f('infer.flash_attn'),
    cache_type_k: f('infer.cache_type_k'),
    cache_type_v: f('infer.cache_type_v'),
    // The engine's release ('' = the newest modelled; every engine's one
    // field, infer.engine_version).
    engine_version: f('infer.engine_version'),
    // llama.cpp --parallel / OLLAMA_NUM_PARALLEL, sent as infer.batch; 0 = the
    // release's default (llama-server 2025-12: 4 slots; Ollama: by version).
    parallel: 0,
    // SGLang.
    mem_fraction_static: f('infer.mem_fraction_static'),
    chunked_prefill_size: f('infer.chunked_prefill_size'),
    cuda_graph_max_bs: f('infer.cuda_graph_max_bs'),
  },
  parallel: {
    gpus: f('parallel.gpus'),
    tp: f('parallel.tp'),
    pp: f('parallel.pp'),
    cp: f('parallel.cp'),
    zero: f('parallel.zero'),
    fsdp: f('parallel.fsdp'),
    offload_optimizer: f('parallel.offload_optimizer'),
    offload_params: f('parallel.offload_params'),
    sequence_parallel: f('parallel.sequence_parallel'),
    gpus_per_node: f('parallel.gpus_per_node'),
    nodes: f('parallel.nodes'),
    ep: f('parallel.ep'),
    vp: f('parallel.vp'),
    distributed_optimizer: f('parallel.distributed_optimizer'),
    main_grads_fp32: f('parallel.main_grads_fp32'),
    fsdp_version: f('parallel.fsdp_version'),
    fsdp_reduce_dtype: f('parallel.fsdp_reduce_dtype'),
    nccl_channels: f('parallel.nccl_channels'),
    nvls: f('parallel.nvls'),
  },
  // A pasted DeepSpeed config (its JSON text; '' = none). Its
  // zero_optimization / micro-batch / accumulation / bf16 settings fill the
  // request where the form leaves a field out.
  deepspeed: f('deepspeed'),
  // mode 'catalog' uses gpu.name from vram.version().gpus; 'custom' a capacity in GiB.
  gpu: { mode: 'catalog', name: f('gpu.name'), memory_gib: f('gpu.memory_gib') },
  // The layout planner's framework ('' = the core decides from the form's
  // layout). Not part of the estimate's request.
  // host_ram_gib: host RAM per node for the offload check (null = the core's
  // default, stated in the plan's notes).
  planner: { framework: '', host_ram_gib: null },
  // Measured fixed overheads, in bytes, from a vram-probe report dropped on
  // the page (`vram-probe overheads` / `vram-probe nccl`); null = the core's
  // own figure (the 512 MiB context prior, the modelled NCCL buffers).
  overheads: {
    cuda_context_bytes: f('overheads.cuda_context_bytes'),
    nccl_bytes: f('overheads.nccl_bytes'),
  },
  // The time model's inputs (time.*): the run's size (tokens, or samples x
  // mean length x epochs), the card's price per GPU-hour and overrides of
  // the default price table by card name (all in the link).
  time: {
    tokens: f('time.tokens'),
    samples: f('time.samples'),
    mean_len: f('time.mean_len'),
    epochs: f('time.epochs'),
    gpu_hour_usd: f('time.gpu_hour_usd'),
    prices: f('time.prices'),
  },
  // The machine around the cards (hardware.*); absent = the card's catalog row.
  hardware: {
    link: f('hardware.link'),
    network_gbps: f('hardware.network_gbps'),
    host_memory_gbs: f('hardware.host_memory_gbs'),
    matmul_tflops: f('hardware.matmul_tflops'),
    memory_gbs: f('hardware.memory_gbs'),
  },
  // Request fields an imported file set that the form has no box for
  // (train.lora.dropout, train.quant.double_quant, DeepSpeed bucket sizes),
  // by path; buildRequest sends them as they are (lib/import.js applyImport).
  imported: {},
  // PYTORCH_CUDA_ALLOC_CONF for the reserved-memory replay (training);
  // max_split_size_mb null = unlimited.
  allocator: {
    conf: f('allocator.conf'),
    expandable_segments: f('allocator.expandable_segments'),
    max_split_size_mb: f('allocator.max_split_size_mb'),
  },
});

export function defaultSettings() {
  return structuredClone(DEFAULT_SETTINGS);
}

/** The model of a preset whose config.json is loaded, else null. */
function presetModel(id) {
  const p = loadedPreset(id);
  return p ? { source: 'preset', id: p.id, config: p.config } : null;
}

/** The form: everything but the model. */
export const settings = signal(defaultSettings());

/**
 * The model: {source: 'preset' | 'hf' | 'paste' | 'size', id, config, size?}
 * ('size': a parameter count the core sizes, config null). `config` is
 * null while a Hub fetch is in flight or a preset's config.json is loading
 * (setPreset).
 */
export const model = signal(presetModel(DEFAULT_PRESET));

/** What the model box says about loading: {state: 'idle'|'loading'|'error', message}. */
export const modelStatus = signal({ state: 'idle', message: '' });

/** The loaded WASM facade ({estimate, modelInfo, version}) or null. */
export const estimator = signal(null);
/** Why the estimator could not load, or null. */
export const estimatorLoadError = signal(null);

/**
 * Whether the full module (vram_plan.wasm) has loaded on this thread, false
 * until then. The module every visit loads estimates training for the
 * common Llama-shaped families; anything else it answers with the code
 * vram.notInModule (core/lite/reach.cpp). onThisThread then loads the full
 * module, and whatever read this signal is computed again once it is there.
 */
export const fullLoaded = signal(false);
/** Why the full module could not load, or null. */
const fullLoadError = signal(null);

/**
 * `call()` (vram.estimate or vram.modelInfo on this thread), or undefined
 * while the full module it needs loads; a failed load rethrows the
 * not_in_module error, which names the module.
 */
export function onThisThread(vram, call) {
  // Dependencies: a computed that calls this runs again when they change.
  const loaded = fullLoaded.value;
  const loadError = fullLoadError.value;
  try {
    return call();
  } catch (error) {
    if (error?.code !== vram.notInModule || loaded || loadError) throw error;
    vram.loadFull().then(
      () => {
        fullLoaded.value = true;
      },
      (cause) => {
        fullLoadError.value = cause;
      },
    );
    return undefined;
  }
}

/** vram.version(): schema, version, supported model types and the GPU catalog. */
export const versionInfo = computed(() => {
  const v = estimator.value;
  if (!v) return null;
  try {
    return v.version();
  } catch {
    return null;
  }
});

export const gpuCatalog = computed(() => versionInfo.value?.gpus ?? []);

/** The optimizer names the estimator knows, as select options. */
export const optimizerOptions = computed(() => {
  const names = versionInfo.value?.optimizers;
  return names?.length ? names.map((n) => ({ value: n, label: n })) : OPTIMIZERS;
});

/**
 * The core's summary of each model config read so far (modelInfo's object, or
 * an estimate's `result.model`, which is the same object plus
 * `params_trainable`), keyed by the config object. It depends on the config
 * alone, and settings edits keep the config object.
 */
const summaries = new WeakMap();

/** The summary of `config`, from the cache or, failing that, vram.modelInfo; null when the core cannot read it. */
function summaryOf(vram, config) {
  if (!summaries.has(config)) {
    let summary = null;
    try {
      summary = onThisThread(vram, () => vram.modelInfo({ config }));
    } catch {
      // The estimate says why.
    }
    // Not kept while the full module loads (onThisThread asks again).
    if (summary === undefined) return null;
    summaries.set(config, summary);
  }
  return summaries.get(config);
}

/**
 * The core's summary of the current model: exact count and facts (layers,
 * experts). The estimate carries it (`result.model`), so an edit makes one
 * call into the module; vram.modelInfo runs only when the estimate fails (the
 * form is invalid) and the config has no summary yet. null while the estimator
 * or the model is missing, or when the core cannot read the config (the
 * estimate then says why).
 */
export const modelFacts = computed(() => {
  const v = estimator.value;
  const config = model.value?.config;
  if (!v || (!config && !model.value?.size)) return null;
  return outcome.value?.result?.model ?? (config ? summaryOf(v, config) : null);
});

/**
 * Whether a modelInfo result has a vision tower (the core's breakdown names
 * it): the image-count boxes apply, and only then are their values sent.
 */
export function hasVisionTower(info) {
  return Boolean(info?.breakdown?.some((b) => b.component === 'vision_tower' && b.params > 0));
}

/** Routed experts per sparse layer of a modelInfo result; 0 for a dense model. */
export function routedExperts(info) {
  const n = info?.facts?.moe?.experts;
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/** Sets one field by dotted path ("train.seq_len") without mutating. */
export function setSetting(path, value) {
  const next = structuredClone(settings.value);
  putPath(next, path, value);
  // A release (infer.engine_version) is one engine's: another engine starts at its newest.
  if (path === 'infer.engine' && value !== settings.value.infer.engine)
    next.infer.engine_version = '';
  settings.value = next;
}

/**
 * The form's fields a framework's recipe may set (core/src/frameworks.cpp).
 * The framework defaults of fields the form does not show (LoRA dropout,
 * adapter dtype, double quantisation) are never sent, so the core applies
 * them too.
 */
export const FRAMEWORK_FORM_PATHS = Object.freeze([
  'train.precision',
  'train.optimizer',
  'train.grad_checkpointing',
  'train.attention',
  'train.padding',
  'train.fused_loss',
  'train.activation_offload',
  'train.optimizer_in_backward',
  'train.compile',
  'train.lora.rank',
  'train.lora.alpha',
  'train.lora.targets',
]);

/** A request value as the form holds it (a framework default's, an imported file's). */
export function formValueOf(path, value) {
  if (path === 'train.grad_checkpointing') {
    if (value === true) return 'full';
    if (value === false) return 'none';
  }
  if (path === 'train.lora.targets' && Array.isArray(value)) return value.join(',');
  return value;
}

/** The form's value of a field as the request carries it. */
function requestValueOf(path, value) {
  if (path === 'train.grad_checkpointing')
    return value === 'none' || value === 'full' ? value === 'full' : value;
  if (path === 'train.lora.targets') return loraTargets(value);
  return value;
}

/** The form's target text as the request's list ('all-linear' stays a word). */
function loraTargets(text) {
  return text === 'all-linear'
    ? 'all-linear'
    : String(text)
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
}

/**
 * The form values of a framework's defaults for a method, by path (only the
 * paths the form shows), from the core's table via vram.frameworkDefaults;
 * {} for hf (whose defaults are the fields' own) or without an estimator.
 * The tables are the full module's (vram_plan.wasm): undefined while it
 * loads (onThisThread starts the load; a computed that calls this runs again
 * once it is there).
 */
export function frameworkForm(vram, framework, method) {
  // hf's defaults are the fields' own, but a named hf release has rules.
  if (!vram || !framework || framework === coreDefault('train.framework')) return {};
  let answer;
  try {
    answer = onThisThread(vram, () => vram.frameworkDefaults({ framework, method }));
  } catch {
    return {};
  }
  if (answer === undefined) return undefined;
  const out = {};
  for (const d of answer.defaults) {
    if (FRAMEWORK_FORM_PATHS.includes(d.path)) out[d.path] = formValueOf(d.path, d.value);
  }
  return out;
}

/**
 * Settings with the framework's recipe for their method in the form: each
 * field a framework may set takes that framework's default, else the form's
 * own start (so leaving a framework undoes what it set). undefined while the
 * recipe loads (frameworkForm).
 */
export function applyFramework(s, vram) {
  const next = structuredClone(s);
  const fw = frameworkForm(vram, frameworkName(next.train), next.train.method);
  if (fw === undefined) return undefined;
  for (const path of FRAMEWORK_FORM_PATHS)
    putPath(next, path, path in fw ? fw[path] : formStart(path));
  return next;
}

/**
 * Settings from a link: the fields the framework's recipe sets that the link
 * did not (`given` lists the paths it did) take the recipe's values. Nothing
 * changes for hf or without an estimator; undefined while the recipe loads
 * (frameworkForm).
 */
export function fillFrameworkDefaults(s, vram, given) {
  const fw = frameworkForm(vram, s.train ? frameworkName(s.train) : undefined, s.train?.method);
  if (fw === undefined) return undefined;
  const missing = Object.keys(fw).filter((path) => !given.includes(path));
  if (!missing.length) return s;
  const next = structuredClone(s);
  for (const path of missing) putPath(next, path, fw[path]);
  return next;
}

/**
 * The train.framework value of the form's framework and release:
 * NAME@RELEASE, or NAME for its newest release.
 */
export function frameworkName(t) {
  return t.release ? `${t.framework}@${t.release}` : t.framework;
}

/** Whether the form's framework has a recipe of its own (not hf at its newest release). */
export function namesRecipe(t) {
  return Boolean((t?.framework && t.framework !== coreDefault('train.framework')) || t?.release);
}

/**
 * A change of the form that waits for a framework's recipe, or null:
 * `(settings, vram) => settings`, undefined while the recipe is not at hand.
 * The recipes are the full module's (vram_plan.wasm: the module every visit
 * loads answers hf at its newest release only), so a framework other than hf
 * or a release, chosen from the select, a link, an imported file, fills the
 * form once that module has loaded. Until then the page builds no request
 * (`request` is null and shows "Estimating…"): one naming the framework with
 * the form's own values would send them as the user's and override the
 * recipe's defaults, a wrong estimate.
 */
export const recipeWaiting = signal(null);

/**
 * Makes `next` the form and applies `fill` (a change needing a recipe) to it
 * at once when the recipe is at hand, else as soon as it is (recipeWaiting).
 * Call it inside a batch with the other changes of the same action.
 */
export function withRecipe(next, fill) {
  batch(() => {
    settings.value = next;
    recipeWaiting.value = fill;
  });
}

// Applies the waiting change once its recipe is at hand: the estimator has
// loaded and, for a framework other than hf, the full module (frameworkForm
// reads fullLoaded, so this runs again when it changes).
effect(() => {
  const fill = recipeWaiting.value;
  const vram = estimator.value;
  if (!fill || !vram) return;
  const next = fill(settings.peek(), vram);
  if (next === undefined) return;
  batch(() => {
    recipeWaiting.value = null;
    settings.value = next;
  });
});

/** Picks the training framework (at its newest release): its defaults replace the form's values of the fields it sets. */
export function setFramework(name) {
  const next = structuredClone(settings.value);
  next.train.framework = name;
  next.train.release = '';
  withRecipe(next, applyFramework);
}

/** Picks the framework's release ('' = the newest): its defaults fill the form as the framework's do. */
export function setRelease(release) {
  const next = structuredClone(settings.value);
  next.train.release = release;
  withRecipe(next, applyFramework);
}

/** Picks the training method; under a framework other than hf, its recipe for that method fills the form. */
export function setMethod(method) {
  const next = structuredClone(settings.value);
  next.train.method = method;
  if (namesRecipe(next.train)) withRecipe(next, applyFramework);
  else settings.value = next;
}

/**
 * Makes a bundled preset the model; false (nothing changes) when no preset
 * has this id. A preset whose config.json is not loaded yet (lib/presets.js)
 * is the model at once, with config null (the results wait for it, as for a
 * Hub fetch), and its config arrives a moment later, unless the model has
 * changed meanwhile.
 */
export function setPreset(id) {
  if (!hasPreset(id)) return false;
  const ready = presetModel(id);
  if (ready) {
    model.value = ready;
    modelStatus.value = { state: 'idle', message: '' };
    return true;
  }
  const waiting = { source: 'preset', id, config: null };
  model.value = waiting;
  modelStatus.value = { state: 'loading', message: `Loading the bundled config.json of ${id}…` };
  loadPreset(id).then(
    (p) => {
      if (model.peek() !== waiting) return;
      batch(() => {
        model.value = { source: 'preset', id: p.id, config: p.config };
        modelStatus.value = { state: 'idle', message: '' };
      });
    },
    (error) => {
      if (model.peek() !== waiting) return;
      modelStatus.value = {
        state: 'error',
        message: `Could not load the bundled config.json of ${id} (${error?.message ?? error}). Reload the page to try again.`,
      };
    },
  );
  return true;
}

/** The GPU the request names: the chosen catalog card, else a sensible default. */
export function chosenGpuName(s, catalog) {
  if (s.gpu.name) return s.gpu.name;
  if (!catalog.length) return '';
  const preferred = catalog.find((g) => /H100/i.test(g.name) && /80/.test(g.name));
  return (preferred ?? catalog[0]).name;
}

/** Decoder layers of a config (text_config for VLMs), or 0 when unknown. */
export function layerCount(config) {
  const c = config?.text_config ?? config ?? {};
  const n = c.num_hidden_layers ?? c.n_layer ?? c.num_layers ?? 0;
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/** Freeze's trainable modules: the user's list, or the last two layers. */
export function freezeModules(text, config) {
  const names = String(text ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  if (names.length) return names;
  const n = layerCount(config);
  return n >= 2 ? [`layers.${n - 2}`, `layers.${n - 1}`] : ['layers.0'];
}

/**
 * The pasted DeepSpeed config text -> {config: object | null, error: ''}.
 * Empty text is no config; text that is not a JSON object is an error in words.
 */
export function parseDeepspeed(text) {
  const t = String(text ?? '').trim();
  if (!t) return { config: null, error: '' };
  let v;
  try {
    v = JSON.parse(t);
  } catch (e) {
    return {
      config: null,
      error: `That is not valid JSON (${e.message}). Paste the whole ds_config.json file.`,
    };
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) {
    return {
      config: null,
      error: 'A DeepSpeed config is a JSON object ({ "zero_optimization": { "stage": 2 }, … }).',
    };
  }
  return { config: v, error: '' };
}

/** Device of a DeepSpeed offload block ("cpu", "nvme") or '' when off or absent. */
function offloadDevice(block) {
  const d = block && typeof block === 'object' ? block.device : undefined;
  return typeof d === 'string' && d !== 'none' ? d : '';
}

/**
 * What a DeepSpeed config sets, so the form can leave those fields out of the
 * request (the request's own fields would win over the config's).
 */
export function deepspeedSets(ds) {
  const z = ds?.zero_optimization;
  const zo = z && typeof z === 'object' ? z : null;
  const enabled = (k) => ds?.[k] && typeof ds[k] === 'object' && ds[k].enabled === true;
  return {
    zero: zo && 'stage' in zo ? zo.stage : undefined,
    offload_optimizer:
      zo && 'offload_optimizer' in zo ? offloadDevice(zo.offload_optimizer) : undefined,
    offload_params: zo && 'offload_param' in zo ? offloadDevice(zo.offload_param) : undefined,
    micro_batch:
      ds && 'train_micro_batch_size_per_gpu' in ds ? ds.train_micro_batch_size_per_gpu : undefined,
    grad_accum:
      ds && 'gradient_accumulation_steps' in ds ? ds.gradient_accumulation_steps : undefined,
    precision: enabled('bf16') ? 'bf16' : enabled('fp16') ? 'fp16' : undefined,
  };
}

// Layout rules come from the core (vram.layoutOptions, core/src/request.cpp),
// so the page and the CLI cannot disagree on them. Until the module has
// loaded the options are off (the form shows them once it has).
// Answers are kept per estimator and layout: a render asks several times and
// most edits leave the layout as it was, so they cost no call.
const layoutAnswers = new WeakMap();
function layoutOptions(p, zero) {
  const v = estimator.value;
  if (!v) return null;
  const input = { gpus: p.gpus, tp: p.tp, pp: p.pp, cp: p.cp, zero, fsdp: p.fsdp ?? '' };
  const key = JSON.stringify(input);
  if (!layoutAnswers.has(v)) layoutAnswers.set(v, new Map());
  const known = layoutAnswers.get(v);
  if (!known.has(key)) {
    try {
      known.set(key, v.layoutOptions(input));
    } catch {
      known.set(key, null);
    }
  }
  return known.get(key);
}

/** Offloading parameters needs them sharded (the core's rule). */
export function canOffloadParams(p, zero = p.zero) {
  return layoutOptions(p, zero)?.offload_params ?? false;
}

/** Offloading optimizer states needs them sharded (the core's rule). */
export function canOffloadOptimizer(p, zero = p.zero) {
  return layoutOptions(p, zero)?.offload_optimizer ?? false;
}

/** Data parallel: what tensor, pipeline and context parallel leave of the GPUs (the core's rule); null before the module loads. */
export function dataParallel(p) {
  return layoutOptions(p, p.zero)?.dp ?? null;
}

/** Megatron's distributed optimizer replaces ZeRO and FSDP (the core's rule); one GPU has nothing to shard. */
export function canDistributeOptimizer(p, zero = p.zero) {
  return p.gpus > 1 && (layoutOptions(p, zero)?.distributed_optimizer ?? false);
}

/**
 * The request JSON (docs/schema.md) for the settings and a model config.
 * `experts` (routed experts per sparse layer, from modelInfo) decides whether
 * the expert-parallel box applies: it is not sent for a dense model.
 */
export function buildRequest(
  s,
  config,
  catalog = [],
  experts = 0,
  fwForm = {},
  vision = false,
  gguf = null,
) {
  const req = { model: gguf ? { gguf } : { config }, task: s.task };
  const ds = s.task === 'train' ? parseDeepspeed(s.deepspeed).config : null;
  const fromDs = deepspeedSets(ds);
  if (ds) req.deepspeed = ds;
  if (s.task === 'train') {
    const t = s.train;
    req.train = {
      method: t.method,
      micro_batch: t.micro_batch,
      seq_len: t.seq_len,
      grad_accum: t.grad_accum,
      precision: t.precision,
      optimizer: t.optimizer,
      // The contract's boolean for off/full; the selective modes are the core's extension.
      grad_checkpointing:
        t.grad_checkpointing === 'none' || t.grad_checkpointing === 'full'
          ? t.grad_checkpointing === 'full'
          : t.grad_checkpointing,
      attention: t.attention,
      fused_loss: t.fused_loss,
    };
    // What the DeepSpeed config sets, it sets: the form's boxes step aside.
    if (fromDs.micro_batch !== undefined) delete req.train.micro_batch;
    if (fromDs.grad_accum !== undefined) delete req.train.grad_accum;
    if (fromDs.precision !== undefined) delete req.train.precision;
    // Sent when not the core's default, so the core lists the default it applied.
    if (t.padding && t.padding !== coreDefault('train.padding')) req.train.padding = t.padding;
    // `vision`: the model has a vision tower, so the box is on the form; a
    // count left from an earlier VLM is not sent for a text model.
    if (vision && t.images_per_sample > 0) req.train.images_per_sample = t.images_per_sample;
    if (t.activation_offload) req.train.activation_offload = true;
    if (t.optimizer_in_backward) req.train.optimizer_in_backward = true;
    if (t.compile) req.train.compile = true;
    if (t.method === 'lora' || t.method === 'qlora') {
      req.train.lora = {
        rank: t.lora.rank,
        alpha: t.lora.alpha,
        targets: loraTargets(t.lora.targets),
      };
    }
    if (t.method === 'freeze')
      req.train.trainable_modules = freezeModules(t.freeze_modules, config);
    if (namesRecipe(t)) {
      req.train.framework = frameworkName(t);
      // A field at the framework's default is left out, so the core applies
      // and lists it (result.framework.defaults_applied) exactly as
      // `vram-probe estimate --framework` does; one the user changed is sent,
      // false included (the framework's true would otherwise apply).
      for (const [path, value] of Object.entries(fwForm)) {
        if (path === 'train.precision' && fromDs.precision !== undefined) continue;
        const keys = path.split('.').slice(1);
        const parent = keys.slice(0, -1).reduce((o, k) => o?.[k], req.train);
        if (!parent) continue;
        const form = getPath(s, path);
        if (
          JSON.stringify(requestValueOf(path, form)) === JSON.stringify(requestValueOf(path, value))
        )
          delete parent[keys[keys.length - 1]];
        else parent[keys[keys.length - 1]] = requestValueOf(path, form);
      }
    }
  } else if (isLlamaEngine(s.infer.engine)) {
    req.infer = llamaInfer(s.infer, Boolean(gguf));
  } else {
    const i = s.infer;
    const served = i.engine === 'vllm' || i.engine === 'sglang';
    req.infer = {
      engine: i.engine,
      batch: i.batch,
      context_len: i.context_len,
      weights_dtype: i.weights_dtype,
      kv_dtype: i.kv_dtype,
    };
    // The prompt matters to transformers' and LitGPT's prefill only; vLLM
    // profiles max_num_batched_tokens instead, SGLang its prefill chunk.
    if (!served && i.prompt_len > 0) req.infer.prompt_len = i.prompt_len;
    if (vision && i.images_per_prompt > 0) req.infer.images_per_prompt = i.images_per_prompt;
    // Absent, an engine's own defaults (by release and GPU) apply.
    const given = (key) => {
      if (i[key] !== null && i[key] !== undefined && i[key] !== '') req.infer[key] = i[key];
    };
    if (i.engine === 'vllm') {
      Object.assign(req.infer, {
        gpu_memory_utilization: i.gpu_memory_utilization,
        block_size: i.block_size,
        enforce_eager: i.enforce_eager,
        entrypoint: i.entrypoint,
      });
      given('max_num_seqs');
      given('max_num_batched_tokens');
    }
    // The release (infer.engine_version; absent, the newest modelled).
    if (served) given('engine_version');
    if (i.engine === 'sglang') {
      given('mem_fraction_static');
      given('chunked_prefill_size');
      given('cuda_graph_max_bs');
    }
  }
  const p = s.parallel;
  if (s.task === 'infer' && isLlamaEngine(s.infer.engine)) {
    // llama.cpp splits layers over the GPUs itself (--split-mode layer).
    req.parallel = { gpus: p.gpus };
  } else if (s.task === 'infer') {
    // Inference shards with tensor parallelism alone: one replica over tp GPUs.
    req.parallel = { gpus: p.tp, dp: 1, tp: p.tp, pp: 1, zero: 0 };
  } else {
    req.parallel = { gpus: p.gpus, dp: dataParallel(p), tp: p.tp, pp: p.pp };
    if (p.cp > 1) req.parallel.cp = p.cp;
    const zero = fromDs.zero ?? p.zero;
    if (fromDs.zero === undefined) req.parallel.zero = p.zero;
    if (p.fsdp) req.parallel.fsdp = p.fsdp;
    // The offload boxes are shown only where they are valid; a hidden box is not sent.
    if (
      fromDs.offload_optimizer === undefined &&
      p.offload_optimizer &&
      canOffloadOptimizer(p, zero)
    )
      req.parallel.offload_optimizer = true;
    if (fromDs.offload_params === undefined && p.offload_params && canOffloadParams(p, zero))
      req.parallel.offload_params = true;
    if (p.sequence_parallel && p.tp > 1) req.parallel.sequence_parallel = true;
    // With nodes the core derives the GPUs per node (gpus / nodes); the
    // hybrid-shard box applies to a single node count only.
    if (p.gpus > 1 && p.nodes > 1) req.parallel.nodes = p.nodes;
    else if (p.fsdp === 'hybrid_shard') req.parallel.gpus_per_node = p.gpus_per_node;
    if (experts > 0 && p.ep > 1) req.parallel.ep = p.ep;
    if (p.pp > 1 && p.vp > 1) req.parallel.vp = p.vp;
    if (p.distributed_optimizer && canDistributeOptimizer(p, zero)) {
      req.parallel.distributed_optimizer = true;
      if (!p.main_grads_fp32) req.parallel.main_grads_fp32 = false;
    }
    if (p.fsdp) {
      if (p.fsdp_version === 1 || p.fsdp_version === 2) req.parallel.fsdp_version = p.fsdp_version;
      if (p.fsdp_reduce_dtype) req.parallel.fsdp_reduce_dtype = p.fsdp_reduce_dtype;
    }
    if (p.gpus > 1) {
      if (p.nccl_channels !== DEFAULT_SETTINGS.parallel.nccl_channels)
        req.parallel.nccl_channels = p.nccl_channels;
      if (p.nvls === 'on' || p.nvls === 'off') req.parallel.nvls = p.nvls === 'on';
    }
  }
  // What imported files set that the form has no box for.
  if (s.task === 'train') {
    for (const [path, value] of Object.entries(s.imported ?? {})) {
      if (path.startsWith('train.lora.') && !req.train.lora) continue;
      putPath(req, path, value);
    }
  }
  // The caching allocator's settings, when they differ from PyTorch's.
  const a = s.allocator ?? {};
  const alloc = {};
  if (a.conf) alloc.conf = a.conf;
  if (a.expandable_segments) alloc.expandable_segments = true;
  if (Number.isSafeInteger(a.max_split_size_mb)) alloc.max_split_size_mb = a.max_split_size_mb;
  if (Object.keys(alloc).length) req.allocator = alloc;
  // Sent whenever set: the core applies nccl_bytes only where there is a
  // communicator (several GPUs), and ignores it otherwise.
  const measured = Object.entries(s.overheads ?? {}).filter(
    ([, bytes]) => Number.isSafeInteger(bytes) && bytes >= 0,
  );
  if (measured.length) req.overheads = Object.fromEntries(measured);
  if (s.gpu.mode === 'custom') {
    req.gpu = { memory_gib: s.gpu.memory_gib };
  } else {
    const name = chosenGpuName(s, catalog);
    if (name) req.gpu = { name };
  }
  const time = timeFields(s);
  if (time) req.time = time;
  const hardware = hardwareFields(s.hardware);
  if (hardware) req.hardware = hardware;
  return req;
}

/** infer.engine llama_cpp, ollama or lmstudio: the GGUF engines. */
export function isLlamaEngine(engine) {
  return engine === 'llama_cpp' || engine === 'ollama' || engine === 'lmstudio';
}

/**
 * The `infer` object for a llama.cpp engine: what the form sets, leaving out
 * what stands at "the engine's default" (0, -1, '') so the core applies and
 * lists the default of the engine's release. Ollama's context is num_ctx
 * (infer.context_len); llama.cpp's is --ctx-size. A GGUF file says its own
 * types, so weights_dtype (a llama-quantize type for a config) goes with a
 * config only.
 */
function llamaInfer(i, gguf) {
  const out = { engine: i.engine, n_ubatch: i.n_ubatch, cache_type_k: i.cache_type_k };
  if (i.parallel > 0) out.batch = i.parallel;
  if (i.engine === 'ollama') out.context_len = i.context_len;
  else if (i.ctx_size > 0) out.ctx_size = i.ctx_size;
  if (!gguf) out.weights_dtype = i.weights_dtype;
  if (i.n_gpu_layers >= 0) out.n_gpu_layers = i.n_gpu_layers;
  if (i.n_batch > 0) out.n_batch = i.n_batch;
  if (i.flash_attn) out.flash_attn = i.flash_attn;
  if (i.cache_type_v && i.engine !== 'ollama') out.cache_type_v = i.cache_type_v;
  if (i.engine_version) out.engine_version = i.engine_version;
  return out;
}

const positive = (v) => typeof v === 'number' && Number.isFinite(v) && v > 0;

/** The request's time.* fields from the form (null when it sets none). */
function timeFields(s) {
  const t = s.time ?? {};
  const out = {};
  if (s.task === 'train') {
    // The run's size: tokens, or samples (with a mean length and epochs).
    if (Number.isSafeInteger(t.tokens) && t.tokens > 0) out.tokens = t.tokens;
    else if (Number.isSafeInteger(t.samples) && t.samples > 0) {
      out.samples = t.samples;
      if (Number.isSafeInteger(t.mean_len) && t.mean_len > 0) out.mean_len = t.mean_len;
      if (positive(t.epochs) && t.epochs !== coreDefault('time.epochs')) out.epochs = t.epochs;
    }
  }
  if (positive(t.gpu_hour_usd)) out.gpu_hour_usd = t.gpu_hour_usd;
  const prices = Object.entries(t.prices ?? {}).filter(([, usd]) => positive(usd));
  if (prices.length) out.prices = Object.fromEntries(prices);
  return Object.keys(out).length ? out : null;
}

/** The request's hardware.* fields from the form (null when it sets none). */
function hardwareFields(h = {}) {
  const out = {};
  if (h.link) out.link = h.link;
  for (const k of ['network_gbps', 'host_memory_gbs', 'matmul_tflops', 'memory_gbs']) {
    if (positive(h[k])) out[k] = h[k];
  }
  return Object.keys(out).length ? out : null;
}

/**
 * The request the first estimate sends: the time model is the full module's
 * (core/src/reach.h), so the core answers with time.enabled false and the
 * time lane asks the full module for the rest a moment later (timed).
 */
export function withoutTime(req) {
  return req ? { ...req, time: { ...(req.time ?? {}), enabled: false } } : req;
}

/**
 * The request for any settings and config, as the page builds its own (the
 * pinned setup of a comparison uses it too).
 */
export function requestFor(s, config, vram = estimator.value, fwForm = undefined, gguf = null) {
  // The routed experts only decide whether parallel.ep (> 1) is sent: the
  // request reads them only then, from the config's summary (not from
  // modelFacts, which is read from the estimate of this request).
  const experts = vram && s.parallel?.ep > 1 ? routedExperts(summaryOf(vram, config)) : 0;
  const fw =
    fwForm ??
    (s.task === 'train' ? frameworkForm(vram, frameworkName(s.train), s.train.method) : {});
  // The framework's recipe is loading: no request from the wrong defaults.
  if (fw === undefined) return null;
  // Likewise the vision tower only decides whether an image count is sent.
  const images = s.task === 'train' ? s.train?.images_per_sample : s.infer?.images_per_prompt;
  const vision = Boolean(vram && config && images > 0 && hasVisionTower(summaryOf(vram, config)));
  return buildRequest(s, config, gpuCatalog.value, experts, fw, vision, gguf);
}

export const request = computed(() => {
  const config = model.value?.config;
  const size = model.value?.size;
  const gguf = model.value?.gguf;
  if (gguf) return withCheckpoint(requestFor(settings.value, null, null, {}, gguf), model.value);
  if (!config && !size) return null;
  // A framework's recipe is still to fill the form (recipeWaiting).
  const fw = framework.value;
  if (recipeWaiting.value || fw === undefined) return null;
  const s = settings.value;
  // The module is read only when the config's summary decides something:
  // expert parallel (routed experts) or an image count (a vision tower).
  const images = s.task === 'train' ? s.train?.images_per_sample : s.infer?.images_per_prompt;
  const req = requestFor(
    s,
    config,
    (s.parallel?.ep > 1 || images > 0) && config ? estimator.value : null,
    fw,
  );
  // Quick sizing: the core builds the model from the count (model.size).
  if (!config) req.model = { size };
  return withCheckpoint(req, model.value);
});

/**
 * Adds the model's checkpoint tensor list (model.safetensors, read from the
 * Hub's safetensors headers) to a request: the core builds an architecture it
 * does not know from it, and cross-checks one it knows.
 */
export function withCheckpoint(req, m) {
  if (req && m?.safetensors) req.model.safetensors = m.safetensors;
  // A vision projector GGUF (llama.cpp --mmproj) goes with the GGUF engines.
  if (req && m?.mmproj && isLlamaEngine(req.infer?.engine)) req.model.mmproj = m.mmproj;
  return req;
}

/**
 * The training frameworks as select options, labelled by the core's table
 * (the fields table's train.framework labels, bundled: fields.json).
 */
export const frameworkOptions = computed(() => {
  const f = fieldInfo('train.framework');
  return (f?.values ?? []).map((name) => ({ value: name, label: f.labels?.[name] ?? name }));
});

/**
 * The chosen framework's releases as select options, newest first, after
 * "newest" itself ('': the core applies the newest and says which), from the
 * core's release table (the fields table's train.framework releases).
 */
export const releaseOptions = computed(() => {
  const list = fieldInfo('train.framework')?.releases?.[settings.value.train.framework] ?? [];
  const newest = list[list.length - 1];
  return [
    { value: '', label: newest ? `newest (${newest.version}, ${newest.date})` : 'newest' },
    ...list
      .slice()
      .reverse()
      .map((r) => ({ value: r.version, label: `${r.version} (${r.date})` })),
  ];
});

/** The form values of the chosen framework's defaults for the chosen method (frameworkForm; undefined while they load). */
export const framework = computed(() => {
  const s = settings.value;
  return s.task === 'train'
    ? frameworkForm(estimator.value, frameworkName(s.train), s.train.method)
    : {};
});

/**
 * The estimate the worker answered last: {request, outcome}, or null before
 * the first. In a browser every estimate runs in the estimate lane's Web
 * Worker (lib/planner.js): a Llama-2-70B estimate with its GPU table is 80-100
 * ms and a DeepSeek-V3 one on 64 GPUs seconds, which on the page's thread
 * blocked typing (issue 18).
 */
export const answered = signal(null);

/** Whether an estimate for a newer request than the one shown is on its way. */
export const estimating = signal(false);

/**
 * The estimate for the current request: {result} or {error} (an
 * EstimatorError with code, path and message), or null while the estimator or
 * the model is not there yet. In a browser it is the worker's latest answer
 * (`answered`), which stays on screen while the next one is computed
 * (`estimating`); without Worker (Node, the unit tests) the estimate runs
 * here, synchronously.
 */
export const outcome = computed(() => {
  const vram = estimator.value;
  const req = request.value;
  if (!vram || !req) return null;
  if (workersAvailable) {
    // Another model's estimate is not shown while this one's is computed.
    const a = answered.value;
    const same =
      a &&
      (a.request.model?.config ?? a.request.model?.size ?? a.request.model?.gguf) ===
        (req.model?.config ?? req.model?.size ?? req.model?.gguf);
    return same ? a.outcome : null;
  }
  let result;
  try {
    result = onThisThread(vram, () => vram.estimate(withoutTime(req)));
  } catch (error) {
    return { error };
  }
  // The full module is loading.
  if (result === undefined) return null;
  const config = req.model?.config;
  if (result.model && config) summaries.set(config, result.model);
  return { result };
});

/** The request the shown outcome answers (in a browser it may lag the form's by one estimate). */
export const outcomeRequest = computed(() =>
  workersAvailable ? (answered.value?.request ?? null) : request.value,
);

// The estimate lane: one request in flight, and only the newest one waiting,
// so typing four digits makes at most two estimates, not four; an answer a
// newer request has already replaced is not painted.
let inFlight = false;
let waiting = null;

function sendNewest() {
  if (inFlight || !waiting) return;
  const { req, vram } = waiting;
  waiting = null;
  inFlight = true;
  callOffThread('estimate', 'estimate', withoutTime(req), vram).then((answer) => {
    inFlight = false;
    const config = req.model?.config;
    if (answer.result?.model && config) summaries.set(config, answer.result.model);
    if (waiting) {
      sendNewest();
      return;
    }
    answered.value = { request: req, outcome: answer };
    estimating.value = false;
  });
}

if (workersAvailable) {
  effect(() => {
    const vram = estimator.value;
    const req = request.value;
    if (!vram || !req) return;
    waiting = { req, vram };
    estimating.value = true;
    sendNewest();
  });
}

/**
 * The time model's answer for the newest request: {request, outcome} with
 * outcome {result: the result's `time` object} or {error}, or null before the
 * first. The full module (vram_plan.wasm) estimates the request again with
 * the time in it, in the time lane's worker (lib/planner.js), after the
 * first estimate has painted; without Worker, on this thread.
 */
export const timed = signal(null);

/** The time object of the shown estimate's request, or null (while it is computed, or on error). */
export const timeResult = computed(() => {
  const t = timed.value;
  const req = outcomeRequest.value;
  if (!t || !req || t.request !== req) return null;
  return t.outcome.result ?? null;
});

/** Why the time could not be computed for the shown request, or null. */
export const timeError = computed(() => {
  const t = timed.value;
  return t && t.request === outcomeRequest.value ? (t.outcome.error ?? null) : null;
});

let timeInFlight = false;
let timeWaiting = null;

function sendNewestTime() {
  if (timeInFlight || !timeWaiting) return;
  const { req, vram } = timeWaiting;
  timeWaiting = null;
  timeInFlight = true;
  const done = (answer) => {
    timeInFlight = false;
    if (timeWaiting) {
      sendNewestTime();
      return;
    }
    timed.value = {
      request: req,
      outcome: answer.error ? { error: answer.error } : { result: answer.result?.time ?? null },
    };
  };
  if (workersAvailable) {
    callOffThread('time', 'estimateTime', req, vram).then(done);
  } else {
    vram.time(req).then(
      (result) => done({ result }),
      (error) => done({ error }),
    );
  }
}

// After the browser has painted what is on screen and run the render's
// effects: a frame, then the first idle period after it (at most 300 ms
// later), or a task where there is no idle callback.
function afterPaint(fn) {
  if (typeof requestAnimationFrame !== 'function') {
    fn();
    return;
  }
  requestAnimationFrame(() =>
    typeof requestIdleCallback === 'function'
      ? requestIdleCallback(fn, { timeout: 300 })
      : setTimeout(fn, 0),
  );
}

// The time follows the shown estimate: asked once the estimate of the same
// request has answered and been painted, so a first visit paints its
// estimate before it downloads the full module.
effect(() => {
  const vram = estimator.value;
  const req = outcomeRequest.value;
  const o = outcome.value;
  if (!vram || !req || !o?.result || (!workersAvailable && !vram.time)) return;
  if (timed.peek()?.request === req) return;
  timeWaiting = { req, vram };
  afterPaint(sendNewestTime);
});
