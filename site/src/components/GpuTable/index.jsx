// Every card in the catalog against the same per-GPU peak.

import { bytesTitle, formatGiB, formatPercent, formatRange, formatSig } from '../../lib/format.js';
import { settings, timeResult } from '../../lib/state.js';
import { verdictOf } from '../../lib/verdict.js';
import { Card } from '../Card/index.jsx';
import styles from './style.module.css';

function chooseGpu(name) {
  settings.value = { ...settings.value, gpu: { ...settings.value.gpu, mode: 'catalog', name } };
}

/** A card's price override in the link (time.prices); empty = the default table's. */
function setPrice(name, usd) {
  const s = settings.value;
  const prices = { ...(s.time?.prices ?? {}) };
  if (usd > 0) prices[name] = usd;
  else delete prices[name];
  settings.value = { ...s, time: { ...s.time, prices } };
}

/** The time model's figures for one card (time.cards): speed, cost, price. */
function timeCells(card, train, name) {
  const speed = !card
    ? '–'
    : train
      ? formatRange(card.tokens_per_second_per_gpu)
      : formatRange(card.decode_tokens_per_second_per_sequence);
  const cost = !card
    ? '–'
    : train
      ? card.usd
        ? `$${formatRange(card.usd)}`
        : card.usd_per_million_tokens
          ? `$${formatRange(card.usd_per_million_tokens)}/M`
          : '–'
      : card.usd_per_million_output_tokens
        ? `$${formatRange(card.usd_per_million_output_tokens)}/M`
        : '–';
  const own = settings.value.time?.prices?.[name];
  return (
    <>
      <td class={styles.num} data-col="speed">
        {speed}
      </td>
      <td class={styles.num} data-col="cost">
        {cost}
      </td>
      <td class={styles.num}>
        <input
          class={styles.price}
          type="number"
          min="0"
          step="any"
          inputMode="decimal"
          aria-label={`Price per GPU-hour of the ${name} (USD)`}
          placeholder={card?.price ? formatSig(card.price.usd_per_gpu_hour) : '–'}
          value={own ?? ''}
          onChange={(e) => setPrice(name, Number(e.currentTarget.value))}
        />
      </td>
    </>
  );
}

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
              {timed && (
                <>
                  <th
                    scope="col"
                    class={styles.num}
                    title={
                      train ? 'tokens per second per GPU' : 'decode tokens per second, one sequence'
                    }
                  >
                    {train ? 'Tokens/s per GPU' : 'Decode tok/s'}
                  </th>
                  <th scope="col" class={styles.num}>
                    {train ? (time.run ? 'Run cost' : 'Cost per M tokens') : 'Cost per M tokens'}
                  </th>
                  <th scope="col" class={styles.num}>
                    $/GPU-hour
                  </th>
                </>
              )}
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
                {timed && timeCells(cards.get(g.name), train, g.name)}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  );
}
