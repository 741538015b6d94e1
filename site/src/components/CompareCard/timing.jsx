// The step time a probe report measured (its `timing`: what the job printed,
// probe-agent/src/measure/step_log.h) against the time model's estimate
// (issue 31): one optimizer step and tokens per second per GPU, measured
// median (fastest–slowest after the warm-up) next to the estimate's range,
// and the gap of the range's middle from the measurement, in
// docs/validation.md's sign (estimate − measured) / measured.

import { formatDuration, formatRange, formatSig } from '../../lib/format.js';
import { rangeMiddle } from '../../lib/pin-compare.js';
import { signedPercent } from './views.jsx';
import styles from './style.module.css';

const FORMAT_WORDS = {
  vram_probe_run: "the run script's timed steps",
  torchtune: "torchtune's Step lines",
  litgpt: "LitGPT's iteration lines",
  hf_trainer: "the Hugging Face Trainer's end-of-training figures",
};

const seconds = (s) => formatDuration({ low: s, high: s });

function spreadText(s, unit) {
  const one = unit === 'seconds' ? seconds : formatSig;
  const range =
    s.count > 1
      ? ` (${one(s.min)}–${one(s.max)}, ${s.count} steps)`
      : s.count === 1
        ? ' (1 step)'
        : '';
  return `${one(s.median)}${range}`;
}

/** The gap of the estimate's middle from the measured median, and whether the range holds it. */
function gapText(measured, range) {
  const mid = rangeMiddle(range);
  if (mid === null || !(measured > 0)) return '–';
  const lo = Math.min(range.low, range.high);
  const hi = Math.max(range.low, range.high);
  const inside = measured >= lo && measured <= hi ? ', within the range' : '';
  return `${signedPercent((mid - measured) / measured)}${inside}`;
}

function Row({ label, measured, unit, estimate }) {
  return (
    <tr>
      <th scope="row">{label}</th>
      <td class={styles.num}>{measured ? spreadText(measured, unit) : '–'}</td>
      <td class={styles.num}>
        {estimate ? (unit === 'seconds' ? formatDuration(estimate) : formatRange(estimate)) : '–'}
      </td>
      <td class={styles.num}>{measured && estimate ? gapText(measured.median, estimate) : '–'}</td>
    </tr>
  );
}

/**
 * `timing`: the report's (null when the job printed no step times);
 * `estimate`: a time object ({gpu, gpus, step_seconds,
 * tokens_per_second_per_gpu}) or null; `from`: whose estimate it is;
 * `cpu`: the job ran on the CPU, so the estimate (for a GPU) does not compare.
 */
export function TimingView({ timing, estimate, from, cpu }) {
  if (!timing) {
    return (
      <p class={styles.muted} data-testid="timing-none">
        Step time: the job printed none that the probe reads (the Hugging Face Trainer's
        end-of-training figures, torchtune's Step lines, LitGPT's iteration lines or{' '}
        <code>vram-probe run</code>'s script).
      </p>
    );
  }
  const est = cpu ? null : estimate;
  const trainer = timing.trainer;
  return (
    <div>
      <p class={styles.line}>
        Step time from {FORMAT_WORDS[timing.format] ?? timing.format}: {timing.steps_logged} step
        {timing.steps_logged === 1 ? '' : 's'} logged
        {timing.warmup_skipped ? ', the first left out as warm-up' : ''}.{' '}
        {cpu
          ? `Measured on the CPU: the estimate is for ${estimate ? `${estimate.gpus} × ${estimate.gpu}` : 'a GPU'}, so the two do not compare.`
          : est
            ? `Against ${from} for ${est.gpus} × ${est.gpu}.`
            : 'No estimate of the time to compare with (the card has no speed figures, or it is still on its way).'}
      </p>
      <div class={styles.scroll}>
        <table class={styles.table} aria-label="Measured and estimated step time">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col" class={styles.num}>
                Measured median (fastest–slowest)
              </th>
              <th scope="col" class={styles.num}>
                Estimate
              </th>
              <th scope="col" class={styles.num}>
                Gap
              </th>
            </tr>
          </thead>
          <tbody>
            <Row
              label="One optimizer step"
              measured={timing.step_seconds}
              unit="seconds"
              estimate={est?.step_seconds}
            />
            <Row
              label="Tokens per second per GPU"
              measured={timing.tokens_per_second_per_gpu}
              unit="rate"
              estimate={est?.tokens_per_second_per_gpu}
            />
            {timing.iteration_seconds && (
              <Row
                label="One iteration (a micro-batch)"
                measured={timing.iteration_seconds}
                unit="seconds"
              />
            )}
            {trainer?.mean_step_seconds != null && (
              <Row
                label="Mean step over the Trainer's run (warm-up, evaluation and saving included)"
                measured={{ median: trainer.mean_step_seconds, count: 0 }}
                unit="seconds"
                estimate={est?.step_seconds}
              />
            )}
          </tbody>
        </table>
      </div>
      {trainer && (
        <p class={styles.muted}>
          The Trainer's train_runtime{' '}
          {trainer.train_runtime == null ? '–' : seconds(trainer.train_runtime)}
          {trainer.train_tokens_per_second != null &&
            `, ${formatSig(trainer.train_tokens_per_second)} tokens/s as it counts them`}
          .
        </p>
      )}
    </div>
  );
}
