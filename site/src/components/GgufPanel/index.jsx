// The model box's GGUF tab: a Hub repository of GGUF files (bartowski/…-GGUF,
// unsloth/…-GGUF) or dropped .gguf files. Only headers are read. Each quant
// file gets the core's answers on the chosen card: GPU memory, host RAM, the
// largest -ngl and the longest context that fit; "Use" takes it as the model.

import { useEffect, useState } from 'preact/hooks';
import { gpuCatalog, model, settings } from '../../lib/state.js';
import { loadToken } from '../../lib/hub.js';
import {
  attachProjector,
  ggufListing,
  listGgufRepo,
  loadGgufFiles,
  reestimateGguf,
  useGguf,
} from '../../lib/gguf-actions.js';
import { bytesTitle, formatGiB, formatInt } from '../../lib/format.js';
import { TextField } from '../Field/index.jsx';
import box from '../ModelBox/style.module.css';
import own from './style.module.css';

const styles = { ...box, ...own };

function gib(bytes) {
  return Number.isFinite(bytes) ? `${formatGiB(bytes)} GiB` : '–';
}

function Answer({ row }) {
  const a = row.answer;
  if (row.error)
    return (
      <td colSpan={4} class={styles.error}>
        {row.error}
      </td>
    );
  if (!row.inventory || !a)
    return (
      <td colSpan={4} class={styles.muted}>
        {row.inventory ? 'estimating…' : 'reading header…'}
      </td>
    );
  if (a.error)
    return (
      <td colSpan={4} class={styles.error}>
        {a.error}
      </td>
    );
  return (
    <>
      <td data-bytes={a.peak_bytes} title={bytesTitle(a.peak_bytes)} data-verdict={a.verdict ?? ''}>
        {gib(a.peak_bytes)}
      </td>
      <td data-bytes={a.host_bytes} title={bytesTitle(a.host_bytes)}>
        {gib(a.host_bytes)}
      </td>
      <td data-count={a.max_gpu_layers ?? ''}>
        {a.max_gpu_layers === null ? '–' : `${a.max_gpu_layers} / ${a.layers_total}`}
      </td>
      <td data-count={a.max_ctx_size ?? ''}>
        {a.max_ctx_size === null ? '–' : formatInt(a.max_ctx_size)}
      </td>
    </>
  );
}

function Row({ row }) {
  const m = model.value;
  const name = row.name.split('/').pop();
  if (row.projector) {
    const on = Boolean(m?.mmproj && m.mmprojName === row.name);
    return (
      <tr data-file={name}>
        <th scope="row">{name}</th>
        <td colSpan={4} class={styles.muted}>
          vision projector (llama.cpp --mmproj), {gib(row.size)} file
        </td>
        <td>
          <label>
            <input
              type="checkbox"
              checked={on}
              disabled={!row.inventory}
              onChange={(e) => attachProjector(row, e.currentTarget.checked)}
            />{' '}
            attach
          </label>
        </td>
      </tr>
    );
  }
  const chosen = m?.source === 'gguf' && m.id.endsWith(row.name);
  return (
    <tr data-file={name} data-chosen={chosen ? '' : undefined}>
      <th scope="row">{name}</th>
      <Answer row={row} />
      <td>
        <button
          type="button"
          class={styles.use}
          disabled={!row.inventory}
          onClick={() => useGguf(row)}
        >
          {chosen ? 'In use' : 'Use'}
        </button>
      </td>
    </tr>
  );
}

export function GgufPanel() {
  const listing = ggufListing.value;
  const [id, setId] = useState(listing.source === 'hub' ? listing.id : '');
  const s = settings.value;
  const card =
    s.gpu.mode === 'custom' ? `${s.gpu.memory_gib} GiB` : s.gpu.name || gpuCatalog.value?.[0]?.name;
  // The answers follow the form and the card.
  useEffect(() => {
    if (listing.rows.some((r) => r.answer)) reestimateGguf();
  }, [s]);
  const onSubmit = (e) => {
    e.preventDefault();
    if (id.trim()) listGgufRepo(id, { token: loadToken() });
  };
  return (
    <div class={styles.stack}>
      <form class={styles.stack} onSubmit={onSubmit}>
        <TextField
          label="GGUF repository"
          name="gguf_repo"
          value={id}
          onChange={setId}
          placeholder="bartowski/Qwen2.5-7B-Instruct-GGUF"
          hint="Only each file's header is read (HTTP range requests): no weights are downloaded."
        />
        <div class={styles.row}>
          <button type="submit" class={styles.primary} disabled={!id.trim()}>
            List quant files
          </button>
          <label class={styles.secondary}>
            Open .gguf files…
            <input
              type="file"
              multiple
              accept=".gguf"
              class={styles.visuallyHidden}
              onChange={(e) =>
                e.currentTarget.files?.length && loadGgufFiles(e.currentTarget.files)
              }
            />
          </label>
          <span class={styles.muted}>
            or drop .gguf files on this box (read here, never uploaded).
          </span>
        </div>
      </form>
      {listing.state === 'loading' && <p role="status">{listing.message}</p>}
      {listing.state === 'error' && (
        <p role="alert" class={styles.error}>
          {listing.message}
        </p>
      )}
      {listing.rows.length > 0 && (
        <div class={styles.scroll}>
          <table class={styles.table} aria-label="GGUF files">
            <caption>
              On {card} with the form's engine settings (
              {s.infer.engine === 'ollama' ? 'num_ctx' : '--ctx-size'}{' '}
              {s.infer.engine === 'ollama'
                ? s.infer.context_len
                : s.infer.ctx_size || "the release's default"}
              )
            </caption>
            <thead>
              <tr>
                <th scope="col">File</th>
                <th scope="col">GPU</th>
                <th scope="col">Host RAM</th>
                <th scope="col" title="The largest --n-gpu-layers that fits">
                  Max -ngl
                </th>
                <th scope="col" title="The longest context that fits">
                  Max context
                </th>
                <th scope="col" />
              </tr>
            </thead>
            <tbody>
              {listing.rows.map((r) => (
                <Row key={r.name} row={r} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
