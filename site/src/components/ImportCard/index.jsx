// The import card: drop or choose a run's own configuration files (several at
// once: a recipe YAML, a DeepSpeed JSON, the model's config.json) or paste
// one; the core's import fills the form, and the card lists, per file, the
// keys used, the keys that change memory but were not understood, and the
// keys ignored as irrelevant to memory.

import { useState } from 'preact/hooks';
import { dropHandler } from '../../lib/drop.js';
import {
  clearImport,
  importFiles,
  importParsed,
  lastImport,
  parseConfigText,
} from '../../lib/import.js';
import { estimator } from '../../lib/state.js';
import styles from './style.module.css';

const KIND_WORDS = {
  axolotl: 'Axolotl recipe',
  llama_factory: 'LLaMA-Factory recipe',
  torchtune: 'torchtune recipe',
  litgpt: 'LitGPT config',
  trainer: 'TrainingArguments / SFTConfig',
  peft: 'PEFT adapter_config.json',
  bitsandbytes: 'bitsandbytes quantization_config',
  model_config: 'model config.json',
  deepspeed: 'DeepSpeed config',
  accelerate: 'accelerate config',
};

function value(v) {
  return v === undefined ? '' : JSON.stringify(v);
}

function FileReport({ f }) {
  return (
    <div class={styles.file} role="group" aria-label={`Keys of ${f.file}`}>
      <p class={styles.fileHead}>
        <strong>{f.file}</strong> <span class={styles.muted}>{KIND_WORDS[f.kind] ?? f.kind}</span>
      </p>
      <details open>
        <summary>Used ({f.used.length})</summary>
        <ul class={styles.keys}>
          {f.used.map((u) => (
            <li key={`${u.key}-${u.field ?? ''}`}>
              <code>{u.key}</code>
              {u.field && (
                <>
                  {' → '}
                  <code>{u.field}</code> = <code>{value(u.value)}</code>
                </>
              )}
              {u.note && <span class={styles.muted}> ({u.note})</span>}
            </li>
          ))}
        </ul>
      </details>
      {f.not_understood.length > 0 && (
        <details open>
          <summary class={styles.warn}>
            Changes memory, not understood ({f.not_understood.length})
          </summary>
          <ul class={styles.keys}>
            {f.not_understood.map((n) => (
              <li key={n.key}>
                <code>{n.key}</code>: {n.why}
              </li>
            ))}
          </ul>
        </details>
      )}
      <details>
        <summary>Ignored, irrelevant to memory ({f.ignored.length})</summary>
        <p class={styles.ignored}>
          {f.ignored.map((k, i) => (
            <span key={k}>
              {i > 0 && ', '}
              <code>{k}</code>
            </span>
          ))}
        </p>
      </details>
    </div>
  );
}

export function ImportCard() {
  const [dragging, setDragging] = useState(false);
  const [text, setText] = useState('');
  const imp = lastImport.value;
  const onDrop = dropHandler(
    setDragging,
    (_first, all) => importFiles(all),
    (t) => pasteText(t),
  );
  async function pasteText(t) {
    let content;
    try {
      content = await parseConfigText('pasted text', t);
    } catch (e) {
      lastImport.value = { error: { message: e.message } };
      return;
    }
    await importParsed(estimator.value, [{ file: 'pasted text', content }]);
  }
  return (
    <section class={styles.card} aria-labelledby="import-heading">
      <h2 id="import-heading" class={styles.heading}>
        Import your config
      </h2>
      <div
        class={`${styles.drop} ${dragging ? styles.dragging : ''}`}
        aria-label="Drop configuration files here"
        role="group"
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={onDrop}
      >
        <p class={styles.dropText}>
          Drop an Axolotl, LLaMA-Factory, torchtune or LitGPT recipe, a TrainingArguments JSON, an
          adapter_config.json, a config.json, a DeepSpeed JSON or an accelerate config here (several
          at once).
        </p>
        <div class={styles.row}>
          <label class={styles.button}>
            Choose files…
            <input
              type="file"
              multiple
              accept=".yaml,.yml,.json,application/json"
              class={styles.visuallyHidden}
              aria-label="Configuration files"
              onChange={(e) => {
                const files = e.currentTarget.files;
                if (files?.length) importFiles(files);
                e.currentTarget.value = '';
              }}
            />
          </label>
          {imp && (
            <button type="button" class={styles.button} onClick={clearImport}>
              Hide the report
            </button>
          )}
        </div>
        <details>
          <summary>Paste a file</summary>
          <textarea
            class={styles.paste}
            aria-label="Configuration file text"
            rows={6}
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
          />
          <button
            type="button"
            class={styles.button}
            onClick={() => pasteText(text)}
            disabled={!text.trim()}
          >
            Import the text
          </button>
        </details>
      </div>
      {imp?.error && (
        <p class={styles.error} role="alert">
          {imp.error.message}
        </p>
      )}
      {imp?.files && (
        <div aria-label="Import report" role="region">
          {imp.model && (
            <p class={styles.note}>
              Model <code>{imp.model.id}</code> ({imp.model.file} <code>{imp.model.key}</code>):{' '}
              {imp.model.preset
                ? `the bundled preset ${imp.model.preset}`
                : 'config.json from the Hub'}
            </p>
          )}
          {imp.files.map((f) => (
            <FileReport key={f.file} f={f} />
          ))}
        </div>
      )}
    </section>
  );
}
