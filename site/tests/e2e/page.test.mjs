// End to end: the BUILT page (site/dist) in Debian's Chromium, driven by
// playwright-core, against the native estimator. It serves dist/ on
// 127.0.0.1, blocks every other address (the page must work offline), picks a
// preset, reads the peak bytes the page shows, and checks them against
// `vram-probe estimate --request <the page's request JSON> --json`; then runs
// the layout planner on 8 GPUs and checks its ranking against
// `vram-probe plan --request <the same request> --json`.
//
// Run: npm run build && npm run test:e2e   (node's built-in test runner)
// Needs: /usr/bin/chromium (or CHROMIUM), build/bin/vram-probe (or VRAM_PROBE).

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { chromiumPath, distDir, probe, runProbe, serve, siteDir } from './serve.mjs';

const screenshotPath = process.env.VRAM_SCREENSHOT || '/tmp/vram-page.png';
const PRESET = 'Qwen/Qwen3-0.6B';

// The GPU table's bars take the verdict's colour in the real stylesheet (the
// shared fill and its variants must not override each other in the bundle).
async function assertBarColours(page) {
  const table = page.getByRole('region', { name: 'Which GPUs fit' });
  for (const verdict of ['Fits', 'Does not fit']) {
    const label = table.getByText(verdict, { exact: true }).first();
    if ((await label.count()) === 0) continue;
    const colour = await label.evaluate((el) => getComputedStyle(el).color);
    const bar = await table
      .locator('tr', { has: page.getByText(verdict, { exact: true }) })
      .first()
      .locator('td span span')
      .evaluate((el) => getComputedStyle(el).backgroundColor);
    assert.equal(bar, colour, `the ${verdict} bar's colour`);
  }
}

