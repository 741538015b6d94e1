// The page: inputs on the left, the estimate on the right (stacked on narrow
// screens).

import { useEffect } from 'preact/hooks';
import { restoreFromHash, syncUrl } from '../../lib/actions.js';
import { loadEstimator } from '../../lib/estimator.js';
import { formatGiB } from '../../lib/format.js';
import { outcome, versionInfo } from '../../lib/state.js';
import { verdictOf } from '../../lib/verdict.js';
import { HardwareForm } from '../HardwareForm/index.jsx';
import { ImportCard } from '../ImportCard/index.jsx';
import { ModelBox } from '../ModelBox/index.jsx';
import { Results } from '../Results/index.jsx';
import { WorkloadForm } from '../WorkloadForm/index.jsx';
import styles from './style.module.css';

/**
 * Restores the state from the URL, keeps the URL in step, and starts loading
 * the estimator. Tests render <App /> the same way the page does.
 */
// On narrow screens the results sit below the form: a bar pinned to the
// bottom keeps the answer in sight while editing, and jumps to the results.
// It stays when the estimate fails (the failure is the answer then), and
// says the verdict in the peak card's words and colour.
function StickyPeak() {
  const o = outcome.value;
  if (!o) return null;
  const r = o.result;
  const v = r?.fit ? verdictOf(r.fit) : null;
  return (
    <a
      class={styles.sticky}
      href="#results"
      data-state={r ? 'result' : 'error'}
      onClick={(e) => {
        e.preventDefault();
        document.getElementById('results')?.scrollIntoView({ behavior: 'smooth' });
      }}
    >
      {r ? (
        <span>
          Peak <strong>{formatGiB(r.peak_bytes)} GiB</strong> per GPU
        </span>
      ) : (
        <span>No estimate: the input has an error</span>
      )}
      {r ? (
        v && (
          <span class={styles.stickyVerdict} data-tone={v.tone} data-status={v.status}>
            {v.words}
          </span>
        )
      ) : (
        <span class={styles.stickyVerdict} data-tone="bad">
          See why
        </span>
      )}
    </a>
  );
}

export function App({ win = typeof window === 'undefined' ? undefined : window }) {
  useEffect(() => {
    loadEstimator().catch(() => {});
    if (!win) return undefined;
    restoreFromHash(win.location.hash);
    return syncUrl(win);
  }, []);
  const v = versionInfo.value;
  return (
    <div class={styles.page}>
      <header class={styles.header}>
        <div>
          <h1 class={styles.title}>VRAM Planner</h1>
          <p class={styles.tagline}>
            How much GPU memory will this fine-tuning, training or inference job need per GPU, and
            where does the peak come from? Computed in your browser.
          </p>
        </div>
        {v && (
          <p class={styles.version}>
            core {v.version} · <code>{v.schema}</code>
          </p>
        )}
      </header>
      <main class={styles.main}>
        <div class={styles.inputs}>
          <ImportCard />
          <ModelBox />
          <WorkloadForm />
          <HardwareForm />
        </div>
        <div id="results" class={styles.results} aria-label="Estimate" role="region">
          <Results />
        </div>
      </main>
      <StickyPeak />
      <footer class={styles.footer}>
        Estimates come from a model of what PyTorch really keeps in memory, phase by phase; every
        number shows its formula. Nothing you enter leaves your browser, except a model id and token
        sent to huggingface.co when you fetch a config.
      </footer>
    </div>
  );
}
