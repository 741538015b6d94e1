// Memory at each moment of a step, stacked by component; the peak phase is
// highlighted, so users see when they would run out, not only how much. Each
// phase also shows what its tensors hold (allocated) against what the caching
// allocator holds (reserved): the gap is the allocator's cache, whose cause
// the breakdown's allocator row names.

import { colorOf } from '../../lib/colors.js';
import { bytesTitle, formatGiB } from '../../lib/format.js';
import styles from './style.module.css';

// A phase's parts in the order of the result's components (weights first),
// so the same component sits at the same place in every bar.
function partsOf(phase, labels, order) {
  const rank = (key) => (order.has(key) ? order.get(key) : order.size);
  return Object.entries(phase.parts ?? {})
    .filter(([, bytes]) => bytes > 0)
    .sort(([a], [b]) => rank(a) - rank(b))
    .map(([key, bytes]) => ({ key, bytes, label: labels[key] ?? key }));
}

export function PhaseTimeline({ phases, peakPhase, capacityBytes, components = [] }) {
  // Scale to the largest phase so the phases can be told apart; the GPU's
  // capacity joins the scale only when it is close enough to be seen (or
  // exceeded), otherwise it is named under the bars.
  const largest = Math.max(1, ...phases.map((p) => p.bytes));
  const capacityOnScale = capacityBytes > 0 && capacityBytes <= largest * 1.5;
  const max = capacityOnScale ? Math.max(largest, capacityBytes) : largest;
  const capacityAt = capacityOnScale ? (capacityBytes / max) * 100 : null;
  const labels = Object.fromEntries(components.map((c) => [c.key, c.label || c.key]));
  const order = new Map(components.map((c, i) => [c.key, i]));
  const used = new Set(phases.flatMap((p) => partsOf(p, labels, order).map((x) => x.key)));
  const legend = components.filter((c) => used.has(c.key));
  // How the reserved view was found (the allocator replay, or a given factor).
  const allocatorNote = components.find((c) => c.key === 'allocator')?.formula;
  return (
    <section class={styles.card} aria-labelledby="phases-heading">
      <h2 id="phases-heading" class={styles.heading}>
        Memory over one step
      </h2>
      <ol class={styles.list} aria-label="Memory by phase">
        {phases.map((p) => {
          const peak = p.key === peakPhase;
          const parts = partsOf(p, labels, order);
          return (
            <li
              key={p.key}
              class={peak ? styles.peak : undefined}
              aria-current={peak ? 'true' : undefined}
            >
              <span class={styles.label}>
                <span>
                  {p.label || p.key}
                  {peak && <span class={styles.badge}>peak</span>}
                  {Number.isFinite(p.allocated_bytes) && Number.isFinite(p.reserved_bytes) && (
                    <span
                      class={styles.views}
                      data-allocated={String(p.allocated_bytes)}
                      data-reserved={String(p.reserved_bytes)}
                    >
                      allocated {formatGiB(p.allocated_bytes)} · reserved{' '}
                      {formatGiB(p.reserved_bytes)} GiB
                      {p.reserved_bytes > p.allocated_bytes &&
                        ` (+${formatGiB(p.reserved_bytes - p.allocated_bytes)} cached)`}
                    </span>
                  )}
                </span>
              </span>
              <span class={styles.track} aria-hidden="true">
                <span
                  class={styles.bar}
                  style={{ width: `${((p.bytes / max) * 100).toFixed(2)}%` }}
                >
                  {parts.map((x) => (
                    <span
                      key={x.key}
                      class={styles.part}
                      style={{ flexGrow: x.bytes, background: colorOf(x.key) }}
                      title={`${x.label}: ${formatGiB(x.bytes)} GiB`}
                    />
                  ))}
                </span>
                {capacityAt !== null && (
                  <span class={styles.capacity} style={{ left: `${capacityAt.toFixed(2)}%` }} />
                )}
              </span>
              <span class={styles.value} title={bytesTitle(p.bytes)} data-bytes={String(p.bytes)}>
                {formatGiB(p.bytes)} GiB
              </span>
            </li>
          );
        })}
      </ol>
      {allocatorNote && <p class={styles.note}>{allocatorNote}</p>}
      <ul class={styles.legend} aria-label="Colours">
        {legend.map((c) => (
          <li key={c.key}>
            <span class={styles.swatch} style={{ background: colorOf(c.key) }} aria-hidden="true" />
            {c.label || c.key}
          </li>
        ))}
        {capacityAt !== null && (
          <li>
            <span class={styles.legendLine} aria-hidden="true" /> the GPU's usable memory
          </li>
        )}
        {capacityBytes > 0 && capacityAt === null && (
          <li>GPU capacity {formatGiB(capacityBytes)} GiB: off this scale</li>
        )}
      </ul>
    </section>
  );
}
