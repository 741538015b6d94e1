// The JavaScript face of the WebAssembly estimator.
//
// The modules (vram_core.mjs from wasm/bindings.cpp, vram_plan.mjs from
// bindings_plan.cpp, vram_io.mjs from bindings_io.cpp) expose private
// functions that take and return JSON text. This facade loads each
// module lazily and once, turns objects into text and back, and turns the
// boundary's {"error": {...}} object into a thrown EstimatorError (manifold's
// ManifoldError), so callers never see a bare number or a null.
//
// Types and the JSON contract: vram.d.ts beside this file.

/** A request or a model the estimator rejected, or a failure of the module. */
export class EstimatorError extends Error {
  /**
   * @param {{code?: string, message?: string, path?: string}} error the
   *   boundary's error object
   */
  constructor({ code = 'internal', message = 'unknown error', path = '' } = {}) {
    super(message);
    this.name = 'EstimatorError';
    this.code = code;
    this.path = path;
  }
}

// The same stable codes core uses (core/include/vram/status.h) for the
// failures that happen on this side of the boundary.
const kBadJson = 'bad_json';
const kInternal = 'internal';
const kOutOfRange = 'out_of_range';
// core's errc::kNotInModule: this module leaves the request out, the full
// module (plan) answers it.
export const kNotInModule = 'not_in_module';

let vramPromise = null;
let plannerPromise = null;

// The three WebAssembly modules (wasm/CMakeLists.txt): `core`, which every
// visit loads; `plan` (the layout planner and the suggestions), loaded by the
// planner's and the suggestions' Web Workers on their first search (or by the
// first plan or suggest call here); and `io` (importing and exporting
// framework files), loaded on the first importFiles or exportConfig only.
// `core` carries the training estimate of the common Llama-shaped families
// under hf at its newest release only (core/lite/reach.cpp); `plan` is the
// full estimator too: what `core` leaves out (another family, a safetensors
// list, a DeepSpeed config, inference, another framework, a release or
// library versions, the fields table) it answers with the code
// not_in_module, and the facade asks `plan` (below, fullAnswer); once `plan`
// is loaded it answers every estimate (built for speed, where `core` is built
// for size). Each binary is its own file
// beside this facade (no longer embedded as base64): `new URL('./x',
// import.meta.url)` is the pattern Vite turns into a hashed asset URL, and the
// browser compiles it while it downloads (the Emscripten loader uses
// WebAssembly.instantiateStreaming when the URL is http(s) and the server
// sends application/wasm; MDN "WebAssembly.instantiateStreaming()"). Node
// cannot fetch() a file: URL, so there (Vitest, the bench) the bytes are read
// from disk, from beside this file, and handed over as `wasmBinary`, which the
// loader instantiates directly.
const MODULES = {
  core: {
    url: new URL('./vram_core.wasm', import.meta.url),
    file: 'vram_core.wasm',
    glue: () => import('./vram_core.mjs'),
  },
  plan: {
    url: new URL('./vram_plan.wasm', import.meta.url),
    file: 'vram_plan.wasm',
    glue: () => import('./vram_plan.mjs'),
  },
  io: {
    url: new URL('./vram_io.wasm', import.meta.url),
    file: 'vram_io.wasm',
    glue: () => import('./vram_io.mjs'),
  },
};
const modulePromises = { core: null, plan: null, io: null };
// The instance each module's calls go to: loadModule's, until a failure
// has unwound in it (below, renew).
const live = { core: null, plan: null, io: null };

function inNode() {
  return typeof process !== 'undefined' && Boolean(process.versions?.node);
}

async function moduleBytes(which) {
  // Variables, not literals: neither Vite (which rewrites the literal
  // pattern above to its dev server's address under Vitest) nor a bundler
  // resolves these.
  const fsName = 'node:fs/promises';
  const { readFile } = await import(/* @vite-ignore */ fsName);
  return readFile(new URL(MODULES[which].file, import.meta.url));
}

