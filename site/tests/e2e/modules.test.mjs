// End to end (issue 18, page size): which WebAssembly modules the built page
// (site/dist) requests, in Debian's Chromium. A first visit with the default
// preset (a job that fits, so no suggestions are searched) requests the core
// (vram_core) and not the planner's module (vram_plan); the planner's first
// search loads vram_plan, and the layouts it finds are listed. A model of a
// family the core leaves out (core/lite/reach.cpp) loads vram_plan, the full
// module, and is estimated. So does a framework other than hf, or a release,
// chosen from the Framework and Release selects: the core carries hf at its
// newest release only, and the page's peak is vram-probe's for its request.
//
// Run: npm run build && node --test tests/e2e/modules.test.mjs
// Needs: /usr/bin/chromium (or CHROMIUM).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runProbe, servedPage } from './serve.mjs';

const served = servedPage();

/** The file names (no query) the context requested, from the page and its workers. */
function requested(urls, pattern) {
  return urls.map((u) => new URL(u).pathname.split('/').pop()).filter((name) => pattern.test(name));
}

/**
 * A fresh context and page, recording every URL requested (the page's and
 * its Web Workers') and every error the page logs. No service worker: its
 * precache would fetch every built file after the load.
 */
async function visit() {
  const context = await served.browser.newContext({
    viewport: { width: 1400, height: 900 },
    serviceWorkers: 'block',
  });
  const urls = [];
  context.on('request', (r) => urls.push(r.url()));
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  return { context, page, urls, errors };
}

