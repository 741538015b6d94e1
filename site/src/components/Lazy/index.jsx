// A component that lives in a chunk of its own, loaded on demand: parts of
// the page no first visit shows (a probe report's views, the planner's table
// of layouts) are split off by Vite at a dynamic import()
// (https://vite.dev/guide/features#dynamic-import), so the first script is
// smaller, and the service worker precaches the chunks for offline use
// (vite.config.js). preact/compat's lazy() and <Suspense> would do the same
// but bring the compat layer into the first script.

import { signal } from '@preact/signals';
import { useEffect } from 'preact/hooks';

/**
 * `importer` is `() => import('./file.jsx')` and `name` the export to show.
 * Returns {load, View}: load() starts the download (call it where the user
 * asks for the part, so it overlaps the work that precedes it) and View
 * renders the component once loaded, `fallback` meanwhile and
 * `failed(error)` if the chunk did not load (offline before the service
 * worker had it); a later load() tries again.
 */
export function lazyView(importer, name) {
  const loaded = signal(null);
  let loading = null;
  const load = () => {
    loading ??= importer().then(
      (m) => {
        loaded.value = { Component: m[name] };
      },
      (error) => {
        loading = null;
        loaded.value = { error };
      },
    );
    return loading;
  };
  function View({ fallback = null, failed = () => null, ...props }) {
    const state = loaded.value;
    // Shown without a load() first (an answer restored or kept): load now.
    useEffect(() => {
      if (!state) load();
    }, [state]);
    if (state?.Component) return <state.Component {...props} />;
    if (state?.error) return failed(state.error);
    return fallback;
  }
  return { load, View };
}
