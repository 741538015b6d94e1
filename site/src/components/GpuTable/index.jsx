// Every card in the catalog against the same per-GPU peak.

import { bytesTitle, formatGiB, formatPercent } from '../../lib/format.js';
import { settings, timeResult } from '../../lib/state.js';
import { verdictOf } from '../../lib/verdict.js';
import { Card } from '../Card/index.jsx';
import { lazyView } from '../Lazy/index.jsx';
import styles from './style.module.css';

function chooseGpu(name) {
  settings.value = { ...settings.value, gpu: { ...settings.value.gpu, mode: 'catalog', name } };
}

// The time model's columns (speed, cost, price: time.jsx) are a chunk of their
// own (components/Lazy): they show once the time has come from vram_plan, a
// moment after the first estimate, so a first visit's script leaves them out
// (issue 32, first visit <= 220 KiB gzip).
const Time = lazyView(() => import('./time.jsx'), 'TimeColumns');

// `time` defaults to the time model's answer for the shown estimate, read
// here so that its arrival re-renders this table alone.
export function GpuTable({ gpus, current, time = timeResult.value, train = true }) {
  const rows = [...gpus].sort((a, b) => a.capacity_bytes - b.capacity_bytes);
  const cards = new Map((time?.cards ?? []).map((c) => [c.name, c]));
  const timed = cards.size > 0;
  const fitting = rows.filter((g) => g.fits).length;
  return (
    <Card
      id="gpus-heading"
      title="Which GPUs fit"
      summary={
        fitting === 0
          ? 'No GPU in the catalog holds this job as configured.'
          : `${fitting} of ${rows.length} GPUs hold this job as configured.`
      }
    >
      <div class={styles.scroll}>
        <table class={styles.table}>
          <thead>
            <tr>
              <th scope="col">GPU</th>
              <th scope="col" class={styles.num}>
                Usable GiB
              </th>
              <th scope="col" class={styles.num}>
                Used
              </th>
              <th scope="col">Verdict</th>
              {timed && <Time.View part="head" train={train} time={time} />}
            </tr>
          </thead>
          <tbody>
            {rows.map((g) => (
              <tr key={g.name} class={g.name === current ? styles.current : undefined}>
                <th scope="row" class={styles.name}>
                  <button
                    type="button"
                    class={styles.link}
                    onClick={() => chooseGpu(g.name)}
                    aria-label={`Use ${g.name}`}
                    aria-pressed={g.name === current ? 'true' : 'false'}
                  >
                    {g.name}
                  </button>
                </th>
                <td class={styles.num} title={bytesTitle(g.capacity_bytes)}>
                  {formatGiB(g.capacity_bytes)}
                </td>
                <td class={styles.num}>
                  <span class={styles.util}>
                    <span
                      class={
                        { good: styles.utilOk, warn: styles.utilWarn }[verdictOf(g).tone] ??
                        styles.utilBad
                      }
                      style={{ width: `${Math.min(100, g.utilization * 100).toFixed(1)}%` }}
                    />
                  </span>
                  {formatPercent(g.utilization)}
                </td>
                <td>
                  <span
                    class={styles[`tone_${verdictOf(g).tone}`]}
                    data-status={verdictOf(g).status}
                    title={g.refused}
                  >
                    {verdictOf(g).words}
                  </span>
                </td>
                {timed && (
                  <Time.View part="cells" card={cards.get(g.name)} train={train} name={g.name} />
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}
