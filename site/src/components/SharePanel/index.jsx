// Sharing and reproducing: the link that restores this page, the request JSON
// the estimator received, and the command that gives the same answer natively.

import { useState } from 'preact/hooks';
import { lazyView } from '../Lazy/index.jsx';
import styles from './style.module.css';

// The export's body (format, file, copy, download) is a chunk of its own
// (export.jsx, components/Lazy): it shows only once the box is opened, and the
// export itself runs in vram_io.wasm, which loads then too (issue 32: a first
// visit's script leaves both out).
const ExportBody = lazyView(() => import('./export.jsx'), 'ExportBody');

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
  const [open, setOpen] = useState(false);
  return (
    <details
      class={styles.details}
      onToggle={(e) => {
        if (e.currentTarget.open) ExportBody.load();
        setOpen(e.currentTarget.open);
      }}
    >
      <summary>{label}</summary>
      {open && (
        <ExportBody.View
          request={request}
          format={format}
          setFormat={setFormat}
          fallback={<p class={styles.note}>Loading the export…</p>}
          failed={(error) => (
            <p class={styles.note} role="status">
              The export could not be loaded ({error.message}). Reload the page to try again.
            </p>
          )}
        />
      )}
    </details>
  );
}

/**
 * The export format that fits `request` first: the framework's own recipe
 * (torchtune, Axolotl, LLaMA-Factory), a DeepSpeed config under ZeRO, an
 * accelerate config under FSDP, else TrainingArguments (a DeepSpeed config
 * of a job without ZeRO is the core's error, not a file).
 */
export function exportFormatFor(request) {
  const framework = String(request?.train?.framework ?? '').split('@')[0];
  if (['torchtune', 'axolotl', 'llama_factory'].includes(framework)) return framework;
  if ((request?.parallel?.zero ?? 0) > 0) return 'deepspeed';
  if (request?.parallel?.fsdp) return 'accelerate';
  return 'trainer';
}

/** Saves `text` as a file called `name` (the browser's download). */
export function download(name, text) {
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
      {request?.task === 'train' && (
        <ExportBox request={request} initialFormat={exportFormatFor(request)} />
      )}
    </section>
  );
}
