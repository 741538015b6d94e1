// Warnings the core raised, and the assumptions it made for fields the
// request left out.

import styles from './style.module.css';

export function Warnings({ warnings }) {
  if (!warnings?.length) return null;
  return (
    <section class={styles.warnings} aria-labelledby="warnings-heading">
      <h2 id="warnings-heading" class={styles.heading}>
        Warnings
      </h2>
      <ul class={styles.list}>
        {warnings.map((w, i) => (
          <li key={i}>{typeof w === 'string' ? w : (w.message ?? JSON.stringify(w))}</li>
        ))}
      </ul>
    </section>
  );
}

export function Assumptions({ assumptions }) {
  if (!assumptions?.length) return null;
  return (
    <details class={styles.assumptions}>
      <summary>Assumptions behind this estimate ({assumptions.length})</summary>
      <ul class={styles.list}>
        {assumptions.map((a, i) => (
          <li key={i}>{typeof a === 'string' ? a : (a.message ?? JSON.stringify(a))}</li>
        ))}
      </ul>
    </details>
  );
}
