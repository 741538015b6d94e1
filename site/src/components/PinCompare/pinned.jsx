// The comparison of a pinned setup with the current one (issue 18): what was
// changed, then the peak, each memory component and each phase, and the time
// and cost of both (issue 31: the time model's `time` of each estimate), with
// the difference. A chunk of its own (components/Lazy), loaded when a setup is
// pinned: a first visit has no pin.

import { bytesTitle, formatDuration, formatGiB, formatRange, formatSig } from '../../lib/format.js';
import { pinCurrent, pinned, unpin } from '../../lib/pin.js';
import { pairRows, pinnedOutcome, setupDiff, timeChange, timeRows } from '../../lib/pin-compare.js';
import { model, settings, timeError, timeResult } from '../../lib/state.js';
import { serialize, URL_KEYS } from '../../lib/url-state.js';
import { describePath } from '../../lib/vocabulary.js';
import { Card } from '../Card/index.jsx';
import styles from './pinned.module.css';

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

/** A figure of the time model in its row's unit: "1.2–1.6 s", "3,400–4,100", "$12–15". */
function formatFigure(unit, r) {
  if (unit === 'seconds') return formatDuration(r);
  if (unit === 'hours') return formatDuration({ low: r.low * 3600, high: r.high * 3600 });
  if (unit === 'usd') return `$${formatRange(r)}`;
  return formatRange(r);
}

/** The difference of the middles, signed, and the ratio: "−0.41 s (×0.62)", or "same". */
function formatChange(unit, change) {
  if (!change) return '–';
  if (change.delta === 0) return 'same';
  const size = Math.abs(change.delta);
  const text = formatFigure(unit, { low: size, high: size });
  const sign = change.delta > 0 ? '+' : '−';
  const ratio = Number.isFinite(change.ratio) ? ` (×${formatSig(change.ratio)})` : '';
  return `${sign}${text}${ratio}`;
}

function TimeRow({ row }) {
  const change = timeChange(row);
  return (
    <tr data-key={row.key}>
      <th scope="row" class={styles.label}>
        {row.label}
      </th>
      <td class={styles.num}>{row.before ? formatFigure(row.unit, row.before) : '–'}</td>
      <td class={styles.num}>{row.after ? formatFigure(row.unit, row.after) : '–'}</td>
      <td class={styles.num} data-tone={change?.tone ?? 'same'}>
        {formatChange(row.unit, change)}
      </td>
    </tr>
  );
}

/** "8 × A100 80GB", or why a side has no time figures. */
function runsOn(t) {
  return t?.gpu ? `${t.gpus} × ${t.gpu}` : '–';
}

/**
 * Why a side has no time figures, or null: the pinned estimate runs the full
 * module with the time in it (lib/pin-compare.js); the current one's time is
 * the time lane's, asked after the memory estimate has painted (lib/state.js).
 */
function pinnedTimeNote(result) {
  if (!result.time)
    return 'The pinned estimate has no time: its request leaves the time model out.';
  return result.time.gpu ? null : `Pinned: ${result.time.unavailable}`;
}

function currentTimeNote(time, error) {
  if (error) return `Now: the time model could not answer: ${error.message}`;
  if (!time)
    return (
      'Now: estimating the time… The time model is in the full module (vram_plan.wasm), which ' +
      'the page loads after it has shown the memory estimate.'
    );
  return time.gpu ? null : `Now: ${time.unavailable}`;
}

function TimeTable({ before, after, notes }) {
  const rows = timeRows(before, after);
  return (
    <>
      {notes.map((n) => (
        <p key={n} class={styles.hint} role="status">
          {n}
        </p>
      ))}
      {rows.length > 0 && (
        <div class={`${styles.scroll} ${styles.below}`}>
          <table class={styles.table} aria-label="Time and cost of the pinned and current setups">
            <Head first="Time and cost" />
            <tbody>
              <tr>
                <th scope="row" class={styles.label}>
                  Runs on
                </th>
                <td class={styles.num}>{runsOn(before)}</td>
                <td class={styles.num}>{runsOn(after)}</td>
                <td class={styles.num} />
              </tr>
              {rows.map((r) => (
                <TimeRow key={r.key} row={r} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {rows.length > 0 && (
        <p class={styles.hint}>
          Each figure is the time model's range (README "Time and cost"); the difference is between
          the ranges' middles (their geometric mean), with the ratio Now / Pinned. A run's hours and
          cost need its size (the time card's "Tokens to train on" or samples), a cost a price.
        </p>
      )}
    </>
  );
}

/** The header of both tables: what the rows are, then the two setups and their difference. */
function Head({ first }) {
  return (
    <thead>
      <tr>
        <th scope="col">{first}</th>
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
  );
}

function MemoryTable({ before, result }) {
  return (
    <div class={styles.scroll}>
      <table class={styles.table} aria-label="Pinned and current setups, per GPU, GiB">
        <Head first="GiB per GPU" />
        <tbody>
          <Row label="Peak" before={before.peak_bytes} after={result.peak_bytes} strong />
          <Section title="By component" rows={pairRows(before.components, result.components)} />
          <Section title="By phase" rows={pairRows(before.phases, result.phases)} />
        </tbody>
      </table>
    </div>
  );
}

export function PinnedCompare({ id, title, result }) {
  const pin = pinned.value;
  const o = pinnedOutcome.value;
  const before = o?.result;
  const diff = setupDiff(
    pin,
    { model: model.value, settings: settings.value },
    serialize,
    URL_KEYS,
  );
  const now = timeResult.value;
  const notes = before
    ? [pinnedTimeNote(before), currentTimeNote(now, timeError.value)].filter(Boolean)
    : [];
  return (
    <Card id={id} title={title}>
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
      {before && result && <MemoryTable before={before} result={result} />}
      {before && result && <TimeTable before={before.time} after={now} notes={notes} />}
    </Card>
  );
}
