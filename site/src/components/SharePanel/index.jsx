// Sharing and reproducing: the link that restores this page, the request JSON
// the estimator received, and the command that gives the same answer natively.

import { useEffect, useState } from 'preact/hooks';
import { estimator, model } from '../../lib/state.js';
import styles from './style.module.css';

/** The formats `vram-probe export --format` writes (core/src/import/export.cpp). */
export const EXPORT_FORMATS = [
  { value: 'deepspeed', label: 'DeepSpeed ds_config.json' },
  { value: 'accelerate', label: 'accelerate config YAML' },
  { value: 'trainer', label: 'TrainingArguments / SFTConfig JSON' },
  { value: 'axolotl', label: 'Axolotl YAML' },
  { value: 'llama_factory', label: 'LLaMA-Factory YAML' },
  { value: 'torchtune', label: 'torchtune recipe YAML' },
];

/**
 * The core's export of `request` in `format`: resolves to {file, text} or
 * {error}. Asynchronous: the export lives in the second WebAssembly module
 * (vram_io.wasm), loaded on the first export.
 */
export async function exportOf(vram, request, format, modelId) {
  if (!vram || !request) return { error: 'The estimator is loading.' };
  try {
    const exp = { format };
    if (modelId && modelId.includes('/')) exp.model_id = modelId;
    return await vram.exportConfig({ ...request, export: exp });
  } catch (e) {
    return { error: e.message };
  }
}

/**
 * Copy or download the framework file that reproduces `request` (the same
 * bytes as `vram-probe export --format F --request request.json`).
 */
export function ExportBox({
  request,
  initialFormat = 'deepspeed',
  label = 'Export as a framework config',
}) {
  const [format, setFormat] = useState(initialFormat);
  const [copied, setCopied] = useState(false);
  const [open, setOpen] = useState(false);
  // Computed only while open: an edit elsewhere makes one estimate call, not an export too.
  const [out, setOut] = useState(null);
  const vram = estimator.value;
  const modelId = model.value?.id;
  useEffect(() => {
    if (!open) {
      setOut(null);
      return undefined;
    }
    let live = true;
    exportOf(vram, request, format, modelId).then((o) => live && setOut(o));
    return () => {
      live = false;
    };
  }, [open, vram, request, format, modelId]);
  return (
    <details class={styles.details} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>{label}</summary>
      <div class={styles.row}>
        <label>
          Format{' '}
          <select
            value={format}
            onChange={(e) => setFormat(e.currentTarget.value)}
            aria-label="Export format"
          >
            {EXPORT_FORMATS.map((f) => (
              <option key={f.value} value={f.value}>
                {f.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      {!out ? null : out.error ? (
        <p class={styles.note} role="status">
          {out.error}
        </p>
      ) : (
        <>
          <pre class={styles.pre} aria-label={`Exported ${format} file`}>
            {out.text}
          </pre>
          <div class={styles.row}>
            <button
              type="button"
              class={styles.button}
              onClick={async () => {
                try {
                  await navigator.clipboard.writeText(out.text);
                  setCopied(true);
                  setTimeout(() => setCopied(false), 1500);
                } catch {
                  setCopied(false);
                }
              }}
            >
              {copied ? 'Copied' : `Copy ${out.file}`}
            </button>
            <button
              type="button"
              class={styles.button}
              onClick={() => download(out.file, out.text)}
            >
              Download {out.file}
            </button>
          </div>
          <p class={styles.note}>
            Natively: <code>vram-probe export --format {format} --request request.json</code>
          </p>
        </>
      )}
    </details>
  );
}

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function SharePanel({ request, result, link }) {
  const [copied, setCopied] = useState('');
  const requestText = JSON.stringify(request, null, 2);
  const copy = async (what, text) => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(what);
      setTimeout(() => setCopied(''), 1500);
    } catch {
      setCopied('');
    }
  };
  return (
    <section class={styles.card} aria-labelledby="share-heading">
      <h2 id="share-heading" class={styles.heading}>
        Share and reproduce
      </h2>
      <div class={styles.row}>
        <label class={styles.visuallyHidden} for="share-link">
          Link to this estimate
        </label>
        <input
          id="share-link"
          class={styles.link}
          readOnly
          value={link}
          onFocus={(e) => e.currentTarget.select()}
        />
        <button type="button" class={styles.button} onClick={() => copy('link', link)}>
          {copied === 'link' ? 'Copied' : 'Copy link'}
        </button>
      </div>
      <details class={styles.details}>
        <summary>Request JSON and command line</summary>
        <p class={styles.note}>
          The same request gives the same bytes natively: save it as <code>request.json</code> and
          run <code>vram-probe estimate --request request.json --json</code>.
        </p>
        <pre class={styles.pre} aria-label="Request JSON" data-testid="request-json">
          {requestText}
        </pre>
        <div class={styles.row}>
          <button type="button" class={styles.button} onClick={() => copy('request', requestText)}>
            {copied === 'request' ? 'Copied' : 'Copy request'}
          </button>
          <button
            type="button"
            class={styles.button}
            onClick={() => download('request.json', requestText)}
          >
            Download request.json
          </button>
          {result && (
            <button
              type="button"
              class={styles.button}
              onClick={() => download('result.json', JSON.stringify(result, null, 2))}
            >
              Download result.json
            </button>
          )}
        </div>
      </details>
      {request?.task === 'train' && <ExportBox request={request} />}
    </section>
  );
}
