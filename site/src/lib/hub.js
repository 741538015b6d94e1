// The Hugging Face Hub on the page: model ids, the errors in words and the
// token. The optional token goes in an Authorization header to huggingface.co
// and nowhere else; it is kept in memory and, for the tab's lifetime only, in
// sessionStorage (never localStorage, never the URL). The fetches themselves
// (config.json, the safetensors headers) are hub-fetch.js, a chunk of its own
// loaded with the first Hub model: no first visit with a bundled preset needs
// them (README "Speed and size").

export const HUB_ORIGIN = 'https://huggingface.co';
const TOKEN_KEY = 'vram-planner.hf-token';

/** A failed Hub fetch, with a `kind` the page turns into words. */
export class HubError extends Error {
  constructor(kind, message, status = null) {
    super(message);
    this.name = 'HubError';
    this.kind = kind; // 'invalid_id' | 'gated' | 'not_found' | 'offline' | 'http' | 'bad_json'
    this.status = status;
  }
}

/**
 * Parses what a user types into {repo, revision}: "org/name", "name",
 * "org/name@revision" or a huggingface.co URL. Returns null when it cannot be
 * a Hub model id.
 */
export function parseModelId(text) {
  let s = String(text ?? '').trim();
  const url = s.match(/^https?:\/\/(?:www\.)?(?:huggingface\.co|hf\.co)\/(.+)$/i);
  if (url) {
    // https://huggingface.co/org/name/tree/rev or /blob/rev/config.json
    const parts = url[1].split(/[?#]/)[0].split('/').filter(Boolean);
    const treeAt = parts.findIndex((p) => p === 'tree' || p === 'blob' || p === 'resolve');
    const repoParts = treeAt === -1 ? parts.slice(0, 2) : parts.slice(0, treeAt);
    const revision = treeAt === -1 ? 'main' : parts[treeAt + 1] || 'main';
    s = `${repoParts.join('/')}@${revision}`;
  }
  const m = s.match(/^([A-Za-z0-9][\w.-]*(?:\/[A-Za-z0-9][\w.-]*)?)(?:@([\w./-]+))?$/);
  if (!m) return null;
  return { repo: m[1], revision: m[2] || 'main' };
}

/** The token remembered for this tab, or ''. */
export function loadToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}

/** Remembers the token for this tab only ('' forgets it). */
export function saveToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // sessionStorage can be unavailable (privacy mode): the token stays in memory.
  }
}
