import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';

// base './' makes every asset URL relative, so the same build works at a
// GitHub Pages subpath (/<repo>/), at a Hugging Face Space root, and from a
// local folder served by any static server.
export default defineConfig({
  base: './',
  plugins: [preact()],
  // The presets are the repository's test fixtures (tests/fixtures/models),
  // one level above the site: let the dev server read them.
  server: { fs: { allow: ['..'] } },
  // Lightning CSS handles the CSS modules (composes across files included)
  // without PostCSS.
  css: { transformer: 'lightningcss' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // The WASM module (src/wasm/vram_core.mjs) embeds its binary as base64 and
    // is its own lazily imported chunk; it is larger than Vite's 500 kB hint.
    chunkSizeWarningLimit: 2048,
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
