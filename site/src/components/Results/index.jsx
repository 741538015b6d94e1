// The right-hand side: the estimate for the current state, or why there is
// none yet. Never a blank panel and never NaN: every state has words.

import { computed } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { currentHash } from '../../lib/actions.js';
import { registerServiceWorker } from '../../lib/service-worker.js';
import {
  estimator,
  estimating,
  estimatorLoadError,
  model,
  modelStatus,
  outcome,
  request,
  settings,
} from '../../lib/state.js';
import { BreakdownTable } from '../BreakdownTable/index.jsx';
import { CompareCard } from '../CompareCard/index.jsx';
import { ErrorNotice } from '../ErrorNotice/index.jsx';
import { GpuTable } from '../GpuTable/index.jsx';
import { ModelSummary } from '../ModelSummary/index.jsx';
import { Assumptions, FrameworkNotes, Warnings } from '../Notes/index.jsx';
import { PeakCard } from '../PeakCard/index.jsx';
import { PhaseTimeline } from '../PhaseTimeline/index.jsx';
import { PinCompare } from '../PinCompare/index.jsx';
import { PlanPanel } from '../PlanPanel/index.jsx';
import { lazyView } from '../Lazy/index.jsx';
import { SharePanel } from '../SharePanel/index.jsx';
import { TimeSection } from '../TimeCard/index.jsx';
import styles from './style.module.css';

// Chunks of their own, loaded where they are first shown (no first visit's
// first estimate shows them: the default preset trains on one GPU and fits):
// llama.cpp's buffers per device, the serving panel, the pipeline stages, and
// the suggestions with their search (lib/suggest.js, which starts searching
// once loaded, for a training job that does not fit within the headroom rule).
const Llama = lazyView(() => import('../LlamaPanel/index.jsx'), 'LlamaPanel');
const Serving = lazyView(() => import('../ServingPanel/index.jsx'), 'ServingPanel');
const Stages = lazyView(() => import('../StagesTable/index.jsx'), 'StagesTable');
const Suggest = lazyView(() => import('../Suggestions/index.jsx'), 'Suggestions');

function shareLink() {
  if (typeof location === 'undefined') return currentHash();
  return `${location.origin}${location.pathname}${currentHash()}`;
}

// The first estimate's paint, for the benchmark (scripts/bench-page.mjs):
// Preact runs effects after the browser has painted the render. The service
// worker registers then (lib/service-worker.js).
let firstEstimateMarked = false;
function MarkFirstEstimate() {
  useEffect(() => {
    if (firstEstimateMarked) return;
    firstEstimateMarked = true;
    globalThis.performance?.mark?.('vram:first-estimate');
    // The service worker's precache starts now, after the first estimate.
    registerServiceWorker();
  }, []);
  return null;
}

const busy = computed(() => (estimating.value ? 'true' : 'false'));
// Read through computed signals, so that a keystroke (a new settings object)
// re-renders the results only when the task changes, not on every edit: the
// results themselves change when the worker's answer arrives.
const training = computed(() => settings.value.task === 'train');

/** The share card, reading the request and link itself: a keystroke re-renders it alone. */
function LiveSharePanel({ result }) {
  return <SharePanel request={request.value} result={result} link={shareLink()} />;
}

function Waiting({ children }) {
  return (
    <div class={styles.waiting} role="status">
      <span class={styles.spinner} aria-hidden="true" />
      {children}
    </div>
  );
}

export function Results() {
  if (estimatorLoadError.value) {
    return <ErrorNotice title="The estimator did not load" error={estimatorLoadError.value} />;
  }
  const m = model.value;
  if (!m?.config && !m?.size && !m?.gguf) {
    if (modelStatus.value.state === 'error') {
      return (
        <ErrorNotice
          title="No model loaded"
          error={{
            message: `${modelStatus.value.message} Pick a bundled preset to continue offline.`,
          }}
        />
      );
    }
    return <Waiting>Waiting for the model's config.json…</Waiting>;
  }
  if (!estimator.value) return <Waiting>Loading the estimator (WebAssembly)…</Waiting>;
  const o = outcome.value;
  if (!o) return <Waiting>Estimating…</Waiting>;
  // The planner is for training; it also helps when the form's layout is the error.
  const train = training.value;
  if (o.error) {
    return (
      <div class={styles.stack}>
        <ErrorNotice error={o.error} />
        {train && <PlanPanel />}
        <CompareCard result={null} />
        <LiveSharePanel result={null} />
      </div>
    );
  }
  const r = o.result;
  // aria-busy while the worker computes the estimate of a newer request (the
  // last one stays on screen meanwhile): the signal is bound to the attribute
  // (@preact/signals), so the flag does not re-render the results.
  return (
    <div class={styles.stack} aria-live="polite" aria-busy={busy}>
      <MarkFirstEstimate />
      <PeakCard result={r} />
      <TimeSection />
      {train && r.fit && r.fit.status !== 'fits' && <Suggest.View />}
      <Warnings warnings={r.warnings} />
      {r.parallel?.stages?.length > 0 && (
        <Stages.View
          stages={r.parallel.stages}
          busiest={r.parallel.busiest_stage}
          vp={r.parallel.vp}
        />
      )}
      {r.infer?.devices ? (
        <Llama.View infer={r.infer} />
      ) : (
        r.infer && <Serving.View infer={r.infer} />
      )}
      <PinCompare result={r} />
      <CompareCard result={r} />
      {train && <PlanPanel />}
      {r.phases?.length > 0 && (
        <PhaseTimeline
          phases={r.phases}
          peakPhase={r.peak_phase}
          capacityBytes={r.fit?.capacity_bytes}
          components={r.components}
        />
      )}
      {r.components?.length > 0 && (
        <BreakdownTable
          components={r.components}
          peakBytes={r.peak_bytes}
          peakParts={r.phases?.find((p) => p.key === r.peak_phase)?.parts}
        />
      )}
      <div class={styles.pair}>
        {r.gpus?.length > 0 && <GpuTable gpus={r.gpus} current={r.fit?.gpu} train={train} />}
        {r.model && <ModelSummary model={r.model} name={m.id} />}
      </div>
      <Assumptions assumptions={r.assumptions} />
      <FrameworkNotes framework={r.framework} />
      <LiveSharePanel result={r} />
    </div>
  );
}