describe('the built page in Chromium', () => {
  let server;
  let context;
  let page;
  let base;
  let userDataDir;
  const consoleErrors = [];
  const blocked = [];

  before(async () => {
    assert.ok(
      existsSync(join(distDir, 'index.html')),
      `no ${distDir}/index.html: run \`npm run build\` first`,
    );
    assert.ok(
      existsSync(probe),
      `no native estimator at ${probe}: build it with cmake (see README)`,
    );
    assert.ok(existsSync(chromiumPath), `no Chromium at ${chromiumPath}`);
    server = await serve(distDir);
    base = `http://127.0.0.1:${server.address().port}/`;
    userDataDir = mkdtempSync(join(tmpdir(), 'vram-e2e-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: chromiumPath,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
      viewport: { width: 1440, height: 1000 },
    });
    // Only the local server: proves the page needs no network for presets.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(base) || url.startsWith('data:') || url.startsWith('blob:'))
        return route.continue();
      blocked.push(url);
      return route.abort();
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
  });

  after(async () => {
    await context?.close();
    await new Promise((ok) => (server ? server.close(ok) : ok()));
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  it('shows the same peak bytes as vram-probe for a preset, and restores it from its link', async (t) => {
    await page.goto(base);
    await page.getByLabel('Bundled preset').selectOption(PRESET);
    const requestJson = page.getByTestId('request-json');
    await page.waitForFunction(
      (id) => {
        const pre = document.querySelector('[data-testid=request-json]');
        const peak = document.querySelector('output[data-bytes]');
        return pre && peak && location.hash.includes(`preset:${id}`);
      },
      PRESET,
      { timeout: 30000 },
    );
    const request = JSON.parse(await requestJson.textContent());
    const shown = Number(await page.locator('output[data-bytes]').getAttribute('data-bytes'));
    const native = runProbe(request);
    t.diagnostic(`${PRESET}: page data-bytes ${shown}, vram-probe peak_bytes ${native.peak_bytes}`);
    assert.equal(shown, native.peak_bytes, 'the page and vram-probe disagree on peak_bytes');
    assert.ok(Number.isSafeInteger(shown) && shown > 0);

    const peakText = await page.getByRole('status', { name: 'Peak memory per GPU' }).textContent();
    assert.ok(
      peakText.includes((native.peak_bytes / 1024 ** 3).toFixed(2)),
      `peak text ${peakText}`,
    );
    const summary = page.getByRole('region', { name: 'Model summary' });
    await summary.getByText(native.model.params_total.toLocaleString('en-US')).waitFor();

    await page.screenshot({ path: screenshotPath, fullPage: true });

    // The link restores the same estimate in a fresh page.
    const link = page.url();
    const again = await context.newPage();
    await again.goto(link);
    await again.waitForSelector('output[data-bytes]', { timeout: 30000 });
    assert.equal(
      Number(await again.locator('output[data-bytes]').getAttribute('data-bytes')),
      native.peak_bytes,
    );
    await again.close();

    assert.deepEqual(blocked, [], 'the page tried to reach the network');
    assert.deepEqual(consoleErrors, [], 'the page logged errors');
  });

  it('serves a preset with vLLM and SGLang: the KV cache size and the start-up lines vram-probe gives', async (t) => {
    for (const [engine, term] of [
      ['vllm', 'GPU KV cache size'],
      ['sglang', 'max_total_num_tokens'],
    ]) {
      await page.setViewportSize({ width: 1400, height: 900 });
      await page.goto(`${base}#m=preset:${PRESET}&task=infer&eng=${engine}&ctx=16000`);
      const panel = page.getByRole('region', { name: 'Serving answers' });
      const tokens = panel.locator('dt', { hasText: term }).locator('xpath=..').locator('dd');
      await tokens.waitFor({ timeout: 30000 });
      const request = JSON.parse(await page.getByTestId('request-json').textContent());
      assert.equal(request.infer.engine, engine);
      const native = runProbe(request);
      const shown = Number(await tokens.getAttribute('data-count'));
      t.diagnostic(`${engine}: page ${shown} tokens, vram-probe ${native.infer.kv_tokens}`);
      assert.equal(shown, native.infer.kv_tokens);
      const lines = await panel.getByRole('list', { name: 'Engine start-up lines' }).textContent();
      const kvLine = native.infer.engine_log.find(
        (l) =>
          l.key === (engine === 'vllm' ? 'vllm.available_kv_cache' : 'sglang.max_total_num_tokens'),
      );
      assert.ok(lines.includes(kvLine.text), `${engine} lines: ${lines}`);
      await panel.screenshot({ path: screenshotPath.replace(/\.png$/, `-${engine}-1400.png`) });
      await page.setViewportSize({ width: 390, height: 844 });
      await panel.screenshot({ path: screenshotPath.replace(/\.png$/, `-${engine}-390.png`) });
    }
    await page.setViewportSize({ width: 1440, height: 1000 });
    assert.deepEqual(blocked, [], 'the page tried to reach the network');
    assert.deepEqual(consoleErrors, [], 'the page logged errors');
  });

  it("ranks the layouts of 8 GPUs as vram-probe plan does, and Apply shows the first one's peak", async (t) => {
    const id = 'meta-llama/Llama-3.1-8B';
    await page.goto(`${base}#m=preset:${id}&task=train&method=full&gpus=8&gpu=A100%2040GB`);
    await page.waitForSelector('output[data-bytes]', { timeout: 30000 });
    // DDP of an 8B model: 4 of the catalog's cards fit, the rest are too small.
    await assertBarColours(page);
    // The form's layout is plain data parallel, which is what the planner's
    // request resets the layout to: the page's request is the planner's.
    const request = JSON.parse(await page.getByTestId('request-json').textContent());
    assert.deepEqual(request.parallel, { gpus: 8, dp: 8, tp: 1, pp: 1, zero: 0 });
    const native = runProbe({ ...request, plan: { framework: 'deepspeed' } }, 'plan').plan;

    const panel = page.getByRole('region', { name: 'Find a layout' });
    await panel.getByRole('button', { name: 'Find layouts for 8 × A100 40GB' }).click();
    const table = panel.getByRole('table', { name: 'Layouts, best first' });
    await table.waitFor({ timeout: 30000 });
    const rows = table.locator('tr[data-rank]');
    assert.equal(await rows.count(), native.candidates.length);
    const first = native.candidates[0];
    const label = await rows.first().getByRole('rowheader').textContent();
    t.diagnostic(`${id} on 8 x A100 40GB: page ${label}, vram-probe plan ${first.label}`);
    assert.equal(label, first.label);
    assert.equal(
      Number(await rows.first().locator('[data-bytes]').getAttribute('data-bytes')),
      first.peak_bytes,
    );

    await rows
      .first()
      .getByRole('button', { name: `Apply: ${first.label}` })
      .click();
    await page.waitForFunction(
      (bytes) => document.querySelector('output[data-bytes]')?.getAttribute('data-bytes') === bytes,
      String(first.peak_bytes),
      { timeout: 30000 },
    );
    assert.deepEqual(blocked, [], 'the page tried to reach the network');
    assert.deepEqual(consoleErrors, [], 'the page logged errors');
  });

  it('takes a measured CUDA context from a probe report file and estimates with it as vram-probe does', async () => {
    const report = join(siteDir, 'tests', 'unit', 'fixtures', 'probe', 'overheads-h100.json');
    const measured = JSON.parse(readFileSync(report, 'utf8')).overheads.cuda_context_bytes;
    await page.goto(`${base}#m=preset:${PRESET}&task=train&gpu=H100%2080GB`);
    await page.waitForSelector('output[data-bytes]', { timeout: 30000 });
    const card = page.getByRole('region', { name: 'Compare with a measurement' });
    await card.getByLabel('Probe report file').setInputFiles(report);
    await card.getByRole('button', { name: 'Use as overheads.cuda_context_bytes' }).click();
    const request = JSON.parse(await page.getByTestId('request-json').textContent());
    assert.equal(request.overheads.cuda_context_bytes, measured);
    const native = runProbe(request);
    await page.waitForFunction(
      (bytes) => document.querySelector('output[data-bytes]')?.getAttribute('data-bytes') === bytes,
      String(native.peak_bytes),
      { timeout: 30000 },
    );
    assert.deepEqual(blocked, [], 'the page tried to reach the network');
    assert.deepEqual(consoleErrors, [], 'the page logged errors');
  });

  it('imports an Axolotl recipe dropped on the page and shows the peak vram-probe estimate --from gives', async (t) => {
    const recipe = resolve(siteDir, '..', 'tests', 'fixtures', 'import', 'axolotl_qlora-1b.yml');
    await page.goto(`${base}#gpu=H100%2080GB`);
    await page.waitForSelector('output[data-bytes]', { timeout: 30000 });
    // Drop the file on the import card's drop zone, as a user does.
    const text = readFileSync(recipe, 'utf8');
    const zone = page.getByRole('group', { name: 'Drop configuration files here' });
    const transfer = await page.evaluateHandle((body) => {
      const dt = new DataTransfer();
      dt.items.add(new File([body], 'axolotl_qlora-1b.yml', { type: 'application/yaml' }));
      return dt;
    }, text);
    await zone.dispatchEvent('drop', { dataTransfer: transfer });
    const report = page.getByRole('region', { name: 'Import report' });
    await report.getByText('axolotl_qlora-1b.yml').first().waitFor({ timeout: 30000 });
    const run = spawnSync(probe, ['estimate', '--from', recipe, '--gpu', 'H100 80GB', '--json'], {
      encoding: 'utf8',
      timeout: 30000,
    });
    assert.equal(run.status, 0, run.stderr || run.stdout);
    const native = JSON.parse(run.stdout);
    await page.waitForFunction(
      (bytes) => document.querySelector('output[data-bytes]')?.getAttribute('data-bytes') === bytes,
      String(native.peak_bytes),
      { timeout: 30000 },
    );
    t.diagnostic(
      `axolotl qlora-1b: page and vram-probe estimate --from both ${native.peak_bytes} bytes`,
    );
    const request = JSON.parse(await page.getByTestId('request-json').textContent());
    assert.equal(request.train.framework, 'axolotl');
    assert.equal(request.train.method, 'qlora');
    assert.deepEqual(blocked, [], 'the page tried to reach the network');
    assert.deepEqual(consoleErrors, [], 'the page logged errors');
  });

  // Issue 33: a 650-byte billion-laughs YAML and a JSON with a key given twice, dropped on the import
  // card, are refused with the file and the line named, as `vram-probe import` refuses them; the page
  // stays usable (the estimate is still there).
  it('refuses an alias bomb and a duplicate key dropped on the import card, naming the file and the line', async (t) => {
    await page.goto(`${base}#gpu=H100%2080GB`);
    await page.waitForSelector('output[data-bytes]', { timeout: 30000 });
    const zone = page.getByRole('group', { name: 'Drop configuration files here' });
    const hostile = resolve(siteDir, '..', 'tests', 'fixtures', 'hostile');
    for (const [name, says] of [
      ['billion_laughs.yaml', 'billion_laughs.yaml line 7: alias *c is expanded too often'],
      ['duplicate_key.json', 'duplicate_key.json line 3: key "stage" is given twice'],
    ]) {
      const transfer = await page.evaluateHandle(
        ([body, file]) => {
          const dt = new DataTransfer();
          dt.items.add(new File([body], file));
          return dt;
        },
        [readFileSync(join(hostile, name), 'utf8'), name],
      );
      const start = Date.now();
      await zone.dispatchEvent('drop', { dataTransfer: transfer });
      await page.getByRole('alert').filter({ hasText: says }).waitFor({ timeout: 30000 });
      t.diagnostic(`${name}: refused on the page in ${Date.now() - start} ms`);
      const native = spawnSync(probe, ['import', join(hostile, name), '--json'], {
        encoding: 'utf8',
      });
      assert.equal(native.status, 1);
      assert.match(
        JSON.parse(native.stdout).error.message,
        new RegExp(says.replace(/[.*"]/g, '\\$&')),
      );
    }
    assert.ok(await page.locator('output[data-bytes]').count());
    assert.deepEqual(blocked, [], 'the page tried to reach the network');
    assert.deepEqual(consoleErrors, [], 'the page logged errors');
  });
});
