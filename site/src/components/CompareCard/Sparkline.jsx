// The measured memory over the run as a small inline SVG: the series, the
// estimate as a dashed line, and the peak marked. No chart library. The SVG
// stretches to the card's width at a fixed height (lines keep their width
// with non-scaling strokes); the peak's dot and the labels are HTML, so they
// stay round and legible on a phone.

import { formatGiB } from '../../lib/format.js';
import styles from './style.module.css';

const W = 600;
const H = 100;
const PAD = 4; // keeps the top of the curve and the dot inside the plot

function seconds(ms) {
  return ms >= 10000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * points: [{t_ms, bytes}] (at least two); estimate: bytes or null.
 */
export function Sparkline({ points, estimate, label }) {
  const t0 = points[0].t_ms;
  const span = Math.max(1, points[points.length - 1].t_ms - t0);
  let peak = points[0];
  for (const p of points) if (p.bytes > peak.bytes) peak = p;
  const hasEstimate = Number.isFinite(estimate);
  const top = Math.max(peak.bytes, hasEstimate ? estimate : 0, 1) * 1.05;
  const x = (t) => ((t - t0) / span) * W;
  const y = (b) => PAD + (1 - b / top) * (H - PAD);
  const line = points.map((p) => `${x(p.t_ms).toFixed(1)},${y(p.bytes).toFixed(1)}`).join(' ');
  const area = `0,${H} ${line} ${W},${H}`;
  const ey = hasEstimate ? y(estimate).toFixed(1) : null;
  return (
    <figure class={styles.spark} role="img" aria-label={label} data-peak-bytes={String(peak.bytes)}>
      <div class={styles.sparkPlot}>
        <svg viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" aria-hidden="true">
          <polygon class={styles.sparkArea} points={area} />
          <polyline class={styles.sparkLine} points={line} />
          {ey !== null && <line class={styles.sparkEstimate} x1="0" x2={W} y1={ey} y2={ey} />}
        </svg>
        <span
          class={styles.sparkPeak}
          data-peak-t-ms={String(peak.t_ms)}
          style={{
            left: `${((x(peak.t_ms) / W) * 100).toFixed(2)}%`,
            top: `${((y(peak.bytes) / H) * 100).toFixed(2)}%`,
          }}
        />
      </div>
      <figcaption class={styles.sparkLegend}>
        <span>0 s</span>
        <span class={styles.sparkKey}>
          <span class={styles.sparkDot} /> peak {formatGiB(peak.bytes)} GiB at{' '}
          {seconds(peak.t_ms - t0)}
        </span>
        {hasEstimate && (
          <span class={styles.sparkKey}>
            <span class={styles.sparkDash} /> estimate {formatGiB(estimate)} GiB
          </span>
        )}
        <span>{seconds(span)}</span>
      </figcaption>
    </figure>
  );
}
