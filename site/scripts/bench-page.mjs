// The built page (dist/) in a real Chromium: how big it is and how fast the
// first estimate appears, with and without Chromium's 4x CPU throttling, how
// long the main thread is blocked while typing, and what a 64-GPU plan costs
// the main thread (issue 18). Prints a Markdown table; --readme writes it
// into ../README.md between the bench-page markers, so the README's figures
// are this script's.
//
//   npm run build && node scripts/bench-page.mjs [--runs 5] [--readme] [--dist DIR]
//
// --dist measures another build (an older dist/ kept for a before/after).
//
// Needs /usr/bin/chromium (or CHROMIUM). The page is served from 127.0.0.1
// gzip-compressed (level 9, what static hosts such as GitHub Pages serve),
// every run in a fresh browser context (an empty HTTP cache: a cold load).
// Timings come from the page's own performance marks (vram:estimator-ready,
// vram:first-estimate, set after the first estimate has painted) and the
// Long Tasks API (every main-thread task over 50 ms).

import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { dirname, extname, join, normalize, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const siteDir = resolve(here, '..');
const readmePath = resolve(siteDir, '..', 'README.md');
const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    readme: { type: 'boolean', default: false },
    dist: { type: 'string', default: join(siteDir, 'dist') },
  },
});
const distDir = resolve(flags.dist);
const RUNS = Math.max(1, Number(flags.runs) || 5);
const THROTTLED_RUNS = Math.max(1, Math.ceil(RUNS / 2));

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

const gzipCache = new Map();
function gzipOf(file) {
  if (!gzipCache.has(file)) gzipCache.set(file, gzipSync(readFileSync(file), { level: 9 }));
  return gzipCache.get(file);
}

/** dist/ on 127.0.0.1, gzip-encoded when the browser accepts it. */
function serve(root) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    let file = normalize(join(root, path));
    if (!file.startsWith(root + sep) && file !== root) return res.writeHead(403).end();
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!existsSync(file)) return res.writeHead(404).end('not found');
    const headers = { 'content-type': TYPES[extname(file)] || 'application/octet-stream' };
    if (/\bgzip\b/.test(req.headers['accept-encoding'] || '')) {
      headers['content-encoding'] = 'gzip';
      res.writeHead(200, headers).end(gzipOf(file));
    } else {
      res.writeHead(200, headers).end(readFileSync(file));
    }
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const ms = (n) => `${Math.round(n)} ms`;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// Every main-thread task over 50 ms, from the start of the document.
const LONG_TASKS = `
  window.__longTasks = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      window.__longTasks.push({ start: e.startTime, duration: e.duration });
  }).observe({ type: 'longtask', buffered: true });
`;

const DEFAULT_LINK = '';
// Issue 18's slow case: DeepSeek-V3 on 64 H100s, full training, every layout.
const PLAN_LINK =
  '#m=preset:deepseek-ai/DeepSeek-V3&task=train&method=full&gpus=64&gpu=H100%2080GB';

async function newPage(browser, base, throttle) {
  // A new context has an empty cache and no service worker: a first visit.
  const context = await browser.newContext({
    viewport: { width: 1400, height: 900 },
    serviceWorkers: 'block',
  });
  await context.addInitScript(LONG_TASKS);
  const page = await context.newPage();
  if (throttle > 1) {
    const cdp = await context.newCDPSession(page);
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: throttle });
  }
  return { context, page };
}

async function marks(page) {
  return page.evaluate(() =>
    Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, m.startTime])),
  );
}

/** One cold load: ms to the estimator and to the first painted estimate. */
async function coldLoad(browser, base, throttle) {
  const { context, page } = await newPage(browser, base, throttle);
  await page.goto(`${base}${DEFAULT_LINK}`);
  await page.waitForFunction(
    () => performance.getEntriesByName('vram:first-estimate').length > 0,
    null,
    { timeout: 120000 },
  );
  const m = await marks(page);
  // What the first estimate needed: the files requested before it painted
  // (the time card's full module is asked for after the paint, issue 31).
  const resources = await page.evaluate(
    (painted) => [
      location.href,
      ...performance
        .getEntriesByType('resource')
        .filter((r) => r.startTime <= painted)
        .map((r) => r.name),
    ],
    m['vram:first-estimate'],
  );
  const longTasks = await page.evaluate(() => window.__longTasks);
  await context.close();
  return {
    ready: m['vram:estimator-ready'],
    estimate: m['vram:first-estimate'],
    resources,
    longTasks,
  };
}

