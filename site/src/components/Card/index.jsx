// A results card with a heading and a one-line summary under it (GPU table,
// pipeline stages, layout planner).

import styles from './style.module.css';

export function Card({ id, title, summary, children }) {
  return (
    <section class={styles.card} aria-labelledby={id}>
      <h2 id={id} class={styles.heading}>
        {title}
      </h2>
      {summary !== undefined && <p class={styles.summary}>{summary}</p>}
      {children}
    </section>
  );
}
