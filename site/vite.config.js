import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';
import { VitePWA } from 'vite-plugin-pwa';
import { fileURLToPath } from 'node:url';

// The page's Content-Security-Policy (issue 17): scripts only from the page's
// own origin (no inline script, no eval: the Embind glue is built with
// -sDYNAMIC_EXECUTION=0, wasm/CMakeLists.txt), 'wasm-unsafe-eval' to compile
// the WebAssembly core (CSP Level 3; Chrome 97, Firefox 102, Safari 16), and
// network access only to the page's origin (its .wasm, the service worker's
// precache) and the Hugging Face Hub, whose config.json downloads may
// redirect to its CDN hosts (*.huggingface.co, *.hf.co). Styles only from
// files: Preact sets style props through the CSSOM, which style-src does not
// govern. frame-ancestors cannot be set by a <meta> tag (CSP3 §6.1): a host
// that wants it sends the header (site/README.md).
export const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self' https://huggingface.co https://*.huggingface.co https://*.hf.co",
  "worker-src 'self'",
  "manifest-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'none'",
].join('; ');

// The policy goes into the built index.html only: Vite's dev server injects
// its own inline client script, which the policy would block.
function contentSecurityPolicy() {
  return {
    name: 'vram-csp',
    apply: 'build',
    transformIndexHtml: {
      order: 'post',
      handler: () => [
        {
          tag: 'meta',
          attrs: { 'http-equiv': 'Content-Security-Policy', content: CSP },
          injectTo: 'head-prepend',
        },
      ],
    },
  };
}

// The core's .wasm and its JavaScript glue are requested by the page's
// script only once that script has been downloaded and run (a few hundred
// milliseconds on a slow CPU). Preload hints in the HTML start both
// downloads at once, in parallel with the script; the facade's
// WebAssembly.compileStreaming(fetch(url)) then takes the preloaded response
// (a preload `as="fetch"` with `crossorigin` matches a same-origin fetch():
// HTML Standard, "link type preload"; web.dev "Preload critical assets").
function preloadCore() {
  return {
    name: 'vram-preload-core',
    apply: 'build',
    transformIndexHtml: {
      order: 'post',
      handler: (_html, ctx) => {
        const names = Object.keys(ctx.bundle ?? {});
        const wasm = names.find((n) => /(^|\/)vram_core-[^/]*\.wasm$/.test(n));
        const glue = names.find((n) => /(^|\/)vram_core-[^/]*\.js$/.test(n));
        const tags = [];
        if (wasm)
          tags.push({
            tag: 'link',
            attrs: {
              rel: 'preload',
              href: `./${wasm}`,
              as: 'fetch',
              type: 'application/wasm',
              crossorigin: '',
            },
            injectTo: 'head',
          });
        if (glue)
          tags.push({
            tag: 'link',
            attrs: { rel: 'modulepreload', href: `./${glue}` },
            injectTo: 'head',
          });
        return tags;
      },
    },
  };
}

// fields.json (src/lib/fields.js) is `vram-probe fields --json`, committed
// whole so that `make fields-check` and tests/wasm/fields.test.js compare it
// with the core byte for byte. Its `doc` strings, the CLI's help text, are a
// quarter of it, and the CLI's flags (`cli`, `cli_unit`) and the `internal`
// marks another 0.6 KiB gzip: the page reads none of them, and the built
// page's copy leaves them out (a transform before Vite's JSON plugin,
// `enforce: 'pre'`, https://vite.dev/guide/api-plugin#plugin-ordering).
// Build only: the tests read the file as it is.
function pageFields() {
  return {
    name: 'vram-page-fields',
    apply: 'build',
    enforce: 'pre',
    transform(code, id) {
      if (!/[\\/]src[\\/]lib[\\/]fields\.json$/.test(id)) return null;
      const table = JSON.parse(code);
      table.fields = table.fields.map(
        ({ doc: _doc, cli: _cli, cli_unit: _unit, internal: _internal, ...field }) => field,
      );
      return { code: JSON.stringify(table), map: null };
    },
  };
}

// @huggingface/gguf imports six names from @huggingface/tasks (the GGML type
// ids, the quant-label regexes), all in its dist/esm/gguf.js, which imports
// nothing; the package's root also brings every task's code snippets (with
// absolute example image URLs) into the GGUF chunk. gguf's import resolves to
// that one file.
function ggufTasksSubset() {
  const file = fileURLToPath(
    new URL('./node_modules/@huggingface/tasks/dist/esm/gguf.js', import.meta.url),
  );
  return {
    name: 'gguf-tasks-subset',
    enforce: 'pre',
    resolveId(source, importer) {
      return source === '@huggingface/tasks' && importer?.includes('@huggingface/gguf')
        ? file
        : null;
    },
  };
}

