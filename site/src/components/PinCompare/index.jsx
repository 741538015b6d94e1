// "Compare two setups" (issue 18): pin the current estimate, change anything
// in the form, and read both side by side — the peak, each memory component
// and each phase, with the difference — and what was changed. The pin is in
// the link (lib/pin.js), so a reload or a shared link shows the same pair.

import { bytesTitle, formatGiB } from '../../lib/format.js';
import { pairRows, pinCurrent, pinned, pinnedOutcome, setupDiff, unpin } from '../../lib/pin.js';
import { model, settings } from '../../lib/state.js';
import { serialize, URL_KEYS } from '../../lib/url-state.js';
import { describePath } from '../../lib/vocabulary.js';
import { Card } from '../Card/index.jsx';
import styles from './style.module.css';

/** A signed GiB difference: +1.25, −0.50, 0.00. */
function formatDelta(before, after) {
  if (!Number.isFinite(before) || !Number.isFinite(after)) return '–';
  const d = after - before;
  const text = formatGiB(Math.abs(d));
  if (text === '0.00') return '0.00';
  return `${d > 0 ? '+' : '−'}${text}`;
}

function tone(before, after) {
  if (!Number.isFinite(before) || !Number.isFinite(after) || after === before) return 'same';
  return after > before ? 'more' : 'less';
}

function Row({ label, before, after, strong }) {
  const Cell = strong ? 'strong' : 'span';
  return (
    <tr>
      <th scope="row" class={styles.label}>
        {label}
      </th>
      <td class={styles.num} title={before === null ? undefined : bytesTitle(before)}>
        {before === null ? '–' : <Cell>{formatGiB(before)}</Cell>}
      </td>
      <td class={styles.num} title={after === null ? undefined : bytesTitle(after)}>
        {after === null ? '–' : <Cell>{formatGiB(after)}</Cell>}
      </td>
      <td class={styles.num} data-tone={tone(before ?? 0, after ?? 0)}>
        <Cell>{formatDelta(before ?? 0, after ?? 0)}</Cell>
      </td>
    </tr>
  );
}

function Section({ title, rows }) {
  if (!rows.length) return null;
  return (
    <>
      <tr class={styles.section}>
        <th scope="rowgroup" colSpan={4}>
          {title}
        </th>
      </tr>
      {rows.map((r) => (
        <Row key={r.key} label={r.label} before={r.before} after={r.after} />
      ))}
    </>
  );
}

function Changes({ diff }) {
  if (!diff.length)
    return <p class={styles.hint}>Nothing changed yet: change anything in the form to compare.</p>;
  return (
    <ul class={styles.changes} aria-label="What differs from the pinned setup">
      {diff.map((d) => (
        <li key={d.key}>
          {d.path === 'model' ? 'Model' : describePath(d.path)}:{' '}
          <code>{d.before || 'default'}</code> → <code>{d.after || 'default'}</code>
        </li>
      ))}
    </ul>
  );
}

export function PinCompare({ result }) {
  const pin = pinned.value;
  const id = 'pin-compare-heading';
  if (!pin) {
    return (
      <Card id={id} title="Compare two setups">
        <div class={styles.start}>
          <button type="button" class={styles.button} onClick={pinCurrent}>
            Pin this estimate
          </button>
          <span class={styles.hint}>
            then change anything and see both side by side, by component and phase. The pin is kept
            in the link.
          </span>
        </div>
      </Card>
    );
  }
  const o = pinnedOutcome.value;
  const before = o?.result;
  const diff = setupDiff(
    pin,
    { model: model.value, settings: settings.value },
    serialize,
    URL_KEYS,
  );
  return (
    <Card id={id} title="Compare two setups">
      <div class={styles.start}>
        <button type="button" class={styles.button} onClick={pinCurrent}>
          Pin the current one instead
        </button>
        <button type="button" class={styles.button} onClick={unpin}>
          Unpin
        </button>
      </div>
      <Changes diff={diff} />
      {!o && <p class={styles.hint}>Estimating the pinned setup ({pin.model.id})…</p>}
      {o?.error && (
        <p class={styles.error} role="alert">
          The pinned setup has no estimate: {o.error.message}
        </p>
      )}
      {before && result && (
        <div class={styles.scroll}>
          <table class={styles.table} aria-label="Pinned and current setups, per GPU, GiB">
            <thead>
              <tr>
                <th scope="col">GiB per GPU</th>
                <th scope="col" class={styles.num}>
                  Pinned
                </th>
                <th scope="col" class={styles.num}>
                  Now
                </th>
                <th scope="col" class={styles.num}>
                  Difference
                </th>
              </tr>
            </thead>
            <tbody>
              <Row label="Peak" before={before.peak_bytes} after={result.peak_bytes} strong />
              <Section title="By component" rows={pairRows(before.components, result.components)} />
              <Section title="By phase" rows={pairRows(before.phases, result.phases)} />
            </tbody>
          </table>
        </div>
      )}
    </Card>
  );
}
