// Pipeline parallel: one row per pipeline rank (result.parallel.stages), what
// it holds and its own peak. The busiest rank is the one the page's peak is.

import { bytesTitle, formatGiB } from '../../lib/format.js';
import { Card } from '../Card/index.jsx';
import styles from './style.module.css';

/** Micro-batches in flight: whole under 1F1B, fractional with virtual stages. */
function formatInFlight(n) {
  if (!Number.isFinite(n)) return '–';
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}

function holds(stage) {
  const parts = [];
  if (stage.embeddings) parts.push('embeddings');
  if (stage.head) parts.push('head + loss');
  return parts.length ? parts.join(', ') : '–';
}

/** The busiest stage: the core's choice, else the largest peak. */
function busiestOf(stages, busiest) {
  if (Number.isSafeInteger(busiest)) return busiest;
  let best = stages[0];
  for (const s of stages) if (s.peak_bytes > best.peak_bytes) best = s;
  return best?.stage;
}

export function StagesTable({ stages, busiest, vp = 1 }) {
  const top = busiestOf(stages, busiest);
  return (
    <Card
      id="stages-heading"
      title="Pipeline stages"
      summary={`Each of the ${stages.length} pipeline ranks holds its own layers and the activations of the micro-batches in flight${vp > 1 ? ` (interleaved over ${vp} virtual stages)` : ' (1F1B)'}. The busiest rank, stage ${top}, sets the peak per GPU.`}
    >
      <div class={styles.scroll}>
        <table class={styles.table}>
          <thead>
            <tr>
              <th scope="col">Stage</th>
              <th scope="col" class={styles.num}>
                Layers
              </th>
              <th scope="col" class={styles.num}>
                In flight <span class={styles.unit}>micro-batches</span>
              </th>
              <th scope="col">Holds</th>
              <th scope="col" class={styles.num}>
                Peak, GiB
              </th>
            </tr>
          </thead>
          <tbody>
            {stages.map((s) => (
              <tr
                key={s.stage}
                data-stage={String(s.stage)}
                class={s.stage === top ? styles.busiest : undefined}
                aria-current={s.stage === top ? 'true' : undefined}
              >
                <th scope="row">
                  {s.stage}
                  {s.stage === top && <span class={styles.badge}>busiest</span>}
                </th>
                <td class={styles.num}>
                  {s.layers}
                  {s.moe_layers > 0 && <span class={styles.muted}> ({s.moe_layers} MoE)</span>}
                </td>
                <td class={styles.num}>{formatInFlight(s.in_flight)}</td>
                <td>{holds(s)}</td>
                <td
                  class={styles.num}
                  title={bytesTitle(s.peak_bytes)}
                  data-bytes={String(s.peak_bytes)}
                >
                  {formatGiB(s.peak_bytes)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}
