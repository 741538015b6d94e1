// The export box's body (SharePanel ExportBox, loaded when the box is first
// opened): the request as a framework's own file, written by the core
// (core/src/import/export.cpp, in vram_io.wasm), to copy or download.

import { useEffect, useState } from 'preact/hooks';
import { estimator, model } from '../../lib/state.js';
import { download } from './index.jsx';
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
 * The open export box's body (SharePanel ExportBox): the format, and the
 * core's file for `request` in it, to copy or download.
 */
export function ExportBody({ request, format, setFormat }) {
  const [copied, setCopied] = useState(false);
  // Mounted only while the box is open: an edit elsewhere makes one estimate call, not an export too.
  const [out, setOut] = useState(null);
  const vram = estimator.value;
  const modelId = model.value?.id;
  useEffect(() => {
    let live = true;
    exportOf(vram, request, format, modelId).then((o) => live && setOut(o));
    return () => {
      live = false;
    };
  }, [vram, request, format, modelId]);
  return (
    <>
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
    </>
  );
}
