// Prints the built page's transfer size: every file in dist/, raw and gzip
// (level 9, what static hosts such as GitHub Pages typically serve), grouped
// by kind. The WebAssembly binary is its own .wasm file; a module chunk that
// still embeds one as base64 (an -sSINGLE_FILE build) is flagged with the
// binary's decoded size. Timings and the first visit's share: bench-page.mjs.
//
// Run: npm run build && npm run size

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'dist');

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;

const files = walk(dist).map((path) => {
  const data = readFileSync(path);
  const text = data.toString('latin1');
  const b64 = text.match(/data:application\/octet-stream;base64,([A-Za-z0-9+/=]+)/);
  return {
    file: relative(dist, path),
    kind: extname(path).slice(1),
    raw: data.length,
    gzip: gzipSync(data, { level: 9 }).length,
    wasm: b64 ? Buffer.from(b64[1], 'base64').length : 0,
  };
});
files.sort((a, b) => b.raw - a.raw);

const width = Math.max(...files.map((f) => f.file.length));
console.log(`${'file'.padEnd(width)}  ${'raw'.padStart(11)}  ${'gzip'.padStart(11)}`);
for (const f of files) {
  const note = f.wasm ? `  (embeds a ${kib(f.wasm)} WebAssembly binary)` : '';
  console.log(
    `${f.file.padEnd(width)}  ${kib(f.raw).padStart(11)}  ${kib(f.gzip).padStart(11)}${note}`,
  );
}
const sum = (list, key) => list.reduce((n, f) => n + f[key], 0);
const byKind = {};
for (const f of files) (byKind[f.kind] ??= []).push(f);
console.log('');
for (const [kind, list] of Object.entries(byKind)) {
  console.log(
    `${kind.padEnd(6)} ${kib(sum(list, 'raw')).padStart(11)} raw  ${kib(sum(list, 'gzip')).padStart(11)} gzip`,
  );
}
console.log(
  `total  ${kib(sum(files, 'raw')).padStart(11)} raw  ${kib(sum(files, 'gzip')).padStart(11)} gzip`,
);
