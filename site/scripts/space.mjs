// The Hugging Face Space bundle: the built page (dist/) plus the Space's
// README.md (site/space/README.md, whose YAML front matter configures the
// Space), checked so that it works wherever it is served.
//
// A static Space serves the repository's files as they are (sdk: static,
// app_file: index.html; https://huggingface.co/docs/hub/spaces-sdks-static). The
// page is built once for GitHub Pages and the Space: Vite's `base: './'`
// (vite.config.js) makes every asset URL relative, so the same files work at
// /<repo>/ on GitHub Pages, at the Space's root and from a local folder. The Space
// cannot build it itself: a static Space's `app_build_command` needs a paid
// plan, and the build needs Emscripten; .github/workflows/space.yml builds it in
// CI and uploads this folder.
//
// Usage: node scripts/space.mjs DIST OUT   (writes OUT, exits 1 listing every problem)
//        node scripts/space.mjs --check DIR (checks a bundle already written)

import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, extname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

const here = dirname(fileURLToPath(import.meta.url));
export const spaceReadme = resolve(here, '..', 'space', 'README.md');

// Values the Hub accepts for the card's gradient (Spaces configuration
// reference, https://huggingface.co/docs/hub/spaces-config-reference).
const COLORS = ['red', 'yellow', 'green', 'blue', 'indigo', 'purple', 'pink', 'gray'];

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** The YAML front matter of a README (between the first two `---` lines), or null. */
export function frontMatter(text) {
  const m = text.match(/^---\r?\n([\s\S]*?)\r?\n---\r?\n/);
  return m ? parseYaml(m[1]) : null;
}

// A reference that a static host resolves against its own origin or another
// one instead of the page's folder: "/x", "//host/x", "https://host/x".
const ABSOLUTE = /^(?:[a-z][a-z0-9+.-]*:|\/)/i;
const harmless = (url) =>
  url === '' || url.startsWith('#') || /^(?:data|blob|about|mailto):/i.test(url);

