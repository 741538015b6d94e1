// The right-hand side: the estimate for the current state, or why there is
// none yet. Never a blank panel and never NaN: every state has words.

import { computed } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { currentHash } from '../../lib/actions.js';
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
import { ServingPanel } from '../ServingPanel/index.jsx';
import { lazyView } from '../Lazy/index.jsx';
import { SharePanel } from '../SharePanel/index.jsx';
import { StagesTable } from '../StagesTable/index.jsx';
import { Suggestions } from '../Suggestions/index.jsx';
import styles from './style.module.css';

// llama.cpp's buffers per device: a chunk of its own (no first visit serves GGUF).
const Llama = lazyView(() => import('../LlamaPanel/index.jsx'), 'LlamaPanel');

function shareLink() {
  if (typeof location === 'undefined') return currentHash();
  return `${location.origin}${location.pathname}${currentHash()}`;
}

// The first estimate's paint, for the benchmark (scripts/bench-page.mjs):
// Preact runs effects after the browser has painted the render.
let firstEstimateMarked = false;
function MarkFirstEstimate() {
  useEffect(() => {
    if (firstEstimateMarked) return;
    firstEstimateMarked = true;
    globalThis.performance?.mark?.('vram:first-estimate');
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
      {train && <Suggestions />}
      <Warnings warnings={r.warnings} />
      {r.parallel?.stages?.length > 0 && (
        <StagesTable
          stages={r.parallel.stages}
          busiest={r.parallel.busiest_stage}
          vp={r.parallel.vp}
        />
      )}
      {r.infer?.devices ? (
        <Llama.View infer={r.infer} />
      ) : (
        r.infer && <ServingPanel infer={r.infer} />
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
        {r.gpus?.length > 0 && <GpuTable gpus={r.gpus} current={r.fit?.gpu} />}
        {r.model && <ModelSummary model={r.model} name={m.id} />}
      </div>
      <Assumptions assumptions={r.assumptions} />
      <FrameworkNotes framework={r.framework} />
      <LiveSharePanel result={r} />
    </div>
  );
}
