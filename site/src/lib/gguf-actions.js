// The GGUF listing: a Hub repository's quant files (or dropped .gguf files),
// each with what the core answers for it on the chosen card — GPU memory,
// host memory, the largest -ngl and the longest context — and the action of
// taking one as the model. Its own chunk (loaded with the GGUF tab).

import { batch, signal } from '@preact/signals';
import { fetchGgufInventory, listGgufFiles, readGgufFile } from './gguf.js';
import { callOffThread, workersAvailable } from './planner.js';
import {
  estimator,
  isLlamaEngine,
  model,
  modelStatus,
  requestFor,
  setSetting,
  settings,
} from './state.js';

/**
 * {source: 'hub' | 'files', id, rows: [{name, size, projector, inventory,
 * error, answer}], state: 'idle' | 'loading' | 'error', message}.
 * answer: {peak_bytes, host_bytes, max_gpu_layers, max_ctx_size, verdict} or {error}.
 */
export const ggufListing = signal({ rows: [], state: 'idle', message: '' });

let ticket = 0;

/** The request for one file with the form's settings, on a GGUF engine. */
export function requestForGguf(inventory, s = settings.value) {
  const engine = isLlamaEngine(s.infer.engine) ? s.infer.engine : 'llama_cpp';
  const form = { ...s, task: 'infer', infer: { ...s.infer, engine } };
  return requestFor(form, null, null, {}, inventory);
}

async function answerFor(inventory) {
  const req = requestForGguf(inventory);
  const vram = estimator.value;
  let out;
  if (workersAvailable) {
    out = await callOffThread('gguf', 'estimate', req, vram);
  } else {
    try {
      out = { result: await vram.estimateAsync(req) };
    } catch (error) {
      out = { error };
    }
  }
  if (out.error) return { error: out.error.message };
  const r = out.result;
  return {
    peak_bytes: r.peak_bytes,
    host_bytes: r.infer.host_bytes,
    max_gpu_layers: r.infer.max_gpu_layers ?? null,
    max_ctx_size: r.infer.max_ctx_size ?? null,
    layers_total: r.infer.layers_total,
    verdict: r.fit?.verdict ?? null,
  };
}

function update(mine, index, patch) {
  if (mine !== ticket) return;
  const rows = ggufListing.value.rows.slice();
  rows[index] = { ...rows[index], ...patch };
  ggufListing.value = { ...ggufListing.value, rows };
}

/** Reads each row's header (read(row) -> inventory), then estimates the model files one by one. */
async function fill(mine, read) {
  const rows = ggufListing.value.rows;
  for (let i = 0; i < rows.length; i++) {
    try {
      update(mine, i, { inventory: await read(rows[i]) });
    } catch (error) {
      update(mine, i, { error: error.message });
    }
  }
  await reestimateGguf(mine);
}

/** Estimates every listed model file again (the form or the card changed). */
export async function reestimateGguf(mine = ticket) {
  const rows = ggufListing.value.rows;
  for (let i = 0; i < rows.length; i++) {
    const row = ggufListing.value.rows[i];
    if (mine !== ticket || !row.inventory || row.projector) continue;
    update(mine, i, { answer: await answerFor(row.inventory) });
  }
}

/** Lists a Hub repository's GGUF files and reads their headers (range requests only). */
export async function listGgufRepo(idText, { token = '', fetch: fetchImpl } = {}) {
  const mine = ++ticket;
  ggufListing.value = {
    rows: [],
    state: 'loading',
    message: `Listing the GGUF files of ${idText.trim()}…`,
  };
  let listed;
  try {
    listed = await listGgufFiles(idText, { token, ...(fetchImpl ? { fetch: fetchImpl } : {}) });
  } catch (error) {
    if (mine === ticket) ggufListing.value = { rows: [], state: 'error', message: error.message };
    return;
  }
  if (mine !== ticket) return;
  const { id, files } = listed;
  ggufListing.value = {
    source: 'hub',
    id: id.repo,
    state: files.length ? 'idle' : 'error',
    message: files.length ? '' : `${id.repo} has no .gguf files.`,
    rows: files.map((f) => ({ name: f.path, size: f.size, projector: f.projector, entry: f })),
  };
  await fill(mine, (row) =>
    fetchGgufInventory(id, row.entry, { token, ...(fetchImpl ? { fetch: fetchImpl } : {}) }),
  );
}

/** Dropped or opened .gguf files: their headers read in the browser, nothing uploaded. */
export async function loadGgufFiles(files) {
  const mine = ++ticket;
  const list = [...files].filter((f) => f.name.endsWith('.gguf'));
  ggufListing.value = {
    source: 'files',
    id: '',
    state: 'idle',
    message: '',
    rows: list.map((f) => ({
      name: f.name,
      size: f.size,
      projector: /mmproj/i.test(f.name),
      file: f,
    })),
  };
  await fill(mine, (row) => readGgufFile(row.file));
}

/** Takes a listed file as the model: a GGUF engine, the inference task. */
export function useGguf(row) {
  const base = ggufListing.value.source === 'hub' ? `${ggufListing.value.id}/` : '';
  batch(() => {
    model.value = {
      source: 'gguf',
      id: `${base}${row.name}`,
      gguf: row.inventory,
      mmproj: model.value?.mmproj ?? null,
    };
    modelStatus.value = { state: 'idle', message: '' };
    setSetting('task', 'infer');
    if (!isLlamaEngine(settings.value.infer.engine)) setSetting('infer.engine', 'llama_cpp');
  });
}

/** Attaches (or detaches) a listed projector file as llama.cpp's --mmproj. */
export function attachProjector(row, on) {
  model.value = {
    ...model.value,
    mmproj: on ? row.inventory : null,
    mmprojName: on ? row.name : null,
  };
}