// The compiled WebAssembly.Module of the modules the page hands to its
// workers (compileModule), by name.
const compiled = { core: null, plan: null };

/**
 * A module's compiled WebAssembly.Module (`core` or `plan`), compiled once per
 * page: while it downloads where the browser can (WebAssembly.compileStreaming
 * needs the server's application/wasm; any other type falls back to compiling
 * the downloaded bytes), from the bytes on disk in Node. The page hands the
 * same compiled module to its Web Workers (useCompiledModule), which
 * instantiate it without downloading or compiling it again (a
 * WebAssembly.Module is structured-cloneable: MDN "WebAssembly.Module"): the
 * core to the estimates' worker, the plan module to the planner's and the
 * suggestions' workers.
 */
export function compileModule(which) {
  if (compiled[which] === null) {
    compiled[which] = (async () => {
      if (inNode()) return WebAssembly.compile(await moduleBytes(which));
      const url = MODULES[which].url.href;
      if (typeof WebAssembly.compileStreaming === 'function') {
        try {
          return await WebAssembly.compileStreaming(fetch(url));
        } catch {
          // Not served as application/wasm: compile the bytes below.
        }
      }
      const response = await fetch(url);
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      return WebAssembly.compile(await response.arrayBuffer());
    })().catch((cause) => {
      compiled[which] = null;
      throw cause;
    });
  }
  return compiled[which];
}

/** The core's compiled WebAssembly.Module (compileModule('core')). */
export function compileCore() {
  return compileModule('core');
}

/** In a Web Worker: instantiate the module the page compiled (compileModule's). */
export function useCompiledModule(which, module) {
  if (module instanceof WebAssembly.Module) compiled[which] = Promise.resolve(module);
}

/** In a Web Worker: instantiate the core the page compiled (compileCore's). */
export function useCompiledCore(module) {
  useCompiledModule('core', module);
}

// Emscripten's loader options for a module. The core and the plan module are
// instantiated from compileModule's module through the loader's
// instantiateWasm hook (Emscripten src/preamble.js: "Module['instantiateWasm']");
// the io module is loaded by the loader itself, from its URL (or, in Node,
// its bytes).
async function moduleOptions(which, fail) {
  if (which in compiled) {
    const module = await compileModule(which);
    return {
      instantiateWasm(imports, receive) {
        WebAssembly.instantiate(module, imports).then(
          (instance) => receive(instance, module),
          (cause) => fail(cause),
        );
        return {};
      },
    };
  }
  if (!inNode()) return { locateFile: () => MODULES[which].url.href };
  return { wasmBinary: await moduleBytes(which) };
}

// Load and instantiate a module on first use and share the promise (squoosh
// worker-utils, manifold getManifoldModule). The dynamic import keeps the
// module's JavaScript out of the page's first bundle until it is needed.
function loadModule(which = 'core') {
  if (modulePromises[which] === null) {
    let fail;
    const failed = new Promise((_, reject) => {
      fail = reject;
    });
    modulePromises[which] = Promise.all([MODULES[which].glue(), moduleOptions(which, fail)])
      .then(([{ default: create }, options]) => Promise.race([create(options), failed]))
      .then((module) => {
        live[which] = module;
        return module;
      })
      .catch((cause) => {
        // Let a later call try again instead of caching the failure forever.
        forget(which);
        throw new EstimatorError({
          code: kInternal,
          message: `could not load the WebAssembly module: ${describe(cause)}`,
        });
      });
  }
  return modulePromises[which];
}

// Drop a cached module so that the next call starts a new instance.
function forget(which) {
  modulePromises[which] = null;
  if (which === 'core') vramPromise = null;
  if (which === 'plan') plannerPromise = null;
}

