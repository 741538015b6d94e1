// Every card in the catalog against the same per-GPU peak.

import { bytesTitle, formatGiB, formatPercent } from '../../lib/format.js';
import { settings } from '../../lib/state.js';
import { verdictOf } from '../../lib/verdict.js';
import { Card } from '../Card/index.jsx';
import styles from './style.module.css';

function chooseGpu(name) {
  settings.value = { ...settings.value, gpu: { ...settings.value.gpu, mode: 'catalog', name } };
}

export function GpuTable({ gpus, current }) {
  const rows = [...gpus].sort((a, b) => a.capacity_bytes - b.capacity_bytes);
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
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}
