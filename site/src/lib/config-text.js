// A configuration file's text as the tree the core's import reads, under the
// rules of one imported file (core/include/vram/import.h), the same as the
// CLI's readers (probe-agent/src/config_files.cpp and yaml_tree.cpp): JSON
// when JSON.parse reads it, else YAML 1.2 with the npm `yaml` package; a key
// given twice, more after the first document, an alias expanded too often
// (npm yaml's own rule, which the CLI copies), more than MAX_IMPORT_VALUES
// values or 64 levels of nesting are errors naming the file (and the line
// where the reader gives one); a number that is not finite is kept as the
// text ".inf", "-.inf" or ".nan", so the core names the key that holds it.
// Loaded on the first import (lib/import.js), never on a first visit; the
// YAML package on the first file that is not JSON.

/** vram::kMaxImportValues: values in one file's tree, aliases expanded. */
export const MAX_IMPORT_VALUES = 100000;
/** vram::kMaxImportAliases: npm yaml's maxAliasCount (its default, written out). */
export const MAX_IMPORT_ALIASES = 100;
/** limits::kMaxJsonDepth: levels of nesting. */
export const MAX_IMPORT_DEPTH = 64;

const TWICE = 'is given twice in one mapping; keep one';

// An Error with the core's error code (bad_json, out_of_range), as the CLI's readers answer.
function readError(code, message) {
  return Object.assign(new Error(message), { code });
}
const AFTER =
  'more after the end of the first document (a second YAML document, or text after a JSON value); a config file holds one';

/**
 * The first key given twice in one object of a valid JSON text, as
 * {line, key}, or null. JSON.parse keeps the last value silently; the CLI's
 * reader refuses the file, and so does the page.
 */
export function duplicateJsonKey(text) {
  const stack = []; // per open object {keys, expectKey}; null for an array
  const structural = /[{}[\],\n"]/g;
  let line = 1;
  for (let m = structural.exec(text); m; m = structural.exec(text)) {
    const c = m[0];
    const top = stack.at(-1);
    if (c === '\n') line += 1;
    else if (c === '{') stack.push({ keys: new Set(), expectKey: true });
    else if (c === '[') stack.push(null);
    else if (c === '}' || c === ']') stack.pop();
    else if (c === ',') {
      if (top) top.expectKey = true;
    } else {
      // A string: its end is the next quote not escaped (valid JSON holds no raw newline in one).
      let end = text.indexOf('"', m.index + 1);
      while (escaped(text, end)) end = text.indexOf('"', end + 1);
      structural.lastIndex = end + 1;
      if (top?.expectKey) {
        const key = JSON.parse(text.slice(m.index, end + 1));
        if (top.keys.has(key)) return { line, key };
        top.keys.add(key);
        top.expectKey = false;
      }
    }
  }
  return null;
}

// An odd number of backslashes right before text[end]: the quote is escaped.
function escaped(text, end) {
  let n = 0;
  while (text[end - 1 - n] === '\\') n += 1;
  return n % 2 === 1;
}

/**
 * Walks the tree in place: counts its values (shared alias targets once per
 * use, as the CLI expands them), checks the nesting, and replaces every
 * number that is not finite by its YAML spelling. Throws naming `name`.
 */
export function checkTree(name, tree) {
  let values = 0;
  const path = new Set(); // the objects being walked: one met again is its own ancestor
  const spell = (x) => (Number.isNaN(x) ? '.nan' : x > 0 ? '.inf' : '-.inf');
  const walk = (v, depth) => {
    values += 1;
    if (values > MAX_IMPORT_VALUES) {
      throw readError(
        'out_of_range',
        `${name}: more than ${MAX_IMPORT_VALUES} values (aliases expanded), the limit on an imported file`,
      );
    }
    if (!v || typeof v !== 'object') return;
    if (path.has(v)) {
      throw readError(
        'bad_json',
        `${name}: an alias is inside its own anchor (a recursive structure)`,
      );
    }
    if (depth >= MAX_IMPORT_DEPTH) {
      throw readError(
        'out_of_range',
        `${name}: nested deeper than ${MAX_IMPORT_DEPTH} levels (the limit on every input)`,
      );
    }
    path.add(v);
    for (const k of Object.keys(v)) {
      if (typeof v[k] === 'number' && !Number.isFinite(v[k])) v[k] = spell(v[k]);
      walk(v[k], depth + 1);
    }
    path.delete(v);
  };
  if (typeof tree === 'number' && !Number.isFinite(tree)) return spell(tree);
  walk(tree, 0);
  return tree;
}

// The key that starts at `pos` (where npm yaml reports a duplicate): a quoted
// key unquoted, a plain one up to its ':'.
function keyAt(text, pos) {
  const rest = text.slice(pos);
  const quoted = /^"(?:[^"\\]|\\.)*"/.exec(rest);
  if (quoted) return JSON.parse(quoted[0]);
  const single = /^'((?:[^']|'')*)'/.exec(rest);
  if (single) return single[1].replace(/''/g, "'");
  return /^[^:\n,}]*/.exec(rest)[0].trim();
}

// The YAML reader's error in the CLI's words where they say the same thing;
// `alias` is the alias node being resolved when the reader stopped.
function yamlError(name, text, e, alias) {
  const line = e.linePos?.[0]?.line ?? (alias ? lineAt(text, alias.range[0]) : undefined);
  const at = `${name}${line ? ` line ${line}` : ''}`;
  if (e.code === 'DUPLICATE_KEY') {
    return readError('bad_json', `${at}: key "${keyAt(text, e.pos?.[0] ?? 0)}" ${TWICE}`);
  }
  if (e.code === 'MULTIPLE_DOCS') return readError('bad_json', `${at}: ${AFTER}`);
  if (/Excessive alias count/.test(e.message)) {
    return readError(
      'out_of_range',
      `${at}: alias *${alias?.source ?? ''} is expanded too often (its uses x the aliases inside it exceed ${MAX_IMPORT_ALIASES}, npm yaml's "Excessive alias count" rule): refused as a resource exhaustion attack`,
    );
  }
  return readError('bad_json', `${at}: not valid YAML or JSON (${e.message.split('\n')[0]})`);
}

const lineAt = (text, offset) => text.slice(0, offset).split('\n').length;

// YAML through npm yaml's own parse (uniqueKeys, one document, maxAliasCount):
// parseDocument then toJS is what yaml.parse does; each alias node notes
// itself when it is resolved, so an "Excessive alias count" names its line.
async function readYaml(name, text) {
  const { parseDocument, visit } = await import('yaml');
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw yamlError(name, text, doc.errors[0]);
  let alias = null;
  visit(doc, {
    Alias(_key, node) {
      const resolve = node.resolve.bind(node);
      node.resolve = (d, ctx) => {
        if (ctx) alias = node;
        return resolve(d, ctx);
      };
    },
  });
  try {
    return doc.toJS({ maxAliasCount: MAX_IMPORT_ALIASES });
  } catch (e) {
    throw yamlError(name, text, e, alias);
  }
}

/** A file's text as the tree the core reads; rejects with an Error naming the file. */
export async function readConfigText(name, text) {
  let tree;
  try {
    tree = JSON.parse(text);
  } catch {
    return checkTree(name, await readYaml(name, text));
  }
  const twice = duplicateJsonKey(text);
  if (twice) throw readError('bad_json', `${name} line ${twice.line}: key "${twice.key}" ${TWICE}`);
  return checkTree(name, tree);
}