// Replace `module`, in which a failure has unwound. Every module is built
// without C++ exceptions (core/include/vram/status.h): a failure (any
// rejected request) longjmps back to the public API, whose answer is the
// error as usual, but what the failed work had allocated stays allocated in
// that instance. So the facade starts a new instance from the compiled
// module (a few milliseconds: nothing is downloaded or compiled again) and
// sends the calls there once it is ready; until then the old one answers,
// correctly. The leak is bounded by the calls made in between.
// The io module, which is not kept compiled (its every call waits for
// loadModule), is only forgotten: its next call starts the new instance.
const renewing = new WeakSet();
function renew(which, module) {
  if (renewing.has(module)) return;
  renewing.add(module);
  forget(which);
  if (!(which in compiled)) return;
  loadModule(which).catch(() => {
    // loadModule forgot the failed load: the next call tries again.
  });
}

// Whether a failure has unwound in `module` since it started (each module
// counts them: wasm/unwinds.h _unwinds).
function hasUnwound(module) {
  return typeof module._unwinds === 'function' && module._unwinds() > 0;
}

function describe(thrown) {
  return thrown instanceof Error ? thrown.message : String(thrown);
}

// Dotted path of the first NaN or Infinity inside `value`, in core's path
// style ("train.seq_len", "train.lora.targets[0]"), or null. Called only on
// values JSON.stringify accepted, so there are no cycles to guard against.
function nonFinitePath(value, path) {
  if (typeof value === 'number') return Number.isFinite(value) ? null : path;
  if (value === null || typeof value !== 'object') return null;
  const entries = Array.isArray(value)
    ? value.map((item, i) => [`${path}[${i}]`, item])
    : Object.entries(value).map(([key, item]) => [path ? `${path}.${key}` : key, item]);
  for (const [childPath, item] of entries) {
    const found = nonFinitePath(item, childPath);
    if (found !== null) return found;
  }
  return null;
}

// Object -> JSON text. JSON.stringify throws on cycles and BigInt and returns
// undefined for undefined and functions; all of those are bad requests.
function toText(value, what) {
  let text;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new EstimatorError({
      code: kBadJson,
      message: `${what} is not serialisable as JSON: ${describe(cause)}`,
    });
  }
  if (typeof text !== 'string') {
    throw new EstimatorError({
      code: kBadJson,
      message: `${what} must be a JSON object, got ${typeof value}`,
    });
  }
  // JSON.stringify writes NaN and Infinity as null, which core reads as "not
  // given" and would silently replace with a default. Name the field instead.
  // Every non-finite number becomes a null, so text without one has none.
  if (text.includes('null')) {
    const path = nonFinitePath(value, '');
    if (path !== null) {
      throw new EstimatorError({
        code: kOutOfRange,
        message: `${path || what} must be a finite number`,
        path,
      });
    }
  }
  return text;
}

// version()'s text, built once per module that has _version (core, plan):
// it never changes for a module's binary (so a renewed instance reuses it),
// and building it (the GPU catalog, every name list) is the most expensive
// call a page makes at start-up. The input limit is read from it.
const versionTexts = new Map();
function versionText(module, which = 'core') {
  if (!versionTexts.has(which)) versionTexts.set(which, call(module, '_version', undefined, which));
  return versionTexts.get(which);
}

// The core's limit on input text (limits::kMaxInputBytes, from version()),
// read once per module; the plan module reads it from its own _version (its
// workers load no core module), the io module (which has no _version) takes
// the same limit from the core module.
const inputLimits = new Map();
function maxInputBytes(module, which) {
  if (!inputLimits.has(which)) {
    inputLimits.set(which, JSON.parse(versionText(module, which)).limits.max_input_bytes);
  }
  return inputLimits.get(which);
}

