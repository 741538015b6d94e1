// The GPU table's time columns (components/GpuTable, loaded once the time
// model has answered, issue 31): each card's tokens per second, the run's or a
// million tokens' cost, and its price per GPU-hour, editable (time.prices in
// the link).

import { formatRange, formatSig } from '../../lib/format.js';
import { settings } from '../../lib/state.js';
import styles from './style.module.css';

/** A card's price override in the link (time.prices); empty = the default table's. */
function setPrice(name, usd) {
  const s = settings.value;
  const prices = { ...(s.time?.prices ?? {}) };
  if (usd > 0) prices[name] = usd;
  else delete prices[name];
  settings.value = { ...s, time: { ...s.time, prices } };
}

/** The time model's figures for one card (time.cards): speed, cost, price. */
function TimeCells({ card, train, name }) {
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

function TimeHead({ train, time }) {
  return (
    <>
      <th
        scope="col"
        class={styles.num}
        title={train ? 'tokens per second per GPU' : 'decode tokens per second, one sequence'}
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
  );
}

/** The header cells (`part` "head") or one card's row cells ("cells"). */
export function TimeColumns({ part, ...props }) {
  return part === 'head' ? <TimeHead {...props} /> : <TimeCells {...props} />;
}
