// End to end (issue 18, page size): which WebAssembly modules the built page
// (site/dist) requests, in Debian's Chromium. A first visit with the default
// preset (a job that fits, so no suggestions are searched) paints its first
// estimate from the core (vram_core) before it requests the full module
// (vram_plan), which then brings the time card (issue 31: the time model is
// the full module's); the planner's first search reuses it, and the layouts
// it finds are listed. A model of a family the core leaves out
// (core/lite/reach.cpp) loads vram_plan, the full module, and is estimated.
// So does a framework other than hf, or a release, chosen from the Framework
// and Release selects: the core carries hf at its newest release only, and
// the page's peak is vram-probe's for its request.
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

/**
 * When the page painted its first estimate and when it requested vram_plan.wasm
 * (undefined: not yet), both on the page's clock: the page fetches the module
 * and hands it to its workers compiled (wasm/vram.js).
 */
function planAgainstPaint(page) {
  return page.evaluate(() => ({
    painted: performance.getEntriesByName('vram:first-estimate')[0].startTime,
    planStart: performance
      .getEntriesByType('resource')
      .find((e) => /vram_plan-[^/]*\.wasm$/.test(e.name))?.startTime,
  }));
}

describe('the WebAssembly modules a visit loads', () => {
  it('a first visit paints from vram_core, then loads vram_plan for the time; the planner reuses it', async (t) => {
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

      // The time card: the full module's answer, after the first estimate.
      const time = page.getByRole('region', { name: 'How long and how much' });
      await time.getByTestId('step-seconds').waitFor({ timeout: 60000 });
      const first = [...urls];
      t.diagnostic(`first visit: ${requested(first, /\.(wasm|js)$/).join(', ')}`);
      assert.equal(requested(first, /^vram_core-[^/]*\.wasm$/).length, 1, 'vram_core.wasm once');
      assert.equal(
        requested(first, /^vram_plan-[^/]*\.wasm$/).length,
        1,
        'vram_plan.wasm once, for the time',
      );
      assert.deepEqual(requested(first, /^vram_io-/), [], 'the first visit loaded vram_io');
      const { painted, planStart } = await planAgainstPaint(page);
      assert.ok(
        planStart > painted,
        `vram_plan requested at ${planStart} ms, before the paint at ${painted} ms`,
      );

      // The planner's first search reuses the plan module the time loaded.
      const panel = page.getByRole('region', { name: 'Find a layout' });
      await panel.getByRole('button', { name: /^Find layouts for / }).click();
      const table = panel.getByRole('table', { name: 'Layouts, best first' });
      await table.waitFor({ timeout: 60000 });
      assert.ok((await table.locator('tr[data-rank]').count()) > 0, 'no layout listed');
      // The planner's time column (issue 31): every layout a step time in
      // seconds and a cost, best first by step time within a fit class.
      const rows = await table.locator('tr[data-rank]').evaluateAll((trs) =>
        trs.map((tr) => ({
          seconds: Number(tr.querySelector('[data-cell="step-time"]')?.dataset.seconds),
          text: tr.querySelector('[data-cell="step-time"]')?.textContent ?? '',
          cost: tr.querySelector('[data-cell="cost"]')?.textContent ?? '',
          fit: tr.querySelector('[data-tone]')?.dataset.tone ?? '',
        })),
      );
      t.diagnostic(`planner times: ${rows.map((r) => `${r.text} ${r.cost}`).join(' | ')}`);
      for (const r of rows) {
        assert.ok(r.seconds > 0, `a layout without a step time: ${JSON.stringify(r)}`);
        assert.match(r.text, /\d (ms|s|min|h)$/, 'the step time in a unit');
        assert.match(r.cost, /^\$\d/, 'the cost per million tokens');
      }
      for (let i = 1; i < rows.length; i++) {
        if (rows[i].fit === rows[i - 1].fit) {
          assert.ok(
            rows[i].seconds >= rows[i - 1].seconds * 0.999,
            `rank ${i + 1} is faster than rank ${i}`,
          );
        }
      }
      const later = urls.slice(first.length);
      t.diagnostic(`planner: ${requested(later, /\.(wasm|js)$/).join(', ')}`);
      assert.deepEqual(requested(later, /^vram_plan-[^/]*\.wasm$/), [], 'vram_plan.wasm again');
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
      // The time card asks vram_plan for the time right after that paint, so
      // only the order says the estimate did without it, not whether it has
      // been requested by the time this test looks (under load, it has).
      const { painted, planStart } = await planAgainstPaint(page);
      assert.ok(
        planStart === undefined || planStart > painted,
        `hf at its newest release needs no vram_plan: requested at ${planStart} ms, painted at ${painted} ms`,
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
