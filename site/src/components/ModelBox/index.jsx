// The model box: a bundled preset, an HF Hub id (config.json fetched from the
// browser, with an optional token for gated models), or a pasted / dropped
// config.json.

import { useEffect, useRef, useState } from 'preact/hooks';
import {
  choosePreset,
  chooseSize,
  loadConfigFile,
  loadHubModel,
  loadPastedConfig,
  setHubToken,
} from '../../lib/actions.js';
import { loadToken, saveToken } from '../../lib/hub.js';
import { dropHandler } from '../../lib/drop.js';
import { PRESET_IDS } from '../../lib/presets.js';
import { model, modelStatus, outcome } from '../../lib/state.js';
import { describePath } from '../../lib/vocabulary.js';
import { SelectField, TextField } from '../Field/index.jsx';
import { lazyView } from '../Lazy/index.jsx';
import styles from './style.module.css';

// The GGUF tab and its listing: a chunk of their own (@huggingface/gguf comes with them).
const Gguf = lazyView(() => import('../GgufPanel/index.jsx'), 'GgufPanel');

const TABS = [
  { key: 'preset', label: 'Preset' },
  { key: 'hf', label: 'Hugging Face Hub' },
  { key: 'gguf', label: 'GGUF' },
  { key: 'paste', label: 'Paste config.json' },
  { key: 'size', label: 'I only know the size' },
];

const SOURCE_WORDS = {
  preset: 'bundled preset (works offline)',
  hf: 'config.json from the Hugging Face Hub',
  gguf: "a GGUF file's header (llama.cpp, Ollama, LM Studio)",
  paste: 'your config.json',
  size: 'approximate: a Llama-3-shaped model of this size',
};

function PresetPanel() {
  const m = model.value;
  const value = m?.source === 'preset' ? m.id : '';
  const options = [
    ...(value ? [] : [{ value: '', label: 'Choose a preset…' }]),
    ...PRESET_IDS.map((id) => ({ value: id, label: id })),
  ];
  return (
    <SelectField
      label="Bundled preset"
      value={value}
      options={options}
      onChange={(id) => id && choosePreset(id)}
      hint="Real config.json files shipped with the page: no network needed."
    />
  );
}

function HubPanel() {
  const m = model.value;
  const [id, setId] = useState(m?.source === 'hf' ? m.id : '');
  const [token, setToken] = useState(() => {
    const t = loadToken();
    setHubToken(t);
    return t;
  });
  const onToken = (t) => {
    setToken(t);
    setHubToken(t);
    saveToken(t);
  };
  const onSubmit = (e) => {
    e.preventDefault();
    if (id.trim()) loadHubModel(id, { token });
  };
  return (
    <form class={styles.stack} onSubmit={onSubmit}>
      <TextField
        label="Model id"
        name="pretrained_model_name_or_path"
        value={id}
        onChange={setId}
        placeholder="meta-llama/Llama-3.2-1B"
        hint="organisation/model, optionally @revision; a huggingface.co link works too."
      />
      <TextField
        label="Access token for gated or private models"
        name="HF_TOKEN"
        type="password"
        value={token}
        onChange={onToken}
        placeholder="hf_…"
        autoComplete="off"
        hint="Optional. Sent only to huggingface.co, kept for this tab only (sessionStorage), never put in the link."
      />
      <div class={styles.row}>
        <button type="submit" class={styles.primary} disabled={!id.trim()}>
          Fetch config.json
        </button>
        {token && (
          <button type="button" class={styles.secondary} onClick={() => onToken('')}>
            Forget token
          </button>
        )}
      </div>
    </form>
  );
}

// A dropped .gguf goes to the GGUF tab (its header is read here, in the
// browser); anything else is a config.json.
function readFile(file, all = [file]) {
  if (file.name?.endsWith('.gguf')) {
    Gguf.load();
    import('../../lib/gguf-actions.js').then((m) => m.loadGgufFiles(all));
    return true;
  }
  loadConfigFile(file);
  return false;
}

// An error that answers what the user just did is brought to where they are
// looking: scrolled into view (on a phone the results, where the estimate's
// own notice is, sit far below the form) and focused, so a screen reader
// reads it too.
function useShowWhenSet(active) {
  const ref = useRef(null);
  useEffect(() => {
    const el = ref.current;
    if (!active || !el) return;
    el.focus({ preventScroll: true });
    el.scrollIntoView?.({ block: 'center', behavior: 'smooth' });
  }, [active]);
  return ref;
}

// The estimator's verdict on the config just pasted, beside the button that
// used it: the estimate's full notice (the role="alert" one) is in the
// results; this copy is focused, which is how a screen reader hears it.
function PastedConfigError({ stamp }) {
  const error = outcome.value?.error;
  const key = error ? `${stamp}:${error.message}` : '';
  const ref = useShowWhenSet(key);
  if (!error) return null;
  const where = describePath(error.path);
  return (
    <p ref={ref} tabIndex={-1} class={styles.error} data-testid="paste-error">
      The estimator could not use this config: {error.message}
      {where ? ` (field: ${where})` : ''}. <a href="#results">The details are with the results.</a>
    </p>
  );
}