// Call one raw binding. core never throws across the boundary (api.h), so
// anything thrown here is the module itself failing (out of memory, abort); a
// module that aborted cannot be used again, and one in which a failure has
// unwound holds memory it will not free: either is replaced (renew).
// Text longer than the core's input limit is refused here, before Embind
// copies it into the module's memory (a UTF-16 length above the limit is
// more UTF-8 bytes than the limit too); the core checks the bytes again.
function call(module, name, text, which = 'core', limitModule = module) {
  // The module that answers the limit, for forget() if it fails: this one, or the core.
  const limitWhich = limitModule === module ? which : 'core';
  if (text !== undefined && text.length > maxInputBytes(limitModule, limitWhich)) {
    const limit = maxInputBytes(limitModule, limitWhich);
    return JSON.stringify({
      error: {
        code: kOutOfRange,
        message: `input is more than ${limit} bytes, the ${limit}-byte (16 MiB) limit on every input`,
        path: '',
      },
    });
  }
  let out;
  try {
    out = text === undefined ? module[name]() : module[name](text);
  } catch (cause) {
    renew(which, module);
    throw new EstimatorError({
      code: kInternal,
      message: `the WebAssembly module failed: ${describe(cause)}`,
    });
  }
  if (hasUnwound(module)) renew(which, module);
  return out;
}

// JSON text -> object, throwing the boundary's error object as EstimatorError.
function fromText(text) {
  const value = JSON.parse(text);
  if (value !== null && typeof value === 'object' && 'error' in value) {
    throw new EstimatorError(value.error);
  }
  return value;
}

// Whether a module's answer text is the not_in_module error. An error is
// error_json(e).dump(2) (core/src/api.cpp), so the code is at a fixed place.
function notInModule(text) {
  return text.startsWith('{\n  "error": {\n    "code": "not_in_module"');
}

// The answer to `name` (_estimate, _modelInfo, _frameworkDefaults) from the
// full module once it is loaded (the core's answers are its answers byte for
// byte, site/tests/wasm/modules.test.js, and it is built for speed, 3-4x the
// core's: wasm/CMakeLists.txt), else from the core; for what the core leaves
// out, the core's not_in_module answer. Loading the full module is the
// caller's choice (loadFull): the estimates' Web Worker is handed the module
// the page compiled instead.
function fullAnswer(name, text) {
  if (live.plan !== null) return call(live.plan, name, text, 'plan');
  return call(live.core, name, text);
}

// The same, waiting for the full module when it is needed.
async function fullAnswerAsync(name, text) {
  if (live.plan !== null) return call(live.plan, name, text, 'plan');
  const out = call(await loadModule(), name, text);
  if (!notInModule(out)) return out;
  return call(await loadModule('plan'), name, text, 'plan');
}

/**
 * Load the full module (vram_plan.wasm), after which estimate and modelInfo
 * answer every request synchronously, not only the core's families. The page
 * calls it when an answer was not_in_module (then asks again); it is never
 * needed for the default presets.
 */
export function loadFull() {
  return loadModule('plan').then(() => true);
}

// One call into the io module (loaded on first use), with the core's input limit.
async function callIo(name, text) {
  const [io, core] = await Promise.all([loadModule('io'), loadModule('core')]);
  return call(io, name, text, 'io', core);
}

/**
 * Load the plan module (not the core) and return its calls (plan, suggest
 * and the full estimate), synchronous
 * once it is loaded: the planner's and the suggestions' Web Workers use this,
 * so they never load the core. The first call starts the load; every later
 * call returns the same promise.
 */
export function loadPlanner() {
  if (plannerPromise === null) {
    plannerPromise = loadModule('plan').then(() => ({
      plan: (request) => fromText(call(live.plan, '_plan', toText(request, 'the request'), 'plan')),
      // The full module's estimate: every family, inference, and the time
      // model (the result's `time`), which the core module leaves out.
      estimate: (request) =>
        fromText(call(live.plan, '_estimate', toText(request, 'the request'), 'plan')),
      // The time model alone: {schema, version, time}, without the memory
      // estimate's searches (the page's time lane).
      time: (request) => fromText(call(live.plan, '_time', toText(request, 'the request'), 'plan')),
      suggest: (request) =>
        fromText(call(live.plan, '_suggest', toText(request, 'the request'), 'plan')),
    }));
  }
  return plannerPromise;
}

/**
 * Load the module and return the estimator. The first call starts the load;
 * every later call returns the same promise. See vram.d.ts for the request and
 * result types.
 */
