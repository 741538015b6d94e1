// What every end-to-end test shares: where the built page, the native probe
// and Chromium are, a static server for dist/ on 127.0.0.1, and the native
// estimator run on a request (the page's numbers are checked against it).

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const siteDir = resolve(here, '..', '..');
export const distDir = join(siteDir, 'dist');
export const probe = process.env.VRAM_PROBE || resolve(siteDir, '..', 'build', 'bin', 'vram-probe');
export const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.webmanifest': 'application/manifest+json',
};

/**
 * The built page served on 127.0.0.1 and one Chromium for a test file: registers
 * node:test's before (fails when dist/ is not built) and after hooks, and returns
 * an object whose `base` (the page's URL) and `browser` are set before the tests run.
 */
export function servedPage() {
  const shared = { base: '', browser: null, server: null };
  before(async () => {
    assert.ok(existsSync(join(distDir, 'index.html')), 'build the page first: npm run build');
    shared.server = await serve(distDir);
    shared.base = `http://127.0.0.1:${shared.server.address().port}/`;
    shared.browser = await chromium.launch({ executablePath: chromiumPath });
  });
  after(async () => {
    await shared.browser?.close();
    await new Promise((ok) => (shared.server ? shared.server.close(ok) : ok()));
  });
  return shared;
}

/** A static file server for `root` on 127.0.0.1 and a free port. */
export function serve(root) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    let file = normalize(join(root, path));
    if (!file.startsWith(root + sep) && file !== root) {
      res.writeHead(403).end();
      return;
    }
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!existsSync(file)) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] || 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

/** `vram-probe <command> --request <request> --json`, parsed; fails the test on an error exit. */
export function runProbe(request, command = 'estimate') {
  const dir = mkdtempSync(join(tmpdir(), 'vram-e2e-req-'));
  const file = join(dir, 'request.json');
  writeFileSync(file, JSON.stringify(request));
  const run = spawnSync(probe, [command, '--request', file, '--json'], {
    encoding: 'utf8',
    timeout: 30000,
  });
  rmSync(dir, { recursive: true, force: true });
  assert.equal(run.status, 0, `vram-probe failed (${run.status}): ${run.stderr || run.stdout}`);
  return JSON.parse(run.stdout);
}
