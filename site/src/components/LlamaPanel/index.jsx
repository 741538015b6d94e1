// A llama.cpp engine's answers (llama.cpp, Ollama, LM Studio): what each GPU
// and the host hold, in the buffers llama.cpp's start-up log names, and the
// largest -ngl and longest context that fit the card.

import { bytesTitle, formatGiB, formatInt } from '../../lib/format.js';
import styles from '../ServingPanel/style.module.css';
import own from './style.module.css';

function gib(bytes) {
  return `${formatGiB(bytes)} GiB`;
}

function Cell({ bytes }) {
  return (
    <td data-bytes={String(bytes)} title={bytesTitle(bytes)}>
      {bytes > 0 ? gib(bytes) : '–'}
    </td>
  );
}

export function LlamaPanel({ infer }) {
  const names = { llama_cpp: 'llama.cpp', ollama: 'Ollama', lmstudio: 'LM Studio' };
  return (
    <section class={styles.card} aria-labelledby="llama-heading">
      <h2 id="llama-heading" class={styles.heading}>
        {names[infer.engine] ?? infer.engine}: memory by device
      </h2>
      <p class={styles.lead}>
        {formatInt(infer.gpu_layers)}/{formatInt(infer.layers_total)} layers on the GPU · --ctx-size{' '}
        {formatInt(infer.ctx_size)} ({formatInt(infer.parallel)} sequence
        {infer.parallel === 1 ? '' : 's'} of {formatInt(infer.n_ctx_seq)}) · flash attention{' '}
        {infer.flash_attn ? 'on' : 'off'}
      </p>
      <div class={own.scroll}>
        <table class={own.table} aria-label="llama.cpp buffers by device">
          <thead>
            <tr>
              <th scope="col">Device</th>
              <th scope="col">Weights</th>
              <th scope="col">KV cache</th>
              <th scope="col">Compute</th>
              <th scope="col">Output</th>
              <th scope="col">CUDA context</th>
              <th scope="col">Total</th>
            </tr>
          </thead>
          <tbody>
            {infer.devices.map((d) => (
              <tr key={d.device} data-device={d.device}>
                <th scope="row">{d.device === 'CPU' ? 'Host RAM' : d.device}</th>
                <Cell bytes={d.weights_bytes} />
                <Cell bytes={d.kv_bytes} />
                <Cell bytes={d.compute_bytes} />
                <Cell bytes={d.output_bytes} />
                <Cell bytes={d.context_bytes} />
                <Cell bytes={d.total_bytes} />
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <dl class={styles.stats}>
        <div class={styles.stat}>
          <dt>KV cache per token</dt>
          <dd data-bytes={String(infer.kv_bytes_per_token)}>
            {formatInt(infer.kv_bytes_per_token)} B
          </dd>
        </div>
        {Number.isFinite(infer.max_gpu_layers) && (
          <div class={styles.stat}>
            <dt>Largest -ngl that fits</dt>
            <dd data-count={String(infer.max_gpu_layers)}>
              {formatInt(infer.max_gpu_layers)} of {formatInt(infer.layers_total)}
            </dd>
          </div>
        )}
        {Number.isFinite(infer.max_ctx_size) && (
          <div class={styles.stat}>
            <dt>
              {infer.engine === 'ollama'
                ? 'Longest num_ctx that fits'
                : 'Longest --ctx-size that fits'}
            </dt>
            <dd data-count={String(infer.max_ctx_size)}>{formatInt(infer.max_ctx_size)} tokens</dd>
          </div>
        )}
      </dl>
    </section>
  );
}
