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

import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { hubAnswer, TINY_PARAMS, tinyRepo } from '../hub-mock.mjs';
import { chromiumPath, distDir, probe, runProbe, serve } from './serve.mjs';

const shots = process.env.VRAM_SCREENSHOT_DIR || tmpdir();
const REPO = 'acme/tiny-newarch';

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
