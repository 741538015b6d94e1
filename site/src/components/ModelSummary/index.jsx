// The model as the core understood it: family, exact parameter count and
// where the parameters sit.

import { formatInt, formatParamsShort } from '../../lib/format.js';
import styles from './style.module.css';

function factValue(v) {
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'number') return Number.isInteger(v) ? formatInt(v) : String(v);
  if (Array.isArray(v)) return v.join(', ');
  if (v && typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export function ModelSummary({ model, name }) {
  const breakdown = model.breakdown ?? [];
  const facts = Object.entries(model.facts ?? {});
  const total = model.params_total;
  return (
    <section class={styles.card} aria-labelledby="model-summary-heading">
      <h2 id="model-summary-heading" class={styles.heading}>
        Model summary
      </h2>
      <p class={styles.name}>{name}</p>
      <dl class={styles.stats}>
        <div>
          <dt>Parameters</dt>
          <dd data-params={String(total)} title={`${formatParamsShort(total)} parameters`}>
            {formatInt(total)}
          </dd>
        </div>
        {Number.isFinite(model.params_trainable) && (
          <div>
            <dt>Trainable</dt>
            <dd data-params={String(model.params_trainable)}>
              {formatInt(model.params_trainable)}
              {total > 0 && model.params_trainable !== total && (
                <span class={styles.muted}>
                  {' '}
                  ({((model.params_trainable / total) * 100).toPrecision(3)} %)
                </span>
              )}
            </dd>
          </div>
        )}
        <div>
          <dt>Family</dt>
          <dd>{model.family}</dd>
        </div>
        {model.architecture && (
          <div>
            <dt>Architecture</dt>
            <dd>
              <code>{model.architecture}</code>
            </dd>
          </div>
        )}
        <div>
          <dt>Count</dt>
          <dd>
            {model.exact ? (
              <span class={styles.exact}>exact, to the parameter</span>
            ) : (
              <span class={styles.inexact}>approximate</span>
            )}
          </dd>
        </div>
      </dl>
      {!model.exact && model.inexact?.length > 0 && (
        <ul class={styles.reasons} aria-label="Why the count is approximate">
          {model.inexact.map((r) => (
            <li key={r}>{r}</li>
          ))}
        </ul>
      )}
      {breakdown.length > 0 && (
        <table class={styles.table}>
          <caption class={styles.caption}>Parameters by component</caption>
          <tbody>
            {breakdown.map((b) => (
              <tr key={b.component}>
                <th scope="row">{b.component}</th>
                <td class={styles.num}>{formatInt(b.params)}</td>
                <td class={styles.num}>
                  {total > 0 ? `${((b.params / total) * 100).toFixed(1)} %` : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {facts.length > 0 && (
        <details class={styles.details}>
          <summary>Architecture facts</summary>
          <dl class={styles.facts}>
            {facts.map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{factValue(v)}</dd>
              </div>
            ))}
          </dl>
        </details>
      )}
    </section>
  );
}
