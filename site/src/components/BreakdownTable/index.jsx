// What occupies memory at the peak, each line with the formula it came from.

import { bytesTitle, formatGiB, formatPercent } from '../../lib/format.js';
import { colorOf } from '../../lib/colors.js';
import styles from './style.module.css';

// Each component's bytes are its largest size during the step; the peak
// phase's `parts` say how much of it is live at the peak.
export function BreakdownTable({ components, peakBytes, peakParts }) {
  const max = Math.max(1, ...components.map((c) => c.bytes));
  const atPeak = (c) => (peakParts ? (peakParts[c.key] ?? 0) : c.bytes);
  return (
    <section class={styles.card} aria-labelledby="breakdown-heading">
      <h2 id="breakdown-heading" class={styles.heading}>
        Breakdown
      </h2>
      <p class={styles.note}>
        Each component at its largest during the step, and what of it is live at the peak.
      </p>
      <div class={styles.scroll}>
        <table class={styles.table}>
          <thead>
            <tr>
              <th scope="col">Component</th>
              <th scope="col" class={styles.num}>
                Largest, GiB
              </th>
              <th scope="col" class={styles.num}>
                At peak, GiB
              </th>
              <th scope="col" class={`${styles.num} ${styles.share}`}>
                Share of peak
              </th>
              <th scope="col" class={styles.formulaHead}>
                Formula
              </th>
            </tr>
          </thead>
          <tbody>
            {components.map((c) => (
              <tr key={c.key} data-key={c.key}>
                <th scope="row" class={styles.name}>
                  <span
                    class={styles.swatch}
                    style={{ background: colorOf(c.key) }}
                    aria-hidden="true"
                  />
                  {c.label || c.key}
                  <span class={styles.formulaInline} aria-hidden="true">
                    {c.formula}
                  </span>
                  <span class={styles.bar} aria-hidden="true">
                    <span
                      style={{
                        width: `${((c.bytes / max) * 100).toFixed(1)}%`,
                        background: colorOf(c.key),
                      }}
                    />
                  </span>
                </th>
                <td class={styles.num} title={bytesTitle(c.bytes)} data-bytes={String(c.bytes)}>
                  {formatGiB(c.bytes)}
                </td>
                <td
                  class={styles.num}
                  title={bytesTitle(atPeak(c))}
                  data-peak-bytes={String(atPeak(c))}
                >
                  {formatGiB(atPeak(c))}
                </td>
                <td class={`${styles.num} ${styles.share}`}>
                  {peakBytes > 0 ? formatPercent(atPeak(c) / peakBytes) : '–'}
                </td>
                <td class={styles.formula}>{c.formula}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
