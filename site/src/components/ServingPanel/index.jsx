// Inference answers: what one token costs in the KV cache, how big the cache
// is, and how many sequences / how long a context the GPU can serve; for vLLM
// and SGLang also the memory lines the engine prints at start-up, as the
// estimate expects them (result.infer.engine_log).

import { bytesTitle, formatBytes, formatGiB, formatInt } from '../../lib/format.js';
import styles from './style.module.css';

/** One answer: a short term, the value (exact bytes in data-bytes and the title), a muted note. */
function Stat({ label, value, bytes, count, note }) {
  return (
    <div class={styles.stat}>
      <dt>{label}</dt>
      <dd
        data-bytes={bytes === undefined ? undefined : String(bytes)}
        data-count={count === undefined ? undefined : String(count)}
        title={bytes === undefined ? undefined : bytesTitle(bytes)}
      >
        {value}
        {note && <span class={styles.note}> {note}</span>}
      </dd>
    </div>
  );
}

const LEADS = {
  vllm: 'vLLM, paged KV cache',
  sglang: 'SGLang, token pool',
  litgpt: 'LitGPT generate',
  hf: 'transformers generate',
};

/** The engine's start-up lines, one per distinct text. */
function EngineLog({ infer }) {
  const lines = infer.engine_log ?? [];
  if (lines.length === 0) return null;
  const texts = [];
  for (const l of lines) {
    if (!texts.some((t) => t.includes(l.text))) texts.push(l.text);
  }
  return (
    <div class={styles.log}>
      <p class={styles.logTitle}>
        {infer.engine === 'vllm' ? 'vLLM' : 'SGLang'} should print at start-up
      </p>
      <ul aria-label="Engine start-up lines">
        {texts.map((t) => (
          <li key={t}>
            <code>{t}</code>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** A figure of the engine log by key, or undefined. */
function logValue(infer, key) {
  return (infer.engine_log ?? []).find((l) => l.key === key)?.value;
}

export function ServingPanel({ infer }) {
  const vllm = infer.engine === 'vllm';
  const sglang = infer.engine === 'sglang';
  const concurrency = logValue(infer, 'vllm.max_concurrency');
  const perGpu = infer.tp > 1 ? ` · per GPU of ${infer.tp} (tensor parallel)` : '';
  return (
    <section class={styles.card} aria-labelledby="serving-heading">
      <h2 id="serving-heading" class={styles.heading}>
        Serving answers
      </h2>
      <p class={styles.lead}>
        {LEADS[infer.engine] ?? infer.engine}
        {infer.engine_release ? ` ${infer.engine_release}'s rules` : ''} · {formatInt(infer.batch)}{' '}
        sequence
        {infer.batch === 1 ? '' : 's'} ×{' '}
        {formatInt(Number.isFinite(infer.max_model_len) ? infer.max_model_len : infer.context_len)}{' '}
        tokens · KV in {infer.kv_dtype}
        {perGpu}
      </p>
      <dl class={styles.stats}>
        <Stat
          label="KV cache per token"
          value={formatBytes(infer.kv_bytes_per_token)}
          bytes={infer.kv_bytes_per_token}
        />
        <Stat
          label={
            Number.isFinite(infer.ssm_state_bytes)
              ? 'KV cache per token per attention layer'
              : 'KV cache per token per layer'
          }
          value={formatBytes(infer.kv_bytes_per_token_per_layer)}
          bytes={infer.kv_bytes_per_token_per_layer}
        />
        {Number.isFinite(infer.ssm_state_bytes) && (
          <Stat
            label="State cache (conv + SSM), fixed"
            value={formatBytes(infer.ssm_state_bytes)}
            bytes={infer.ssm_state_bytes}
            note="same at any context"
          />
        )}
        <Stat
          label={vllm || sglang ? 'KV cache allocated' : 'KV cache at full context'}
          value={`${formatGiB(infer.kv_cache_bytes)} GiB`}
          bytes={infer.kv_cache_bytes}
        />
        {Number.isFinite(infer.max_concurrent_sequences) && (
          <Stat
            label="Max concurrent sequences"
            value={formatInt(infer.max_concurrent_sequences)}
            count={infer.max_concurrent_sequences}
            note={`at ${formatInt(infer.context_len)} tokens`}
          />
        )}
        {Number.isFinite(infer.max_context_len) && (
          <Stat
            label="Max context"
            value={`${formatInt(infer.max_context_len)} tokens`}
            count={infer.max_context_len}
            note={`at ${formatInt(infer.batch)} sequence${infer.batch === 1 ? '' : 's'}`}
          />
        )}
        {vllm && Number.isFinite(infer.kv_blocks) && (
          <Stat
            label="KV blocks"
            value={formatInt(infer.kv_blocks)}
            count={infer.kv_blocks}
            note={`of ${formatBytes(infer.kv_block_bytes)} each`}
          />
        )}
        {(vllm || sglang) && Number.isFinite(infer.kv_tokens) && (
          <Stat
            label={vllm ? 'GPU KV cache size' : 'max_total_num_tokens'}
            value={`${formatInt(infer.kv_tokens)} tokens`}
            count={infer.kv_tokens}
          />
        )}
        {vllm && Number.isFinite(concurrency) && (
          <Stat
            label="Maximum concurrency"
            value={`${concurrency.toFixed(2)}x`}
            count={concurrency}
            note={`for ${formatInt(infer.max_model_len)} tokens per request`}
          />
        )}
      </dl>
      <EngineLog infer={infer} />
    </section>
  );
}
