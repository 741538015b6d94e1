// The service worker (vite-plugin-pwa's sw.js, vite.config.js: Workbox
// precaching the whole build) is registered by the page itself once the first
// estimate is painted (components/Results, right after the
// vram:first-estimate mark), so its precache downloads after the first
// estimate, not while the first visit fetches and compiles what that estimate
// needs (issue 32 item 4). A first visit that paints no estimate (a Hub model
// that did not load, an input error) registers it 10 s after the load event
// instead (main.jsx): every first visit leaves the page installable and
// working offline. Production builds only: the dev server and the unit tests
// have no sw.js.

let registered = false;

/** Registers ./sw.js once (later calls do nothing). */
export function registerServiceWorker() {
  if (registered || !import.meta.env.PROD) return;
  if (typeof navigator === 'undefined' || !('serviceWorker' in navigator)) return;
  registered = true;
  navigator.serviceWorker.register('./sw.js', { scope: './' }).catch(() => {});
}
