// The answer: the per-GPU peak against the chosen GPU's capacity.

import { bytesTitle, formatGiB, formatPercent } from '../../lib/format.js';
import { verdictOf } from '../../lib/verdict.js';
import styles from './style.module.css';

// The longest training sequence that fits (fit.max_seq_len, searched up to
// 2^20 tokens), with the model's own context when the card allows more.
export function seqLenWords(n, result) {
  if (n === 0) return 'none: even 1 token is too long at this micro-batch';
  const words = `${n.toLocaleString('en-US')} tokens${n >= 1048576 ? ' or more' : ''} at this micro-batch`;
  const context = result?.model?.facts?.max_position_embeddings;
  return Number.isSafeInteger(context) && n > context
    ? `${words} (beyond the model's ${context.toLocaleString('en-US')}-token context)`
    : words;
}

/** The verdict on a result's fit: the core's (lib/verdict.js), the same everywhere. */
export const verdict = verdictOf;

// How the job is laid out over the GPUs: the layout's name, the group each
// shard is split over, dp × tp × pp × cp, and the degrees that split within
// them (expert parallel inside dp, virtual stages inside pp) when they do.
function LayoutFacts({ parallel }) {
  const split = `dp ${parallel.dp} × tp ${parallel.tp} × pp ${parallel.pp} × cp ${parallel.cp ?? 1}`;
  const extra = [];
  if (parallel.ep > 1) extra.push(`ep ${parallel.ep}`);
  if (parallel.vp > 1) extra.push(`vp ${parallel.vp}`);
  if (parallel.nodes > 1) extra.push(`${parallel.nodes} nodes × ${parallel.gpus_per_node} GPUs`);
  const hasExperts = Number.isSafeInteger(parallel.experts_per_rank);
  const hasNccl = Number.isSafeInteger(parallel.nccl_bytes);
  return (
    <div class={styles.layout} aria-label="Training layout" role="group">
      <p class={styles.layoutLine}>
        <strong>{parallel.layout}</strong> on {parallel.gpus} GPU{parallel.gpus === 1 ? '' : 's'}
        <span class={styles.split}>
          {' '}
          · shard group {parallel.shard_group} · {split}
          {extra.map((e) => ` · ${e}`).join('')}
        </span>
      </p>
      {(hasExperts || hasNccl) && (
        <dl class={styles.facts}>
          {hasExperts && (
            <div>
              <dt>Experts per GPU</dt>
              <dd data-experts={String(parallel.experts_per_rank)}>{parallel.experts_per_rank}</dd>
            </div>
          )}
          {hasNccl && (
            <div>
              <dt>NCCL buffers</dt>
              <dd title={bytesTitle(parallel.nccl_bytes)} data-bytes={String(parallel.nccl_bytes)}>
                {formatGiB(parallel.nccl_bytes)} GiB
              </dd>
            </div>
          )}
        </dl>
      )}
      {parallel.pp > 1 && (
        <dl class={styles.facts}>
          {[
            ['First pipeline stage peak', parallel.first_stage_peak_bytes],
            ['Last pipeline stage peak', parallel.last_stage_peak_bytes],
          ]
            .filter(([, bytes]) => Number.isSafeInteger(bytes))
            .map(([label, bytes]) => (
              <div key={label}>
                <dt>{label}</dt>
                <dd title={bytesTitle(bytes)} data-bytes={String(bytes)}>
                  {formatGiB(bytes)} GiB
                </dd>
              </div>
            ))}
        </dl>
      )}
    </div>
  );
}

export function PeakCard({ result }) {
  const fit = result.fit;
  const v = verdictOf(fit);
  const util = fit ? Math.min(1, fit.utilization ?? result.peak_bytes / fit.capacity_bytes) : 0;
  const phase = result.phases?.find((p) => p.key === result.peak_phase);
  const reserved = result.peak_reserved_bytes;
  return (
    <section class={`${styles.card} ${styles[v.tone]}`} aria-labelledby="peak-heading">
      <h2 id="peak-heading" class={styles.heading}>
        Peak memory per GPU
      </h2>
      <div class={styles.top}>
        <output
          class={styles.big}
          aria-label="Peak memory per GPU"
          data-bytes={String(result.peak_bytes)}
          title={bytesTitle(result.peak_bytes)}
        >
          {formatGiB(result.peak_bytes)}
          <span class={styles.unit}> GiB</span>
        </output>
        {fit && (
          <p class={styles.capacity}>
            of{' '}
            <span title={bytesTitle(fit.capacity_bytes)} data-bytes={String(fit.capacity_bytes)}>
              {formatGiB(fit.capacity_bytes)} GiB
            </span>{' '}
            usable on <strong>{fit.gpu}</strong>
          </p>
        )}
        <p class={styles.verdict} data-tone={v.tone} data-status={v.status}>
          {v.words}
          {fit && <span class={styles.util}> · {formatPercent(fit.utilization)} used</span>}
        </p>
      </div>
      {fit && (
        <div
          class={styles.meter}
          role="meter"
          aria-label="Share of the GPU's usable memory"
          aria-valuemin={0}
          aria-valuemax={100}
          aria-valuenow={Math.round((fit.utilization ?? 0) * 100)}
        >
          <div class={styles.fill} style={{ width: `${(util * 100).toFixed(2)}%` }} />
          {fit.headroom_applies !== false && (
            <div class={styles.headroom} title="80 % headroom line" />
          )}
        </div>
      )}
      <dl class={styles.facts}>
        {phase && (
          <div>
            <dt>Peak phase</dt>
            <dd>{phase.label}</dd>
          </div>
        )}
        {fit && Number.isSafeInteger(fit.max_micro_batch) && (
          <div>
            <dt>
              Largest micro-batch that fits <code>per_device_train_batch_size</code>
            </dt>
            <dd>
              {fit.max_micro_batch === 0
                ? 'none: even 1 is too large (see what would make it fit)'
                : fit.max_micro_batch}
            </dd>
          </div>
        )}
        {fit && Number.isSafeInteger(fit.max_seq_len) && (
          <div>
            <dt>
              Longest sequence that fits <code>max_seq_length</code>
            </dt>
            <dd>{seqLenWords(fit.max_seq_len, result)}</dd>
          </div>
        )}
        {Number.isFinite(result.peak_allocated_bytes) && (
          <div>
            <dt>
              Allocated by tensors <code>max_memory_allocated</code>
            </dt>
            <dd title={bytesTitle(result.peak_allocated_bytes)}>
              {formatGiB(result.peak_allocated_bytes)} GiB
            </dd>
          </div>
        )}
        {Number.isFinite(reserved) && (
          <div>
            <dt>
              Reserved by the allocator <code>max_memory_reserved</code>
            </dt>
            <dd title={bytesTitle(reserved)}>{formatGiB(reserved)} GiB</dd>
          </div>
        )}
      </dl>
      {result.parallel?.layout && <LayoutFacts parallel={result.parallel} />}
    </section>
  );
}