describe('the WebAssembly modules a visit loads', () => {
  it('a first visit loads vram_core, not vram_plan; the planner loads vram_plan', async (t) => {
    const { context, page, urls, errors } = await visit();
    try {
      await page.goto(served.base);
      await page.waitForFunction(
        () => performance.getEntriesByName('vram:first-estimate').length > 0,
        { timeout: 60000 },
      );
      // The default preset's job fits its card: nothing to suggest.
      await page.waitForSelector('p[data-status]', { timeout: 60000 });
      const status = await page.locator('p[data-status]').first().getAttribute('data-status');
      assert.equal(status, 'fits', 'the default preset should fit (no suggestions searched)');
      // Everything the first visit does, settled (the estimate's worker included).
      await page.waitForLoadState('networkidle');
      await page.waitForTimeout(1000);
      assert.equal(
        await page.getByRole('region', { name: /What would make it fit/ }).count(),
        0,
        'a job that fits shows no suggestions',
      );

      const first = [...urls];
      t.diagnostic(`first visit: ${requested(first, /\.(wasm|js)$/).join(', ')}`);
      assert.equal(requested(first, /^vram_core-[^/]*\.wasm$/).length, 1, 'vram_core.wasm once');
      assert.deepEqual(requested(first, /^vram_plan-/), [], 'the first visit loaded vram_plan');
      assert.deepEqual(requested(first, /^vram_io-/), [], 'the first visit loaded vram_io');

      // The planner's first search loads the plan module (its .wasm and glue), once.
      const panel = page.getByRole('region', { name: 'Find a layout' });
      await panel.getByRole('button', { name: /^Find layouts for / }).click();
      const table = panel.getByRole('table', { name: 'Layouts, best first' });
      await table.waitFor({ timeout: 60000 });
      assert.ok((await table.locator('tr[data-rank]').count()) > 0, 'no layout listed');
      const later = urls.slice(first.length);
      t.diagnostic(`planner: ${requested(later, /\.(wasm|js)$/).join(', ')}`);
      assert.equal(requested(later, /^vram_plan-[^/]*\.wasm$/).length, 1, 'vram_plan.wasm once');
      assert.equal(requested(later, /^vram_plan-[^/]*\.js$/).length, 1, "vram_plan's glue");
      assert.deepEqual(requested(later, /^vram_core-[^/]*\.wasm$/), [], 'vram_core again');
      assert.deepEqual(errors, [], 'the page logged errors');
    } finally {
      await context.close();
    }
  });

  it('a model only the full module estimates (Gemma 2) loads vram_plan and is estimated', async (t) => {
    const { context, page, urls, errors } = await visit();
    try {
      await page.goto(`${served.base}#m=preset:google/gemma-2-2b&task=train&method=lora`);
      await page.waitForFunction(
        () => performance.getEntriesByName('vram:first-estimate').length > 0,
        { timeout: 60000 },
      );
      const summary = page.getByRole('region', { name: 'Model summary' });
      await summary.getByText('gemma2', { exact: true }).waitFor({ timeout: 60000 });
      t.diagnostic(`gemma visit: ${requested(urls, /\.wasm$/).join(', ')}`);
      assert.equal(requested(urls, /^vram_core-[^/]*\.wasm$/).length >= 1, true, 'vram_core.wasm');
      // Downloaded and compiled once by the page, for its own thread and the estimates' worker.
      assert.equal(requested(urls, /^vram_plan-[^/]*\.wasm$/).length, 1, 'vram_plan.wasm once');
      assert.deepEqual(errors, [], 'the page logged errors');
    } finally {
      await context.close();
    }
  });

  it('an inference link (the default model) loads vram_plan once and shows the serving answers', async () => {
    const { context, page, urls, errors } = await visit();
    try {
      await page.goto(`${served.base}#m=preset:meta-llama/Llama-3.2-1B&task=infer`);
      await page.getByRole('region', { name: 'Serving answers' }).waitFor({ timeout: 60000 });
      assert.equal(requested(urls, /^vram_plan-[^/]*\.wasm$/).length, 1, 'vram_plan.wasm once');
      assert.deepEqual(errors, [], 'the page logged errors');
    } finally {
      await context.close();
    }
  });

  it("every framework, and a release, from the selects: vram_plan loads once, the peak is vram-probe's", async (t) => {
    const { context, page, urls, errors } = await visit();
    try {
      await page.goto(`${served.base}#m=preset:meta-llama/Llama-3.2-1B&task=train&method=lora`);
      await page.waitForFunction(
        () => performance.getEntriesByName('vram:first-estimate').length > 0,
        { timeout: 60000 },
      );
      assert.deepEqual(
        requested(urls, /^vram_plan-/),
        [],
        'hf at its newest release needs no vram_plan',
      );
      const framework = page.getByLabel(/train\.framework/);
      const release = page.getByLabel(/framework@release/);
      const names = await framework.locator('option').evaluateAll((os) => os.map((o) => o.value));
      assert.ok(names.length >= 9, `frameworks: ${names}`);
      // The page's request once it names `fw` (its recipe filled in), and its peak against vram-probe's.
      const settled = async (fw) => {
        await page.waitForFunction(
          (want) => {
            const text = document.querySelector('[data-testid="request-json"]')?.textContent;
            if (!text) return false;
            const got = JSON.parse(text).train?.framework ?? 'hf';
            return got === want;
          },
          fw,
          { timeout: 60000 },
        );
        const request = JSON.parse(await page.getByTestId('request-json').textContent());
        const native = runProbe(request);
        await page.waitForFunction(
          (bytes) =>
            document.querySelector('output[data-bytes]')?.getAttribute('data-bytes') === bytes,
          String(native.peak_bytes),
          { timeout: 60000 },
        );
        return native;
      };
      for (const name of [...names.filter((n) => n !== 'hf'), 'hf']) {
        await framework.selectOption(name);
        const native = await settled(name);
        t.diagnostic(`${name}: ${native.peak_bytes} B, ${native.framework?.release}`);
        // The oldest release of each framework too.
        const oldest = await release.locator('option').evaluateAll((os) => os[os.length - 1].value);
        await release.selectOption(oldest);
        const old = await settled(`${name}@${oldest}`);
        assert.equal(old.framework.release, oldest, name);
        t.diagnostic(`${name}@${oldest}: ${old.peak_bytes} B`);
      }
      assert.equal(requested(urls, /^vram_plan-[^/]*\.wasm$/).length, 1, 'vram_plan.wasm once');
      assert.deepEqual(errors, [], 'the page logged errors');
    } finally {
      await context.close();
    }
  });
});