function PastePanel() {
  // A pasted config (also one restored from a link) is shown for editing.
  const [text, setText] = useState(() => {
    const m = model.value;
    return m?.source === 'paste' && m.config ? JSON.stringify(m.config, null, 2) : '';
  });
  const id = 'paste-config';
  // When "Use this config" last took a config (0 = not yet).
  const [used, setUsed] = useState(0);
  const onSubmit = (e) => {
    e.preventDefault();
    if (loadPastedConfig(text)) setUsed(Date.now());
  };
  return (
    <form class={styles.stack} onSubmit={onSubmit}>
      <label class={styles.areaLabel} for={id}>
        config.json contents
      </label>
      <textarea
        id={id}
        class={styles.area}
        rows={7}
        spellcheck={false}
        value={text}
        placeholder={'{\n  "model_type": "llama",\n  "hidden_size": 2048,\n  …\n}'}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      <div class={styles.row}>
        <button type="submit" class={styles.primary} disabled={!text.trim()}>
          Use this config
        </button>
        <label class={styles.secondary}>
          Open a file…
          <input
            type="file"
            accept=".json,application/json"
            class={styles.visuallyHidden}
            onChange={(e) => e.currentTarget.files?.[0] && readFile(e.currentTarget.files[0])}
          />
        </label>
        <span class={styles.muted}>or drop a config.json anywhere on this box.</span>
      </div>
      {used > 0 && <PastedConfigError stamp={used} />}
    </form>
  );
}

function SizePanel() {
  const m = model.value;
  const [size, setSize] = useState(m?.source === 'size' ? m.size : '');
  const onSubmit = (e) => {
    e.preventDefault();
    chooseSize(size);
  };
  return (
    <form class={styles.stack} onSubmit={onSubmit}>
      <TextField
        label="Parameters"
        name="model_size"
        value={size}
        onChange={setSize}
        placeholder="7B"
        hint="7B, 1.5B, 350M (a bare number counts billions). The core sizes a Llama-3-shaped decoder of that many parameters; the result says it is approximate and how far off this was measured to be."
      />
      <div class={styles.row}>
        <button type="submit" class={styles.primary} disabled={!size.trim()}>
          Use this size
        </button>
      </div>
    </form>
  );
}

export function ModelBox() {
  const [tab, setTab] = useState(() => model.value?.source ?? 'preset');
  const [dragging, setDragging] = useState(false);
  const m = model.value;
  const status = modelStatus.value;
  // Follow the model's source when it changes (a restored link, a fetch).
  useEffect(() => {
    if (m?.source) setTab(m.source);
  }, [m?.source]);

  const onDrop = dropHandler(
    setDragging,
    (file, all) => readFile(file, all) && setTab('gguf'),
    (text) => loadPastedConfig(text),
  );
  const errorRef = useShowWhenSet(status.state === 'error' ? status : null);

  return (
    <section
      class={`${styles.box} ${dragging ? styles.dragging : ''}`}
      aria-labelledby="model-heading"
      onDragOver={(e) => {
        e.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={onDrop}
    >
      <h2 id="model-heading" class={styles.heading}>
        Model
      </h2>
      <div class={styles.tabs} role="tablist" aria-label="Where the model comes from">
        {TABS.map((t) => (
          <button
            key={t.key}
            type="button"
            role="tab"
            id={`model-tab-${t.key}`}
            aria-selected={tab === t.key ? 'true' : 'false'}
            aria-controls={`model-panel-${t.key}`}
            class={styles.tab}
            onClick={() => setTab(t.key)}
          >
            {t.label}
          </button>
        ))}
      </div>
      <div
        role="tabpanel"
        id={`model-panel-${tab}`}
        aria-labelledby={`model-tab-${tab}`}
        class={styles.panel}
      >
        {tab === 'preset' && <PresetPanel />}
        {tab === 'hf' && <HubPanel />}
        {tab === 'gguf' && <Gguf.View fallback={<p class={styles.muted}>Loading…</p>} />}
        {tab === 'paste' && <PastePanel />}
        {tab === 'size' && <SizePanel />}
      </div>
      {status.state === 'loading' && (
        <p role="status" class={styles.loading}>
          {status.message}
        </p>
      )}
      {status.state === 'error' && (
        <p ref={errorRef} tabIndex={-1} role="alert" class={styles.error}>
          {status.message}
        </p>
      )}
      {m && (
        <p class={styles.current}>
          Using <strong>{m.id}</strong>
          <span class={styles.muted}> · {SOURCE_WORDS[m.source]}</span>
          {m.mmproj && <span class={styles.muted}> + projector {m.mmprojName}</span>}
          {m.safetensors && (
            <span class={styles.muted}>
              {' '}
              + the checkpoint's tensor list ({m.safetensors.tensors.length} tensors)
            </span>
          )}
          {m.checkpointError && (
            <span class={styles.muted}> · no checkpoint cross-check ({m.checkpointError})</span>
          )}
          {!m.config && !m.size && !m.gguf && (
            <span class={styles.muted}> · waiting for config.json</span>
          )}
        </p>
      )}
    </section>
  );
}
