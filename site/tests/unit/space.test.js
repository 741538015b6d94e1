// The Hugging Face Space bundle check (scripts/space.mjs): what it refuses and
// what it lets through, on small hand-made bundles. `make test-space` runs it
// on the real build.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkBundle, frontMatter, spaceReadme, writeBundle } from '../../scripts/space.mjs';

const README = readFileSync(spaceReadme, 'utf8');
const INDEX = `<!doctype html><html><head>
<link rel="icon" href="data:image/svg+xml,%3Csvg%3E" />
<script type="module" crossorigin src="./assets/index-abc.js"></script>
<link rel="stylesheet" crossorigin href="./assets/index-abc.css">
<link rel="manifest" href="manifest.webmanifest">
</head><body><a href="https://github.com/example/vram-planner">source</a></body></html>`;

let dirs = [];
function bundle(files) {
  const dir = mkdtempSync(join(tmpdir(), 'space-'));
  dirs.push(dir);
  const all = {
    'README.md': README,
    'index.html': INDEX,
    'assets/index-abc.js':
      'const w=new URL("vram_core-1.wasm",import.meta.url);import("./chunk-2.js");' +
      'fetch(`https://huggingface.co/${id}/resolve/main/config.json`);',
    'assets/chunk-2.js': 'export default 1',
    'assets/index-abc.css':
      '.a{background:url(./img.svg)} .b{background:url("data:image/png;base64,AA==")}',
    'assets/img.svg': '<svg/>',
    'manifest.webmanifest': JSON.stringify({
      start_url: './',
      scope: './',
      icons: [{ src: 'icon.svg' }],
    }),
    'icon.svg': '<svg/>',
    ...files,
  };
  for (const [name, text] of Object.entries(all)) {
    if (text === null) continue;
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

describe('the Space bundle check', () => {
  it('passes a bundle whose asset URLs are all relative and present', () => {
    expect(checkBundle(bundle({}))).toEqual([]);
  });

  it('refuses root-absolute script, style and icon URLs in the HTML', () => {
    const problems = checkBundle(
      bundle({ 'index.html': INDEX.replace('./assets/index-abc.js', '/assets/index-abc.js') }),
    );
    expect(problems).toEqual([
      expect.stringMatching(/index\.html: <script src> "\/assets\/index-abc\.js" is absolute/),
    ]);
  });

  it('refuses assets from another origin and a <base> element', () => {
    const html = INDEX.replace('./assets/index-abc.css', 'https://cdn.example.com/x.css').replace(
      '<head>',
      '<head><base href="/vram/">',
    );
    const problems = checkBundle(bundle({ 'index.html': html }));
    expect(problems.join('\n')).toMatch(/cdn\.example\.com\/x\.css" is absolute/);
    expect(problems.join('\n')).toMatch(/<base>/);
  });

  it('refuses absolute URLs in CSS, in the web manifest and in built JavaScript', () => {
    const problems = checkBundle(
      bundle({
        'assets/index-abc.css': '.a{background:url(/assets/img.svg)}',
        'manifest.webmanifest': JSON.stringify({ start_url: '/', icons: [{ src: '/icon.svg' }] }),
        'assets/index-abc.js': 'new URL("/assets/vram_core.wasm", import.meta.url)',
      }),
    );
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/url\(\) "\/assets\/img\.svg"/);
    expect(problems.join('\n')).toMatch(/start_url "\/"/);
    expect(problems.join('\n')).toMatch(/icons\[0\]\.src "\/icon\.svg"/);
    expect(problems.join('\n')).toMatch(/string literal "\/assets\/vram_core\.wasm"/);
  });

  it('refuses relative references to files that are not in the bundle', () => {
    const problems = checkBundle(bundle({ 'assets/index-abc.css': null }));
    expect(problems).toEqual([
      expect.stringMatching(/assets\/index-abc\.css, which is not in the bundle/),
    ]);
  });

  it('refuses a README that is not a static Space serving a file of the bundle', () => {
    const problems = checkBundle(
      bundle({
        'README.md': README.replace('sdk: static', 'sdk: gradio').replace(
          'app_file: index.html',
          'app_file: app.html',
        ),
      }),
    );
    expect(problems).toContain('README.md: sdk is "gradio", not "static"');
    expect(problems).toContain('README.md: app_file app.html is not in the bundle');
    expect(checkBundle(bundle({ 'README.md': '# no front matter\n' }))[0]).toMatch(
      /without YAML front matter/,
    );
  });

  it("the project's Space README configures a static Space on index.html", () => {
    const meta = frontMatter(README);
    expect(meta).toMatchObject({ sdk: 'static', app_file: 'index.html', title: 'VRAM Planner' });
    expect(meta.app_build_command).toBeUndefined();
  });

  it('writes dist plus the README into the output folder', () => {
    const dist = bundle({ 'README.md': null });
    const out = join(dist, '..', `${dist.split('/').pop()}-out`);
    dirs.push(out);
    expect(writeBundle(dist, out)).toEqual([]);
    expect(readFileSync(join(out, 'README.md'), 'utf8')).toBe(README);
    expect(readFileSync(join(out, 'index.html'), 'utf8')).toBe(INDEX);
  });
});