/** Types into max_seq_length, a key every 150 ms: the longest main-thread task. */
async function typing(browser, base, throttle) {
  const { context, page } = await newPage(browser, base, throttle);
  await page.goto(`${base}#m=preset:meta-llama/Llama-2-70b-hf&task=train&method=full&gpus=8`);
  await page.waitForFunction(
    () => performance.getEntriesByName('vram:first-estimate').length > 0,
    null,
    { timeout: 120000 },
  );
  await page.waitForTimeout(500);
  // The box is found once and the keys go to the focused box: Playwright's
  // locator actions resolve their selector in the page on every call (a
  // label search over the whole form), main-thread work of the test, not of
  // the page, which a CPU profile showed in the throttled long tasks.
  const box = page.getByLabel(/max_seq_length/).first();
  await box.click();
  await box.fill('');
  await page.waitForTimeout(300);
  const from = await page.evaluate(() => performance.now());
  for (const ch of '8192') {
    await page.keyboard.press(ch);
    await page.waitForTimeout(150);
  }
  await page.keyboard.press('Tab');
  await page.waitForTimeout(500);
  const tasks = await page.evaluate((t0) => window.__longTasks.filter((t) => t.start >= t0), from);
  await context.close();
  return { keys: 4, longest: Math.max(0, ...tasks.map((t) => t.duration)), count: tasks.length };
}

/** DeepSeek-V3 on 64 GPUs: ms to the table and main-thread long tasks meanwhile. */
async function plan64(browser, base, throttle) {
  const { context, page } = await newPage(browser, base, throttle);
  await page.goto(`${base}${PLAN_LINK}`);
  await page.waitForFunction(
    () => performance.getEntriesByName('vram:first-estimate').length > 0,
    null,
    { timeout: 120000 },
  );
  await page.waitForTimeout(300);
  const from = await page.evaluate(() => performance.now());
  await page.getByRole('button', { name: /^Find layouts for 64/ }).click();
  await page
    .getByRole('table', { name: 'Layouts, best first' })
    .or(page.getByText(/None of the \d+ layouts fits/))
    .first()
    .waitFor({ timeout: 120000 });
  const to = await page.evaluate(() => performance.now());
  const tasks = await page.evaluate((t0) => window.__longTasks.filter((t) => t.start >= t0), from);
  const considered = await page
    .locator('[data-considered]')
    .first()
    .getAttribute('data-considered')
    .catch(() => null);
  await context.close();
  return {
    ms: to - from,
    longest: Math.max(0, ...tasks.map((t) => t.duration)),
    count: tasks.length,
    considered,
  };
}

function sizes(resources, base) {
  const files = walk(distDir).map((path) => {
    const data = readFileSync(path);
    return {
      file: relative(distDir, path),
      raw: data.length,
      gzip: gzipOf(path).length,
    };
  });
  const sum = (list, key) => list.reduce((n, f) => n + f[key], 0);
  const loaded = new Set(
    resources
      .filter((u) => u.startsWith(base))
      .map((u) => decodeURIComponent(new URL(u).pathname).slice(1) || 'index.html'),
  );
  const first = files.filter((f) => loaded.has(f.file));
  // The module a first visit loads (vram_core) and the ones loaded on demand
  // (vram_plan: the planner and the suggestions; vram_io: import and export
  // of framework files), each on its own.
  const wasm = first.filter((f) => f.file.endsWith('.wasm'));
  const lazyWasm = files.filter((f) => f.file.endsWith('.wasm') && !loaded.has(f.file));
  return {
    wasm: { raw: sum(wasm, 'raw'), gzip: sum(wasm, 'gzip') },
    lazyWasm,
    first: { raw: sum(first, 'raw'), gzip: sum(first, 'gzip'), count: first.length },
    all: { raw: sum(files, 'raw'), gzip: sum(files, 'gzip'), count: files.length },
  };
}

// What each module a first visit does not load is for, by its built name.
const LAZY_MODULES = [
  [
    /(^|\/)vram_plan-[^/]*\.wasm$/,
    'module loaded on the first planner or suggestions search, or for a model the core leaves out (`vram_plan`)',
  ],
  [/(^|\/)vram_io-[^/]*\.wasm$/, 'module loaded on the first import or export (`vram_io`)'],
];
const lazyLabel = (file) =>
  LAZY_MODULES.find(([re]) => re.test(file))?.[1] ?? `module loaded on demand (\`${file}\`)`;

const server = await serve(distDir);
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
const version = browser.version();

