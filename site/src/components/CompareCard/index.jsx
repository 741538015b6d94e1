// "Compare with a measurement": a vram-probe report (watch, overheads, nccl or
// device, written with --json / --out) dropped, chosen or pasted here is read
// (lib/probe-report.js) and set against the page's estimate (report.jsx,
// views.jsx; both loaded with the first report): a
// watch run's measured peak against peak_bytes, a measured CUDA context or
// NCCL figure as a one-click setting, the report's GPU against the page's.

import { useState } from 'preact/hooks';
import { loadProbeReport, probeReport, probeReportUnreadable } from '../../lib/probe-state.js';
import { dropHandler } from '../../lib/drop.js';
import { tooLargeMessage } from '../../lib/limits.js';
import { Card } from '../Card/index.jsx';
import { ErrorNotice } from '../ErrorNotice/index.jsx';
import { lazyView } from '../Lazy/index.jsx';
import styles from './style.module.css';

// The views of a report (report.jsx, views.jsx and the reader they use) are
// a chunk loaded with the first report, not with the page (lib/probe-state.js
// says why; components/Lazy).
const Report = lazyView(() => import('./report.jsx'), 'ReportView');

/** Reads a report, fetching the views' chunk alongside the reader's. */
function readReport(text, name) {
  Report.load();
  return loadProbeReport(text, name);
}

function readFile(file) {
  // The size first: a huge file is refused before it is read whole.
  const tooLarge = tooLargeMessage(file);
  if (tooLarge) {
    probeReportUnreadable(file.name, tooLarge);
    return;
  }
  file.text().then(
    (t) => readReport(t, file.name),
    (e) => probeReportUnreadable(file.name, e?.message ?? String(e)),
  );
}

function ReportInput({ compact }) {
  const [dragging, setDragging] = useState(false);
  const [text, setText] = useState('');
  const onDrop = dropHandler(setDragging, readFile, (t) => readReport(t, 'dropped text'));
  return (
    <div
      class={`${styles.drop} ${dragging ? styles.dragging : ''}`}
      aria-label="Drop a probe report here"
      role="group"
      onDragOver={(e) => {
        e.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={onDrop}
    >
      {!compact && (
        <p class={styles.dropText}>
          Drop a report written by <code>vram-probe watch --out report.json -- …</code>,{' '}
          <code>run --request req.json</code>, <code>overheads --json</code>,{' '}
          <code>nccl --json</code> or <code>device --json</code> here.
        </p>
      )}
      <div class={styles.row}>
        <label class={styles.button}>
          {compact ? 'Open another report…' : 'Choose a report file…'}
          <input
            type="file"
            accept=".json,application/json"
            class={styles.visuallyHidden}
            aria-label="Probe report file"
            onChange={(e) => {
              const file = e.currentTarget.files?.[0];
              if (file) readFile(file);
              e.currentTarget.value = '';
            }}
          />
        </label>
        <details class={styles.paste}>
          <summary>or paste it</summary>
          <form
            class={styles.pasteForm}
            onSubmit={(e) => {
              e.preventDefault();
              readReport(text).then((ok) => ok && setText(''));
            }}
          >
            <textarea
              class={styles.area}
              rows={5}
              spellcheck={false}
              aria-label="Probe report JSON"
              placeholder='{"schema": "vram-planner-probe/1", …}'
              value={text}
              onInput={(e) => setText(e.currentTarget.value)}
            />
            <button type="submit" class={styles.primary} disabled={!text.trim()}>
              Compare with the estimate
            </button>
          </form>
        </details>
      </div>
    </div>
  );
}

function reportFailed(error) {
  return (
    <div class={styles.report}>
      <ErrorNotice
        title="This report cannot be shown"
        error={{
          message: `The report's view could not be loaded (${error.message}). Reload the page to try again.`,
        }}
      />
    </div>
  );
}

function Reading() {
  return (
    <p class={styles.report} role="status">
      Reading the report…
    </p>
  );
}

/** `result`: the page's estimate, or null when the input has an error. */
export function CompareCard({ result }) {
  const state = probeReport.value;
  return (
    <Card
      id="compare-heading"
      title="Compare with a measurement"
      summary={
        state?.report
          ? undefined
          : 'Run the job under vram-probe on a GPU and drop its report here to see the estimate against what the GPU measured.'
      }
    >
      {state?.error && (
        <div class={styles.report}>
          <ErrorNotice
            title="This report cannot be read"
            error={state.error}
            field={state.error.path === 'report' ? '' : state.error.path}
          />
        </div>
      )}
      {state?.report && (
        <Report.View
          fallback={<Reading />}
          failed={reportFailed}
          name={state.name}
          report={state.report}
          result={result}
        />
      )}
      <ReportInput compact={Boolean(state?.report)} />
    </Card>
  );
}
