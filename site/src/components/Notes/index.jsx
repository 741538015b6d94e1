// Warnings the core raised, the assumptions it made for fields the request
// left out, and the training framework's defaults it applied.

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

/**
 * The framework the estimate assumed (result.framework): each default its
 * recipe set, with the framework file it comes from, and what it does that
 * the estimate does not model. Nothing for hf with nothing applied.
 */
export function FrameworkNotes({ framework }) {
  if (!framework) return null;
  const applied = framework.defaults_applied ?? [];
  const missing = framework.not_modelled ?? [];
  if (!applied.length && !missing.length) return null;
  return (
    <details class={styles.assumptions}>
      <summary>
        {framework.label} defaults in this estimate ({applied.length})
      </summary>
      {applied.length > 0 && (
        <ul class={styles.list}>
          {applied.map((d) => (
            <li key={d.path}>
              <code>{d.path}</code> = <code>{JSON.stringify(d.value)}</code>: {d.source}
            </li>
          ))}
        </ul>
      )}
      {missing.length > 0 && (
        <>
          <p>Not modelled:</p>
          <ul class={styles.list}>
            {missing.map((m, i) => (
              <li key={i}>{m}</li>
            ))}
          </ul>
        </>
      )}
    </details>
  );
}
