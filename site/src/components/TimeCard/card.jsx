// How long and how much (issue 31): the time model's answer for the shown
// request (the result's `time`, core/src/speed), which the full module
// computes a moment after the estimate. Training: one optimizer step, tokens
// per second per GPU, MFU, and with the run's size its hours and cost.
// Inference: time to first token and decode speed per sequence and for the
// batch. Every figure is a range (the model's own uncertainty), and where
// the time goes is one click away.

import { formatDuration, formatInt, formatRange, formatSig } from '../../lib/format.js';
import { settings } from '../../lib/state.js';
import styles from './style.module.css';

function setTime(key, value) {
  const s = settings.value;
  settings.value = { ...s, time: { ...s.time, [key]: value } };
}

/** A number box of the time form: empty = absent (null). */
function NumberBox({ label, value, onInput, step = 'any', min = '0', placeholder, hint }) {
  const id = `time-${label.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <div class={styles.field}>
      <label for={id}>{label}</label>
      <input
        id={id}
        type="number"
        inputMode="decimal"
        min={min}
        step={step}
        value={value ?? ''}
        placeholder={placeholder}
        aria-describedby={hint ? `${id}-hint` : undefined}
        onInput={(e) => {
          const v = e.currentTarget.value === '' ? null : Number(e.currentTarget.value);
          onInput(Number.isFinite(v) && v > 0 ? v : null);
        }}
      />
      {hint && <small id={`${id}-hint`}>{hint}</small>}
    </div>
  );
}

function Stat({ label, value, note, testid }) {
  return (
    <div class={styles.stat}>
      <dt>{label}</dt>
      <dd data-testid={testid}>
        {value}
        {note && <span class={styles.note}> {note}</span>}
      </dd>
    </div>
  );
}

function price(t) {
  return t.price ? `$${formatSig(t.price.usd_per_gpu_hour)} per GPU-hour` : null;
}

function TrainStats({ t }) {
  return (
    <dl class={styles.stats}>
      <Stat
        label="One optimizer step"
        value={formatDuration(t.step_seconds)}
        note={`${formatInt(t.tokens_per_step)} tokens on ${t.gpus} × ${t.gpu}`}
        testid="step-seconds"
      />
      <Stat
        label="Tokens per second per GPU"
        value={formatRange(t.tokens_per_second_per_gpu)}
        note={`${formatRange(t.tokens_per_second)} on all ${t.gpus}`}
        testid="tokens-per-gpu"
      />
      <Stat
        label="MFU"
        value={`${formatRange(t.mfu, 100)} %`}
        note={`of ${formatSig(t.peak_tflops)} TFLOPS peak`}
      />
      <Stat
        label={t.run ? `The run (${formatSig(t.run.tokens / 1e9)} B tokens)` : 'The run'}
        value={
          t.run_hours
            ? formatDuration({ low: t.run_hours.low * 3600, high: t.run_hours.high * 3600 })
            : '–'
        }
        note={t.run ? `${formatInt(t.run.steps)} steps` : 'give its size below'}
        testid="run-hours"
      />
      <Stat
        label="Cost"
        value={
          t.usd
            ? `$${formatRange(t.usd)}`
            : t.usd_per_million_tokens
              ? `$${formatRange(t.usd_per_million_tokens)} / M tokens`
              : '–'
        }
        note={price(t) ?? 'no price for this card: give one below'}
        testid="run-cost"
      />
    </dl>
  );
}

function InferStats({ t }) {
  return (
    <dl class={styles.stats}>
      <Stat
        label="Time to first token"
        value={formatDuration(t.ttft_seconds)}
        note={`${formatInt(t.batch)} prompt${t.batch === 1 ? '' : 's'} of ${formatInt(t.prompt_len)} tokens`}
        testid="ttft"
      />
      <Stat
        label="Decode, per sequence"
        value={`${formatRange(t.decode_tokens_per_second_per_sequence)} tokens/s`}
        note={`at ${formatInt(t.mean_context)} tokens of context`}
        testid="decode-per-sequence"
      />
      <Stat
        label={`Decode, all ${formatInt(t.batch)}`}
        value={`${formatRange(t.decode_tokens_per_second)} tokens/s`}
        testid="decode-total"
      />
      <Stat
        label="Cost per million output tokens"
        value={
          t.usd_per_million_output_tokens ? `$${formatRange(t.usd_per_million_output_tokens)}` : '–'
        }
        note={price(t) ?? 'no price for this card: give one below'}
      />
    </dl>
  );
}

function RunForm({ train, t }) {
  const s = settings.value.time;
  return (
    <div class={styles.form}>
      {train && (
        <>
          <NumberBox
            label="Tokens to train on"
            value={s.tokens}
            step="1"
            onInput={(v) => setTime('tokens', v === null ? null : Math.round(v))}
            hint="or samples below"
          />
          <NumberBox
            label="Samples"
            value={s.samples}
            step="1"
            onInput={(v) => setTime('samples', v === null ? null : Math.round(v))}
          />
          <NumberBox
            label="Mean sample length"
            value={s.mean_len}
            step="1"
            placeholder="seq_len"
            onInput={(v) => setTime('mean_len', v === null ? null : Math.round(v))}
            hint="packed or padded to the longest"
          />
          <NumberBox label="Epochs" value={s.epochs} onInput={(v) => setTime('epochs', v ?? 1)} />
        </>
      )}
      <NumberBox
        label="Price per GPU-hour (USD)"
        value={s.gpu_hour_usd}
        placeholder={t?.price ? formatSig(t.price.usd_per_gpu_hour) : 'none'}
        onInput={(v) => setTime('gpu_hour_usd', v)}
        hint={t?.price && !s.gpu_hour_usd ? t.price.source : undefined}
      />
    </div>
  );
}

function Terms({ terms, title }) {
  if (!terms?.length) return null;
  return (
    <table class={styles.terms}>
      <caption>{title}</caption>
      <thead>
        <tr>
          <th scope="col">Term</th>
          <th scope="col" class={styles.num}>
            Time
          </th>
          <th scope="col">How</th>
        </tr>
      </thead>
      <tbody>
        {terms.map((x) => (
          <tr key={x.key} data-key={x.key}>
            <th scope="row">{x.label}</th>
            <td class={styles.num}>{formatDuration(x.seconds)}</td>
            <td class={styles.formula}>{x.formula}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function TimeCard({ time, error, train }) {
  const t = time;
  return (
    <section class={styles.card} aria-labelledby="time-heading">
      <h2 id="time-heading" class={styles.heading}>
        How long and how much
      </h2>
      {error && <p class={styles.error}>The time model could not answer: {error.message}</p>}
      {t && !t.gpu && <p class={styles.lead}>{t.unavailable}</p>}
      {t?.gpu && (train ? <TrainStats t={t} /> : <InferStats t={t} />)}
      <RunForm train={train} t={t} />
      {t?.gpu && (
        <details class={styles.details}>
          <summary>Where the time goes, and what it assumes</summary>
          <p class={styles.lead}>
            Each figure is a range: the fast end takes every efficiency the sources measured at its
            best, the slow end at its worst (README "Time and cost").
          </p>
          <Terms terms={t.terms} title={train ? 'One optimizer step' : 'One decode step'} />
          {!train && <Terms terms={t.prefill_terms} title="The prefill" />}
          <ul class={styles.assumptions}>
            {(t.assumptions ?? []).map((a) => (
              <li key={a}>{a}</li>
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}
