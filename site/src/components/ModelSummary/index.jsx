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

const GIB = 1024 ** 3;

/**
 * What the checkpoint's safetensors headers hold (result.model.checkpoint):
 * bytes as stored, quantisation, and the cross-check of the exact count.
 */
function CheckpointCheck({ checkpoint: c, family }) {
  const x = c.cross_check ?? {};
  const fromTensors = family === 'safetensors';
  return (
    <div class={styles.checkpoint} aria-label="Checkpoint">
      <p>
        Checkpoint: {formatInt(c.tensors)} tensors, {(c.stored_bytes / GIB).toFixed(2)} GiB as
        stored
        {c.quantization ? ` (${c.quantization})` : ''}, {formatInt(c.params)} parameters.
      </p>
      {fromTensors ? (
        <p class={styles.muted}>
          Built from the checkpoint's tensors: every weight is counted as stored; the layer shapes
          come from the tensor shapes.
        </p>
      ) : x.matches ? (
        <p class={styles.exact} data-cross-check="match">
          Cross-check: the exact count equals the checkpoint's.
        </p>
      ) : (
        <div data-cross-check="differs">
          <p class={styles.inexact}>
            Cross-check: the checkpoint holds {formatInt(Math.abs(x.difference))} parameters{' '}
            {x.difference > 0 ? 'more' : 'fewer'} than the exact count.
          </p>
          {x.explained?.length > 0 && (
            <ul class={styles.reasons}>
              {x.explained.map((e) => (
                <li key={e.reason}>
                  {e.reason}
                  {e.params ? `: ${formatInt(e.params)}` : ''}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {c.unplaced?.length > 0 && (
        <details class={styles.details}>
          <summary>{formatInt(c.unplaced.length)} tensors not placed (counted as weights)</summary>
          <ul class={styles.reasons}>
            {c.unplaced.slice(0, 50).map((n) => (
              <li key={n}>
                <code>{n}</code>
              </li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
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
      {model.checkpoint && <CheckpointCheck checkpoint={model.checkpoint} family={model.family} />}
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