// base './' makes every asset URL relative, so the same build works at a
// GitHub Pages subpath (/<repo>/), at a Hugging Face Space root, and from a
// local folder served by any static server.
export default defineConfig({
  base: './',
  plugins: [
    preact(),
    ggufTasksSubset(),
    pageFields(),
    contentSecurityPolicy(),
    preloadCore(),
    // Installable and offline (issue 18): a web app manifest and a Workbox
    // service worker that precaches the whole build (HTML, JS, CSS, the
    // three .wasm modules, the lazily loaded vram_plan and vram_io included,
    // so the planner and import/export work offline too; icons; each preset's config.json and each lazily loaded panel
    // is a .js chunk, which the globPatterns below match) on the first
    // visit, so a reload without a network still estimates, any preset. The
    // page registers the worker itself once the first estimate is painted
    // (src/lib/service-worker.js; injectRegister false: no registerSW.js),
    // so the precache starts after the first estimate (issue 32); autoUpdate
    // takes a new build on the next visit. https://vite-pwa-org.netlify.app/guide/
    VitePWA({
      registerType: 'autoUpdate',
      injectRegister: false,
      includeAssets: ['icon.svg'],
      manifest: {
        name: 'VRAM Planner',
        short_name: 'VRAM Planner',
        description:
          'GPU memory for LLM fine-tuning, training and inference, per GPU and per phase, computed in your browser.',
        theme_color: '#3451b2',
        background_color: '#ffffff',
        display: 'standalone',
        start_url: './',
        scope: './',
        icons: [
          { src: 'icon-192.png', sizes: '192x192', type: 'image/png' },
          { src: 'icon-512.png', sizes: '512x512', type: 'image/png' },
          { src: 'icon.svg', sizes: 'any', type: 'image/svg+xml' },
        ],
      },
      workbox: {
        globPatterns: ['**/*.{js,css,html,wasm,svg,png,webmanifest}'],
        // The app is one page: every navigation gets the cached index.html.
        navigateFallback: 'index.html',
        cleanupOutdatedCaches: true,
      },
    }),
  ],
  // The planner's worker imports the WebAssembly facade dynamically (code
  // splitting), which needs ES module workers (Vite's default is iife).
  worker: { format: 'es' },
  // The presets are the repository's test fixtures (tests/fixtures/models),
  // one level above the site: let the dev server read them.
  server: { fs: { allow: ['..'] } },
  // Lightning CSS handles the CSS modules (composes across files included)
  // without PostCSS.
  css: { transformer: 'lightningcss' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // The WebAssembly binary is its own asset (src/wasm/vram_core.wasm, above
    // Vite's 500 kB chunk hint); its JavaScript glue is a lazily imported chunk.
    chunkSizeWarningLimit: 1024,
    // Preact and its signals are a chunk of their own: the first script and
    // the chunks loaded on demand (components/Lazy) all import them, and
    // Rolldown would otherwise split them off anyway, under the name of the
    // first module in that chunk. A named group
    // (https://rolldown.rs/reference/typealias.codesplittinggroup) says what
    // the file is; either way the page loads it with the first script
    // (a modulepreload link). Vite's preload helper, which every dynamic
    // import() calls, joins it: on its own it was a ninth file on a first
    // visit (0.8 KiB gzip, issue 32).
    rolldownOptions: {
      output: {
        codeSplitting: {
          groups: [
            {
              name: 'preact',
              test: /[\\/]node_modules[\\/](@preact|preact)[\\/]|vite[\\/]preload-helper/,
            },
          ],
        },
      },
    },
  },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'page',
          environment: 'happy-dom',
          include: ['tests/unit/**/*.test.{js,jsx}'],
          setupFiles: ['tests/unit/setup.js'],
          testTimeout: 20000,
        },
      },
      {
        // The WASM helper's parity tests run the module in plain Node.
        extends: true,
        test: {
          name: 'wasm',
          environment: 'node',
          include: ['tests/wasm/**/*.test.{js,mjs,ts}'],
          testTimeout: 60000,
        },
      },
    ],
  },
});