try {
  const plain = [];
  for (let i = 0; i < RUNS; i++) plain.push(await coldLoad(browser, base, 1));
  const throttled = [];
  for (let i = 0; i < THROTTLED_RUNS; i++) throttled.push(await coldLoad(browser, base, 4));
  const size = sizes(plain[0].resources, base);
  // Typing is timed in wall-clock long tasks, which other processes on a
  // shared machine stretch: the median of several sessions.
  const typingMedian = async (throttle) => {
    const runs = [];
    for (let i = 0; i < THROTTLED_RUNS; i++) runs.push(await typing(browser, base, throttle));
    return {
      longest: median(runs.map((r) => r.longest)),
      count: median(runs.map((r) => r.count)),
    };
  };
  const type1 = await typingMedian(1);
  const type4 = await typingMedian(4);
  const plan1 = await plan64(browser, base, 1);
  const plan4 = await plan64(browser, base, 4);

  const row = (what, value, target, ok) =>
    `| ${what} | ${value} | ${target} | ${ok ? 'yes' : '**no**'} |`;
  const est1 = median(plain.map((r) => r.estimate));
  const est4 = median(throttled.map((r) => r.estimate));
  const lines = [
    `Chromium ${version}, \`site/scripts/bench-page.mjs\` on this machine (${cpus().length} cores, ` +
      `${new Date().toISOString().slice(0, 10)}, load average ${loadavg()[0].toFixed(1)} at the end: ` +
      `other builds running make every figure slower); the built page served gzip-compressed from 127.0.0.1, ` +
      `every load in a fresh browser context (cold cache); medians of ${RUNS} loads (${THROTTLED_RUNS} throttled).`,
    '',
    '| what | measured | target | met |',
    '| --- | ---: | ---: | :---: |',
    row(
      'first estimate painted after a cold load',
      `${ms(est1)} (core ready at ${ms(median(plain.map((r) => r.ready)))})`,
      '< 1 s',
      est1 < 1000,
    ),
    row(
      'same, 4× CPU throttling',
      `${ms(est4)} (core ready at ${ms(median(throttled.map((r) => r.ready)))})`,
      '< 2.5 s',
      est4 < 2500,
    ),
    row(
      'WebAssembly module a first visit loads (`.wasm`), gzip',
      `${kib(size.wasm.gzip)} (${kib(size.wasm.raw)} raw)`,
      '≤ 150 KiB',
      size.wasm.gzip <= 150 * 1024,
    ),
    ...size.lazyWasm.map((f) =>
      row(`${lazyLabel(f.file)}, gzip`, `${kib(f.gzip)} (${kib(f.raw)} raw)`, '—', true),
    ),
    row(
      `page, what a first visit loads (${size.first.count} files), gzip`,
      `${kib(size.first.gzip)} (${kib(size.first.raw)} raw)`,
      '≤ 220 KiB',
      size.first.gzip <= 220 * 1024,
    ),
    row(
      `everything built (${size.all.count} files: + service worker, manifest, icons), gzip`,
      `${kib(size.all.gzip)} (${kib(size.all.raw)} raw)`,
      '—',
      true,
    ),
    row(
      `longest main-thread task while typing into max_seq_length (Llama-2-70B, 8 GPUs; median of ${THROTTLED_RUNS} sessions)`,
      `${ms(type1.longest)} (${type1.count} over 50 ms)`,
      '≤ 50 ms',
      type1.longest <= 50,
    ),
    row('same, 4× CPU throttling', `${ms(type4.longest)} (${type4.count} over 50 ms)`, '—', true),
    row(
      `planner, DeepSeek-V3 on 64 H100s (${plan1.considered ?? '?'} layouts, in a Web Worker): click to table`,
      `${ms(plan1.ms)}; main thread: ${plan1.count} tasks over 50 ms`,
      'no task over 50 ms',
      plan1.count === 0,
    ),
    row(
      'same, 4× CPU throttling',
      `${ms(plan4.ms)}; main thread: ${plan4.count} tasks over 50 ms (longest ${ms(plan4.longest)})`,
      '—',
      true,
    ),
  ];
  const table = lines.join('\n');
  console.log(table);
  if (flags.readme) {
    const text = readFileSync(readmePath, 'utf8');
    const begin = '<!-- bench-page:begin -->';
    const end = '<!-- bench-page:end -->';
    const a = text.indexOf(begin);
    const b = text.indexOf(end);
    if (a < 0 || b < a) throw new Error(`README.md has no ${begin} … ${end} block`);
    writeFileSync(readmePath, `${text.slice(0, a + begin.length)}\n${table}\n${text.slice(b)}`);
    console.log(`\nwrote ${relative(process.cwd(), readmePath)}`);
  }
} finally {
  await browser.close();
  server.close();
}
