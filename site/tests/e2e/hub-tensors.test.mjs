// End to end: a model id whose model_type the estimator does not know, typed
// into the BUILT page (site/dist) in Debian's Chromium. huggingface.co is a
// mock (tests/hub-mock.mjs) answering through Playwright's route
// interception; every other address is blocked, so nothing touches the
// network. The page reads config.json, then the checkpoint's index and
// shard headers with range requests through @huggingface/hub, and the core
// estimates the model from its tensors: the peak it shows must equal
// `vram-probe estimate --request <the page's request JSON> --json`.
//
// Run: npm run build && node --test tests/e2e/hub-tensors.test.mjs
// Needs: /usr/bin/chromium (or CHROMIUM), build/bin/vram-probe (or VRAM_PROBE).

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { hubAnswer, TINY_PARAMS, tinyRepo } from '../hub-mock.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const siteDir = resolve(here, '..', '..');
const distDir = join(siteDir, 'dist');
const probe = process.env.VRAM_PROBE || resolve(siteDir, '..', 'build', 'bin', 'vram-probe');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const shots = process.env.VRAM_SCREENSHOT_DIR || tmpdir();
const REPO = 'acme/tiny-newarch';

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

function serve(root) {
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

function runProbe(request) {
  const dir = mkdtempSync(join(tmpdir(), 'vram-e2e-req-'));
  const file = join(dir, 'request.json');
  writeFileSync(file, JSON.stringify(request));
  const run = spawnSync(probe, ['estimate', '--request', file, '--json'], {
    encoding: 'utf8',
    timeout: 30000,
  });
  rmSync(dir, { recursive: true, force: true });
  assert.equal(run.status, 0, `vram-probe failed (${run.status}): ${run.stderr || run.stdout}`);
  return JSON.parse(run.stdout);
}

describe('an unknown model id against a mocked Hub, in Chromium', () => {
  let server;
  let browser;
  let page;
  let base;
  const files = tinyRepo('tiny_newarch');
  const hubRequests = [];
  const blocked = [];
  const consoleErrors = [];

  before(async () => {
    assert.ok(
      existsSync(join(distDir, 'index.html')),
      `no ${distDir}/index.html: run npm run build`,
    );
    assert.ok(existsSync(probe), `no native estimator at ${probe}`);
    server = await serve(distDir);
    base = `http://127.0.0.1:${server.address().port}/`;
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic'],
    });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await context.route('**/*', async (route) => {
      const req = route.request();
      const url = req.url();
      if (url.startsWith(base) || url.startsWith('data:') || url.startsWith('blob:')) {
        return route.continue();
      }
      if (new URL(url).origin !== 'https://huggingface.co') {
        blocked.push(url);
        return route.abort();
      }
      const cors = {
        'access-control-allow-origin': '*',
        'access-control-allow-headers': '*',
        'access-control-allow-methods': 'GET, HEAD',
      };
      if (req.method() === 'OPTIONS') return route.fulfill({ status: 204, headers: cors });
      hubRequests.push({ method: req.method(), url, range: req.headers().range });
      const a = hubAnswer(REPO, files, req.method(), url, req.headers());
      return route.fulfill({
        status: a.status,
        headers: { ...a.headers, ...cors },
        body: a.body ? Buffer.from(a.body) : '',
      });
    });
    page = await context.newPage();
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
  });

  after(async () => {
    await browser?.close();
    await new Promise((ok) => (server ? server.close(ok) : ok()));
  });

  it('reads the checkpoint headers and shows an exact count and the same peak as vram-probe', async (t) => {
    await page.goto(base);
    await page.getByRole('tab', { name: 'Hugging Face Hub' }).click();
    await page.getByLabel(/Model id/).fill(REPO);
    await page.getByRole('button', { name: 'Fetch config.json' }).click();
    const summary = page.getByRole('region', { name: 'Model summary' });
    try {
      await summary
        .getByText(TINY_PARAMS.toLocaleString('en-US'), { exact: true })
        .waitFor({ timeout: 30000 });
    } catch (e) {
      await page.screenshot({
        path: join(shots, 'vram-unknown-model-failure.png'),
        fullPage: true,
      });
      const box = await page.getByRole('region', { name: 'Model', exact: true }).textContent();
      throw new Error(
        `${e.message}\nmodel box: ${box}\nconsole: ${consoleErrors.join(' | ')}\nhub: ${JSON.stringify(hubRequests)}\nblocked: ${blocked.join(' ')}`,
      );
    }
    await summary.getByText(/Built from the checkpoint's tensors/).waitFor();
    await page.waitForFunction(
      (id) => location.hash.includes(id) && document.querySelector('output[data-bytes]'),
      REPO,
      { timeout: 30000 },
    );
    const request = JSON.parse(await page.getByTestId('request-json').textContent());
    assert.equal(request.model.safetensors.tensors.length, 25);
    const shown = Number(await page.locator('output[data-bytes]').getAttribute('data-bytes'));
    const native = runProbe(request);
    t.diagnostic(`${REPO}: page ${shown} bytes, vram-probe ${native.peak_bytes}`);
    assert.equal(shown, native.peak_bytes);
    assert.equal(native.model.params_total, TINY_PARAMS);
    // The shards were read by header ranges, never whole.
    const shardReads = hubRequests.filter(
      (r) => r.url.endsWith('.safetensors') && r.method === 'GET',
    );
    assert.ok(shardReads.length > 0);
    for (const r of shardReads) assert.match(r.range ?? '', /^bytes=\d+-\d+$/);
    assert.deepEqual(blocked, []);
    await page.screenshot({ path: join(shots, 'vram-unknown-model-1400.png'), fullPage: false });
    await page.setViewportSize({ width: 390, height: 844 });
    await summary.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(shots, 'vram-unknown-model-390.png'), fullPage: false });
  });
});