// Files a page loads: scripts, styles, module preloads, icons, the manifest,
// images, workers. Their URLs must be relative.
const ASSET_EXT = /\.(?:m?js|css|wasm|json|webmanifest|svg|png|ico|webp|jpg|woff2?)(?:[?#].*)?$/i;

function htmlRefs(text) {
  const refs = [];
  const tag = /<(script|link|img|source|iframe|embed|object)\b([^>]*)>/gi;
  for (const m of text.matchAll(tag)) {
    const attrs = m[2];
    const rel = (attrs.match(/\brel\s*=\s*["']?([^"'\s>]+)/i) ?? [])[1] ?? '';
    // <link rel="canonical"|"alternate"> names a page, not an asset the page loads.
    if (m[1].toLowerCase() === 'link' && /^(?:canonical|alternate|author|license)$/i.test(rel))
      continue;
    for (const a of attrs.matchAll(/\b(src|href|data)\s*=\s*("([^"]*)"|'([^']*)'|([^\s>]+))/gi)) {
      refs.push({ url: a[3] ?? a[4] ?? a[5], where: `<${m[1]} ${a[1]}>` });
    }
  }
  if (/<base\b/i.test(text)) refs.push({ url: '/', where: '<base> (rebases every relative URL)' });
  return refs;
}

function cssRefs(text) {
  return [...text.matchAll(/url\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s]*))\s*\)/gi)].map((m) => ({
    url: m[1] ?? m[2] ?? m[3],
    where: 'url()',
  }));
}

function manifestRefs(text) {
  const m = JSON.parse(text);
  const refs = [];
  for (const key of ['start_url', 'scope'])
    if (typeof m[key] === 'string') refs.push({ url: m[key], where: key });
  for (const [i, icon] of (m.icons ?? []).entries())
    refs.push({ url: icon.src, where: `icons[${i}].src` });
  return refs;
}

// In built JavaScript, asset URLs are string literals: Vite writes
// `new URL("x.wasm", import.meta.url)`, `import("./x.js")` and its preload list.
// A literal that is an absolute path or an absolute URL ending in an asset
// extension loads from the wrong place; URLs of APIs (the Hub's config.json
// fetches) are not files of the page and pass.
function jsRefs(text) {
  const refs = [];
  for (const m of text.matchAll(/["'`]((?:\/|[a-z][a-z0-9+.-]*:\/\/)[^"'`\s]*)["'`]/gi)) {
    const url = m[1];
    if (!ASSET_EXT.test(url)) continue;
    // A Hub file the page fetches at run time (resolve/main/config.json) is data, not a page asset.
    if (/^https:\/\/huggingface\.co\//.test(url)) continue;
    refs.push({ url, where: 'string literal', mustExist: false });
  }
  return refs;
}

/**
 * Every problem of a Space bundle folder: absolute asset URLs in HTML, CSS,
 * JS and the web manifest; relative references to files that are not there;
 * a README whose front matter is not a static Space serving an existing file.
 * An empty list means it works at any base path.
 */
export function checkBundle(dir) {
  const problems = [];
  if (!existsSync(dir)) return [`${dir} does not exist`];
  const files = walk(dir).map((p) => relative(dir, p).split('\\').join('/'));
  const have = new Set(files);

  const readme = have.has('README.md')
    ? frontMatter(readFileSync(join(dir, 'README.md'), 'utf8'))
    : null;
  if (!readme) {
    problems.push('README.md: missing, or without YAML front matter (the Space configuration)');
  } else {
    if (readme.sdk !== 'static')
      problems.push(`README.md: sdk is ${JSON.stringify(readme.sdk)}, not "static"`);
    const app = readme.app_file ?? 'index.html';
    if (!have.has(app)) problems.push(`README.md: app_file ${app} is not in the bundle`);
    if (readme.app_build_command) {
      problems.push(
        'README.md: app_build_command (the Space would rebuild; static builds need a paid plan)',
      );
    }
    for (const key of ['title', 'emoji']) if (!readme[key]) problems.push(`README.md: no ${key}`);
    for (const key of ['colorFrom', 'colorTo']) {
      if (!COLORS.includes(readme[key]))
        problems.push(`README.md: ${key} must be one of ${COLORS.join(', ')}`);
    }
  }
  if (!files.some((f) => f.endsWith('.html'))) problems.push('no HTML file');

  for (const file of files) {
    const ext = extname(file).toLowerCase();
    let refs;
    const text = () => readFileSync(join(dir, file), 'utf8');
    if (ext === '.html') refs = htmlRefs(text());
    else if (ext === '.css') refs = cssRefs(text());
    else if (ext === '.webmanifest' || file.endsWith('manifest.json')) refs = manifestRefs(text());
    else if (ext === '.js' || ext === '.mjs') refs = jsRefs(text());
    else continue;
    for (const { url, where, mustExist = true } of refs) {
      if (harmless(url)) continue;
      if (ABSOLUTE.test(url)) {
        problems.push(
          `${file}: ${where} ${JSON.stringify(url)} is absolute; it must be relative to the page`,
        );
        continue;
      }
      if (!mustExist) continue;
      const target = posix.normalize(posix.join(posix.dirname(file), url.replace(/[?#].*$/, '')));
      const path =
        target === '.' || target.endsWith('/') ? posix.join(target, 'index.html') : target;
      if (target.startsWith('..') || !have.has(path)) {
        problems.push(
          `${file}: ${where} ${JSON.stringify(url)} points to ${path}, which is not in the bundle`,
        );
      }
    }
  }
  return problems;
}

/** Copies dist/ and the Space README into `out` (emptied first); returns checkBundle(out). */
export function writeBundle(dist, out, readme = spaceReadme) {
  if (!existsSync(join(dist, 'index.html')))
    return [`${dist}/index.html does not exist: build the page first`];
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  cpSync(dist, out, { recursive: true });
  writeFileSync(join(out, 'README.md'), readFileSync(readme));
  return checkBundle(out);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const check = args[0] === '--check';
  if (args.length !== 2) {
    console.error('usage: node scripts/space.mjs DIST OUT | node scripts/space.mjs --check DIR');
    process.exit(2);
  }
  const dir = args[1];
  const problems = check ? checkBundle(dir) : writeBundle(args[0], args[1]);
  for (const p of problems) console.error(`space bundle: ${p}`);
  if (problems.length > 0) process.exit(1);
  console.log(`space bundle: ${dir} (${walk(dir).length} files) works at any base path`);
}
