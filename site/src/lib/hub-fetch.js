// Fetching config.json and the safetensors headers from the Hugging Face Hub,
// straight from the browser (the token and the ids: hub.js). A chunk of its
// own: actions.js and pin.js import it on the first Hub model.

import { HUB_ORIGIN, HubError, parseModelId } from './hub.js';

/** The config.json address of a parsed id. */
export function configUrl({ repo, revision }) {
  const path = repo
    .split('/')
    .map((p) => encodeURIComponent(p))
    .join('/');
  return `${HUB_ORIGIN}/${path}/resolve/${encodeURIComponent(revision)}/config.json`;
}

/**
 * Fetches and parses a model's config.json. Throws HubError with a sentence a
 * user can act on for every failure: bad id, gated/private (401/403), not
 * found (404), offline (network TypeError), other HTTP status, invalid JSON.
 */
export async function fetchHubConfig(idText, { token = '', signal } = {}) {
  const id = parseModelId(idText);
  if (!id) {
    throw new HubError(
      'invalid_id',
      `“${idText}” is not a Hugging Face model id. Use the form organisation/model, e.g. meta-llama/Llama-3.2-1B.`,
    );
  }
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token.trim()}`;
  let response;
  try {
    response = await fetch(configUrl(id), { headers, signal });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new HubError(
      'offline',
      `Could not reach the Hugging Face Hub to fetch ${id.repo} (you seem to be offline, or the request was blocked). Bundled presets and pasted configs still work without a network.`,
    );
  }
  const modelPage = `${HUB_ORIGIN}/${id.repo}`;
  // The Hub names the reason in X-Error-Code (exposed to CORS readers):
  // GatedRepo, RepoNotFound, EntryNotFound, RevisionNotFound.
  const errorCode = response.headers?.get?.('x-error-code') || '';
  if (response.status === 401 || response.status === 403) {
    if (errorCode === 'RepoNotFound') {
      throw new HubError(
        'not_found',
        `No model ${id.repo} on the Hub${token ? '' : ', or it is private (paste a token with read access to see private models)'}. Check the spelling.`,
        response.status,
      );
    }
    throw new HubError(
      'gated',
      token
        ? `${id.repo} is gated or private and the Hub refused this token (${response.status}). Make sure you were granted access: request access on the model page (${modelPage}) and paste a token with read access.`
        : `${id.repo} is gated or private (${response.status}): request access on the model page (${modelPage}) and paste a token with read access below.`,
      response.status,
    );
  }
  if (response.status === 404) {
    const what =
      errorCode === 'RevisionNotFound'
        ? `revision “${id.revision}” of ${id.repo}`
        : errorCode === 'EntryNotFound'
          ? `a config.json in ${id.repo} (the repository exists but has no config.json at its root)`
          : `model ${id.repo}`;
    throw new HubError(
      'not_found',
      `Not found on the Hub (404): no ${what}. Check the spelling, or paste the config.json instead.`,
      404,
    );
  }
  if (!response.ok) {
    throw new HubError(
      'http',
      `The Hub answered ${response.status} ${response.statusText || ''}for ${id.repo}. Try again later, or paste the config.json.`.replace(
        '  ',
        ' ',
      ),
      response.status,
    );
  }
  let config;
  try {
    config = await response.json();
  } catch {
    throw new HubError('bad_json', `The config.json of ${id.repo} is not valid JSON.`);
  }
  if (!config || typeof config !== 'object' || Array.isArray(config)) {
    throw new HubError('bad_json', `The config.json of ${id.repo} is not a JSON object.`);
  }
  return { id: id.revision === 'main' ? id.repo : `${id.repo}@${id.revision}`, config };
}

/**
 * The request's `model.safetensors` inventory (vram/checkpoint.h) from what
 * @huggingface/hub's parseSafetensorsMetadata returns: every tensor's name,
 * dtype and shape, each taken from the shard the index's weight_map names,
 * and the index's metadata.total_size when it has one.
 */
export function toInventory(parsed) {
  const tensors = [];
  const seen = new Set();
  const weightMap = parsed.sharded ? parsed.index?.weight_map : null;
  const add = (header, shard) => {
    for (const [name, info] of Object.entries(header ?? {})) {
      if (name === '__metadata__' || seen.has(name)) continue;
      if (weightMap && weightMap[name] !== undefined && weightMap[name] !== shard) continue;
      seen.add(name);
      tensors.push({ name, dtype: info.dtype, shape: info.shape, shard });
    }
  };
  if (parsed.sharded) {
    for (const [file, header] of Object.entries(parsed.headers ?? {})) add(header, file);
  } else {
    add(parsed.header, parsed.filepaths?.[0] ?? 'model.safetensors');
  }
  const inventory = { tensors };
  const meta = parsed.sharded ? parsed.index?.metadata : parsed.header?.__metadata__;
  const total = Number(meta?.total_size);
  if (Number.isSafeInteger(total) && total >= 0) inventory.metadata = { total_size: total };
  return inventory;
}

/**
 * Reads a model's checkpoint tensor list from the Hub without downloading
 * weights: model.safetensors.index.json and each shard's header (or the
 * single model.safetensors' header), through @huggingface/hub's
 * parseSafetensorsMetadata, which sends the token and reads the headers with
 * HTTP range requests. Returns the inventory, or null when the repository has
 * no safetensors weights. `fetch` is for tests.
 */
export async function fetchHubTensors(idText, { token = '', fetch: fetchImpl } = {}) {
  const id = parseModelId(idText);
  if (!id) {
    throw new HubError('invalid_id', `“${idText}” is not a Hugging Face model id.`);
  }
  const { parseSafetensorsMetadata } = await import('@huggingface/hub');
  let parsed;
  try {
    parsed = await parseSafetensorsMetadata({
      repo: { type: 'model', name: id.repo },
      revision: id.revision,
      hubUrl: HUB_ORIGIN,
      ...(token ? { accessToken: token.trim() } : {}),
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
    });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    if (/does not seem to contain safetensors/.test(String(e?.message))) return null;
    if (e instanceof TypeError) {
      throw new HubError(
        'offline',
        `Could not read the checkpoint headers of ${id.repo} from the Hub (offline, or the request was blocked).`,
      );
    }
    throw new HubError(
      'tensors',
      `Could not read the checkpoint headers of ${id.repo}: ${e?.message ?? e}`,
      e?.statusCode ?? null,
    );
  }
  return toInventory(parsed);
}