export function loadVram() {
  if (vramPromise === null) {
    // Each call goes to the live instance (renew).
    vramPromise = loadModule().then(() => ({
      // The full module's answer once it is loaded, else the core's
      // (fullAnswer): a request the core leaves out throws not_in_module
      // until loadFull() has resolved.
      estimate: (request) => fromText(fullAnswer('_estimate', toText(request, 'the request'))),
      modelInfo: (model) => fromText(fullAnswer('_modelInfo', toText(model, 'the model'))),
      // The same, waiting for the full module when the request needs it.
      estimateAsync: async (request) =>
        fromText(await fullAnswerAsync('_estimate', toText(request, 'the request'))),
      loadFull,
      // The code estimate and modelInfo throw for what only the full module answers.
      notInModule: kNotInModule,
      // The plan module's two calls: asynchronous, as the first one loads it.
      plan: async (request) => (await loadPlanner()).plan(request),
      suggest: async (request) => (await loadPlanner()).suggest(request),
      time: async (request) => (await loadPlanner()).time(request),
      version: () => fromText(versionText(live.core)),
      // In the full module only (the page bundles the table: site/src/lib/fields.json).
      fields: async () => fromText(call(await loadModule('plan'), '_fields', undefined, 'plan')),
      layoutOptions: (parallel) =>
        fromText(call(live.core, '_layoutOptions', toText(parallel, 'the parallel object'))),
      // hf at its newest release from the core; every other framework's
      // table is the full module's (not_in_module until loadFull()).
      frameworkDefaults: (query) =>
        fromText(fullAnswer('_frameworkDefaults', toText(query, 'the framework query'))),
      // The io module's two calls: asynchronous, as the first one loads it.
      importFiles: async (input) =>
        fromText(await callIo('_importFiles', toText(input, 'the imported files'))),
      exportConfig: async (input) =>
        fromText(await callIo('_exportConfig', toText(input, 'the request to export'))),
    }));
  }
  return vramPromise;
}

/**
 * Diagnostics of a module's live instance (`core`, `plan` or `io`): how many
 * failures have unwound in it (core is built without exceptions there; the
 * facade replaces an instance that has any, see renew) and
 * its linear memory in bytes.
 */
export async function instanceStats(which = 'core') {
  const module = await loadModule(which);
  return {
    unwinds: typeof module._unwinds === 'function' ? module._unwinds() : 0,
    memoryBytes: module.HEAP8.length,
  };
}

/**
 * The estimator's exact output text for a request text, errors included, as
 * `vram-probe estimate --request FILE --json` prints it. For byte-for-byte
 * comparisons and for saving results; `estimate` is the everyday call.
 */
export async function estimateRaw(requestText) {
  return fullAnswerAsync('_estimate', String(requestText));
}

/**
 * The exact model summary text for a model text (`{"config": {...}}`), errors
 * included, as `vram-probe params --config FILE --json` prints it.
 */
export async function modelInfoRaw(modelText) {
  return fullAnswerAsync('_modelInfo', String(modelText));
}

/**
 * One module's own answer text, without the facade's fallback: for tests
 * that check what the core module itself answers (`core`, `plan`).
 */
export async function moduleRaw(which, name, text) {
  return call(await loadModule(which), name, text === undefined ? undefined : String(text), which);
}

/**
 * The planner's exact output text for a request text, errors included, as
 * `vram-probe plan --request FILE --json` prints it.
 */
export async function planRaw(requestText) {
  return call(await loadModule('plan'), '_plan', String(requestText), 'plan');
}

/**
 * The fields table's exact text, as `vram-probe fields --json` prints it
 * (every request field: default, values, limits, label, flag, URL key).
 */
export async function fieldsRaw() {
  return call(await loadModule('plan'), '_fields', undefined, 'plan');
}

/**
 * The importer's exact output text for an input text ({"files": [{"file",
 * "content"}], "presets": [...]}), errors included: the bytes `vram-probe
 * import FILE... --json` prints for the same trees.
 */
export async function importFilesRaw(inputText) {
  return callIo('_importFiles', String(inputText));
}
