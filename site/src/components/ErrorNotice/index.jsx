// An input the estimator rejected: its message and the field, in words.
// `field` names the field as is instead (a probe report's own paths, such as
// gpus[0].memory.total, are not request fields).

import { useId } from 'preact/hooks';
import { describePath } from '../../lib/vocabulary.js';
import styles from './style.module.css';

export function ErrorNotice({ error, title = 'The estimator could not use this input', field }) {
  const where = field ?? describePath(error?.path);
  // Unique: the estimate's notice and the planner's can be on the page at once.
  const id = useId();
  return (
    <section class={styles.box} role="alert" aria-labelledby={id}>
      <h2 id={id} class={styles.heading}>
        {title}
      </h2>
      <p class={styles.message}>{error?.message || String(error)}</p>
      {where && (
        <p class={styles.where}>
          Field: <strong>{where}</strong>
        </p>
      )}
      {error?.code && (
        <p class={styles.code}>
          Error code <code>{error.code}</code>
        </p>
      )}
    </section>
  );
}
