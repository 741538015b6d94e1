// One probe report on the comparison card: what was measured and where, the
// view for its kind (views.jsx), and the probe's own notes. A chunk of its
// own, loaded with the first report (index.jsx, lib/probe-state.js).

import { clearProbeReport } from '../../lib/probe-state.js';
import { timeResult } from '../../lib/state.js';
import { TimingView } from './timing.jsx';
import { DeviceView, NcclView, OverheadsView, RunView, WatchView } from './views.jsx';
import styles from './style.module.css';

const KIND_WORDS = {
  watch: 'vram-probe watch',
  overheads: 'vram-probe overheads',
  nccl: 'vram-probe nccl',
  device: 'vram-probe device',
  run: 'vram-probe run',
};

export function ReportView({ name, report, result }) {
  const when = report.time ? report.time.replace('T', ' ').replace(/Z$/, ' UTC') : null;
  return (
    <div class={styles.report} aria-label="Probe report" role="group">
      <div class={styles.head}>
        <p class={styles.meta}>
          <strong>{KIND_WORDS[report.kind]}</strong> report <span class={styles.muted}>{name}</span>
          <span class={styles.muted}>
            {report.host && ` · host ${report.host}`}
            {when && ` · ${when}`}
            {report.version && ` · vram-probe ${report.version}`}
            {report.source === 'fake' && ' · fake memory source (a test report)'}
          </span>
        </p>
        <button type="button" class={styles.button} onClick={clearProbeReport}>
          Remove the report
        </button>
      </div>
      {report.kind === 'watch' && <WatchView report={report} result={result} />}
      {report.kind === 'run' && <RunView report={report} result={result} />}
      {report.kind === 'run' && report.watch && <WatchView report={report} result={result} />}
      {report.kind === 'watch' && (
        <TimingView
          timing={report.timing}
          estimate={timeResult.value?.gpu ? timeResult.value : null}
          from="the page's estimate of the form's job"
        />
      )}
      {report.kind === 'run' && (
        <TimingView
          timing={report.timing}
          estimate={report.run.estimate.time}
          from="the report's estimate of its request"
          cpu={report.run.device === 'cpu'}
        />
      )}
      {report.kind === 'overheads' && <OverheadsView report={report} result={result} />}
      {report.kind === 'nccl' && <NcclView report={report} result={result} />}
      {report.kind === 'device' && <DeviceView report={report} />}
      {report.errors.length > 0 && (
        <ul class={styles.notes} aria-label="Notes from the probe">
          {report.errors.map((e, i) => (
            <li key={i}>
              <code>{e.code}</code>: {e.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
