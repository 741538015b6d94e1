// End to end: a GGUF repository id typed into the BUILT page (site/dist) in
// Debian's Chromium. huggingface.co is a mock (tests/hub-mock.mjs ggufRepo:
// the tree API, then each file's header by range requests) answering through
// Playwright's route interception; every other address is blocked. The GGUF
// tab lists the quant files with GPU memory, host RAM, the largest -ngl and
// the longest context on the chosen card; "Use" takes one, and the page's
// peak must equal `vram-probe estimate --request <the page's request> --json`.
//
// Run: npm run build && node --test tests/e2e/gguf.test.mjs
// Needs: /usr/bin/chromium (or CHROMIUM), build/bin/vram-probe (or VRAM_PROBE).

import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { ggufRepo, hubAnswer } from '../hub-mock.mjs';
import { chromiumPath, distDir, probe, runProbe, serve } from './serve.mjs';

const shots = process.env.VRAM_SCREENSHOT_DIR || tmpdir();
const REPO = 'acme/Llama-8B-GGUF';

describe('a GGUF repository against a mocked Hub, in Chromium', () => {
  let server;
  let browser;
  let context;
  let base;
  const files = ggufRepo();
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
    context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
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
  });

  after(async () => {
    await browser?.close();
    await new Promise((ok) => (server ? server.close(ok) : ok()));
  });

  it("lists the quant files with their answers on the card, and Use gives vram-probe's peak", async (t) => {
    const page = await context.newPage();
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    await page.goto(`${base}#task=infer&eng=llama_cpp&gpu=RTX%204090%2024GB`);
    await page.getByRole('tab', { name: 'GGUF' }).click();
    await page.getByLabel(/GGUF repository/).fill(REPO);
    await page.getByRole('button', { name: 'List quant files' }).click();
    const table = page.getByRole('table', { name: 'GGUF files' });
    try {
      await page.waitForFunction(
        () =>
          document.querySelectorAll('table[aria-label="GGUF files"] td[data-count]').length >= 6,
        null,
        { timeout: 60000 },
      );
    } catch (e) {
      await page.screenshot({ path: join(shots, 'vram-gguf-failure.png'), fullPage: true });
      throw new Error(
        `${e.message}\nconsole: ${consoleErrors.join(' | ')}\nhub: ${JSON.stringify(hubRequests.slice(0, 5))}\nblocked: ${blocked.join(' ')}`,
      );
    }
    const rows = await table.locator('tbody tr').evaluateAll((trs) =>
      trs.map((tr) => ({
        file: tr.dataset.file,
        cells: [...tr.querySelectorAll('td')].map(
          (td) => td.dataset.bytes ?? td.dataset.count ?? '',
        ),
      })),
    );
    t.diagnostic(JSON.stringify(rows));
    assert.deepEqual(
      rows.map((r) => r.file),
      [
        'Llama-8B-Q4_K_M.gguf',
        'Llama-8B-Q8_0.gguf',
        'Llama-8B-F16.gguf',
        'mmproj-Llama-8B-f16.gguf',
      ],
    );
    for (const r of rows.slice(0, 3)) {
      for (const c of r.cells.slice(0, 4)) assert.ok(Number(c) > 0, `${r.file}: ${r.cells}`);
    }
    // Headers only: the tree, then range requests.
    const reads = hubRequests.filter((r) => r.url.endsWith('.gguf') && r.method === 'GET');
    assert.ok(reads.length >= 4);
    for (const r of reads) assert.match(r.range ?? '', /^bytes=\d+-\d+$/);
    assert.deepEqual(blocked, []);
    await page.screenshot({ path: join(shots, 'vram-gguf-list-1400.png'), fullPage: false });

    await table
      .locator('tr[data-file="Llama-8B-Q8_0.gguf"]')
      .getByRole('button', { name: 'Use' })
      .click();
    await page
      .getByRole('table', { name: 'llama.cpp buffers by device' })
      .waitFor({ timeout: 30000 });
    await page.waitForFunction(
      () =>
        JSON.parse(document.querySelector('[data-testid="request-json"]')?.textContent || '{}')
          .model?.gguf?.file === 'Llama-8B-Q8_0.gguf',
      null,
      { timeout: 30000 },
    );
    const request = JSON.parse(await page.getByTestId('request-json').textContent());
    assert.equal(request.infer.engine, 'llama_cpp');
    const shown = Number(
      await page.locator('output[data-bytes]').first().getAttribute('data-bytes'),
    );
    const native = runProbe(request);
    t.diagnostic(`page ${shown} bytes, vram-probe ${native.peak_bytes}`);
    assert.equal(shown, native.peak_bytes);
    await page.getByRole('table', { name: 'llama.cpp buffers by device' }).scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(shots, 'vram-gguf-buffers-1400.png'), fullPage: false });
    await page.setViewportSize({ width: 390, height: 844 });
    await table.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(shots, 'vram-gguf-list-390.png'), fullPage: false });
    assert.deepEqual(consoleErrors, []);
  });
});
