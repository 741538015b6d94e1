// The planner's search in progress: it runs in a Web Worker (lib/planner.js),
// so the page stays responsive; this says how long it has been running and
// offers to cancel it. The core's search is one call with no progress
// callback, so the bar is indeterminate and the elapsed time is the measure.

import { useEffect, useState } from 'preact/hooks';
import { cancelPlan, planRunning } from '../../lib/plan.js';
import styles from './style.module.css';

export function PlanProgress() {
  const running = planRunning.value;
  const [now, setNow] = useState(() => performance.now());
  useEffect(() => {
    if (!running) return undefined;
    setNow(performance.now());
    const id = setInterval(() => setNow(performance.now()), 250);
    return () => clearInterval(id);
  }, [running]);
  if (!running) return null;
  const seconds = Math.max(0, (now - running.started) / 1000);
  return (
    <div class={styles.progress} role="status" aria-live="polite">
      <progress class={styles.progressBar} aria-label="Searching layouts" />
      <span>
        Searching layouts… <span class={styles.elapsed}>{seconds.toFixed(1)} s</span>
      </span>
      <button type="button" class={styles.cancel} onClick={cancelPlan}>
        Cancel
      </button>
    </div>
  );
}
