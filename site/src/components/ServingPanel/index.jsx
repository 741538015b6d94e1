// Inference answers: what one token costs in the KV cache, how big the cache
// is, and how many sequences / how long a context the GPU can serve.

import { bytesTitle, formatBytes, formatGiB, formatInt } from '../../lib/format.js';
import styles from './style.module.css';

function Stat({ label, value, bytes, note }) {
  return (
    <div class={styles.stat}>
      <dt>{label}</dt>
      <dd
        data-bytes={bytes === undefined ? undefined : String(bytes)}
        title={bytes === undefined ? undefined : bytesTitle(bytes)}
      >
        {value}
        {note && <span class={styles.note}> {note}</span>}
      </dd>
    </div>
  );
}

export function ServingPanel({ infer }) {
  const vllm = infer.engine === 'vllm';
  const perGpu = infer.tp > 1 ? ` per GPU (tensor parallel ${infer.tp})` : '';
  return (
    <section class={styles.card} aria-labelledby="serving-heading">
      <h2 id="serving-heading" class={styles.heading}>
        Serving answers
      </h2>
      <p class={styles.lead}>
        {vllm ? 'vLLM, paged KV cache' : 'transformers generate'} · {formatInt(infer.batch)}{' '}
        sequence{infer.batch === 1 ? '' : 's'} × {formatInt(infer.context_len)} tokens · KV in{' '}
        {infer.kv_dtype}
        {perGpu}
      </p>
      <dl class={styles.stats}>
        <Stat
          label="KV cache per token"
          value={formatBytes(infer.kv_bytes_per_token)}
          bytes={infer.kv_bytes_per_token}
        />
        <Stat
          label="KV cache per token per layer"
          value={formatBytes(infer.kv_bytes_per_token_per_layer)}
          bytes={infer.kv_bytes_per_token_per_layer}
        />
        <Stat
          label={vllm ? 'KV cache allocated' : 'KV cache at full context'}
          value={`${formatGiB(infer.kv_cache_bytes)} GiB`}
          bytes={infer.kv_cache_bytes}
        />
        {Number.isFinite(infer.max_concurrent_sequences) && (
          <Stat
            label={`Max concurrent sequences at ${formatInt(infer.context_len)} tokens`}
            value={formatInt(infer.max_concurrent_sequences)}
          />
        )}
        {Number.isFinite(infer.max_context_len) && (
          <Stat
            label={`Max context at ${formatInt(infer.batch)} sequence${infer.batch === 1 ? '' : 's'}`}
            value={`${formatInt(infer.max_context_len)} tokens`}
          />
        )}
        {vllm && Number.isFinite(infer.kv_blocks) && (
          <Stat
            label="KV blocks"
            value={formatInt(infer.kv_blocks)}
            note={`× ${formatBytes(infer.kv_block_bytes)}`}
          />
        )}
      </dl>
    </section>
  );
}
