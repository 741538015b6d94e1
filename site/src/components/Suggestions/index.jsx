// "What would make it fit": when the job does not fit the chosen card, or fits
// above the headroom rule, the core's ranked changes (vram.suggest), each with
// its re-estimated peak and its cost, and one click to apply it to the form.

import {
  bytesTitle,
  formatDuration,
  formatGiB,
  formatPercent,
  formatRange,
} from '../../lib/format.js';
import { applySuggestion, patchPaths, suggestOutcome, suggestRunning } from '../../lib/suggest.js';
import { verdictOf } from '../../lib/verdict.js';
import { ErrorNotice } from '../ErrorNotice/index.jsx';
import styles from './style.module.css';

/** "train.micro_batch = 2, train.grad_accum = 8": every field a click changes. */
function changeList(patch) {
  return patchPaths(patch)
    .filter(([path]) => path !== 'parallel.dp')
    .map(
      ([path, value]) => `${path} = ${typeof value === 'string' ? value : JSON.stringify(value)}`,
    )
    .join(', ');
}

/**
 * What the change costs in time (the time model's step after it, issue 31):
 * "step 0.71–0.92 s, ×1.33 the job's as asked, $0.20–0.26 per M tokens".
 */
function timeText(t) {
  if (!t) return null;
  const parts = [`step ${formatDuration(t.step_seconds)}`];
  if (Number.isFinite(t.vs_base)) parts.push(`×${t.vs_base.toFixed(2)} the job’s as asked`);
  if (t.usd_per_million_tokens)
    parts.push(`$${formatRange(t.usd_per_million_tokens)} per M tokens`);
  return parts.join(', ');
}

function Row({ s, first }) {
  const time = timeText(s.time);
  const v = verdictOf(s);
  return (
    <li class={styles.item} data-key={s.key}>
      <div class={styles.head}>
        <strong class={styles.title}>{s.title}</strong>
        <span
          class={styles.peak}
          title={bytesTitle(s.peak_bytes)}
          data-bytes={String(s.peak_bytes)}
        >
          {formatGiB(s.peak_bytes)} GiB · {formatPercent(s.utilization)}
          {s.gpu ? ` of ${s.gpu}` : ''}
        </span>
        <span class={styles.badge} data-tone={v.tone}>
          {v.words}
        </span>
        <button
          type="button"
          class={first ? styles.applyFirst : styles.apply}
          aria-label={`Apply: ${s.title}`}
          onClick={() => applySuggestion(s)}
        >
          Apply
        </button>
      </div>
      <p class={styles.cost}>
        <span class={styles.kind}>Cost ({s.cost.kind}):</span> {s.cost.text}
      </p>
      {time && (
        <p class={styles.cost} data-testid="suggestion-time">
          <span class={styles.kind}>Time:</span> {time}
        </p>
      )}
      <p class={styles.meta}>
        Changes <code>{changeList(s.patch)}</code> · Source: {s.cost.source}
      </p>
    </li>
  );
}

export function Suggestions() {
  const o = suggestOutcome.value;
  if (!o) {
    // Searched in a Web Worker: say so while it runs.
    if (!suggestRunning.value) return null;
    return (
      <section class={styles.card} aria-labelledby="suggest-heading" aria-busy="true">
        <h2 id="suggest-heading" class={styles.heading}>
          What would make it fit
        </h2>
        <p class={styles.lead} role="status">
          Estimating each change that could make it fit…
        </p>
      </section>
    );
  }
  if (o.error)
    return <ErrorNotice title="The suggestions could not use this input" error={o.error} />;
  const r = o.result;
  if (r.goal === 'none') return null;
  const goal = r.goal === 'fit' ? 'fit' : 'fit within the 80 % headroom rule';
  return (
    <section class={styles.card} aria-labelledby="suggest-heading" data-goal={r.goal}>
      <h2 id="suggest-heading" class={styles.heading}>
        What would make it {goal}
      </h2>
      {r.suggestions.length === 0 ? (
        <p class={styles.none} role="status">
          No single change the estimator tries makes it {goal} on {r.base?.gpu}: more GPUs with
          sharding in the layout planner below, or a larger card.
        </p>
      ) : (
        <>
          <p class={styles.lead}>
            Each change estimated again on its own, cheapest first: no cost, then speed, optimizer
            precision, what is trained, the data, then hardware.
          </p>
          <ol class={styles.list} aria-label="Suggestions, cheapest first">
            {r.suggestions.map((s, i) => (
              <Row key={s.key} s={s} first={i === 0} />
            ))}
          </ol>
        </>
      )}
    </section>
  );
}
