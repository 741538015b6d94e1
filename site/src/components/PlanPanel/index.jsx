// The layout planner: every way the chosen framework can spread this training
// job over the form's GPUs, estimated and ranked by the core (vram.plan, the
// same search as `vram-probe plan`). "Apply" puts a layout into the form, so
// the page's estimate is then that layout's peak.

import { useId } from 'preact/hooks';
import {
  planIsCurrent,
  planOutcome,
  plannerFramework,
  planRequest,
  runPlan,
} from '../../lib/plan.js';
import { chosenGpuName, gpuCatalog, setSetting, settings } from '../../lib/state.js';
import { labelOf, PLAN_FRAMEWORKS } from '../../lib/vocabulary.js';
import { ErrorNotice } from '../ErrorNotice/index.jsx';
import { NumberField, SelectField } from '../Field/index.jsx';
import { Card } from '../Card/index.jsx';
import { lazyView } from '../Lazy/index.jsx';
import { PlanProgress } from './Progress.jsx';
import styles from './style.module.css';

// The table of layouts (table.jsx) is a chunk of its own (components/Lazy):
// it is on screen only after a search, which runs for a while in a Web
// Worker, so it loads when the search starts.
const Table = lazyView(() => import('./table.jsx'), 'PlanTable');

/** Runs the search, fetching the table's chunk meanwhile. */
function search() {
  Table.load();
  runPlan();
}

function tableFailed(error) {
  return (
    <ErrorNotice
      title="The layouts cannot be shown"
      error={{
        message: `Their table could not be loaded (${error.message}). Reload the page to try again.`,
      }}
    />
  );
}

function Showing() {
  return (
    <p class={styles.hint} role="status">
      Showing the layouts…
    </p>
  );
}

/** The card the search is for, in words, before a search names it. */
function gpuWords(s, catalog) {
  if (s.gpu.mode === 'custom') return `${s.gpu.memory_gib} GiB GPU`;
  return chosenGpuName(s, catalog);
}

export function PlanPanel() {
  const s = settings.value;
  const req = planRequest.value;
  const hintId = useId();
  const framework = plannerFramework(s);
  const hasGpu = Boolean(req?.gpu);
  const gpuLabel = hasGpu ? gpuWords(s, gpuCatalog.value) : 'GPU';
  const gpus = s.parallel.gpus;
  const o = planOutcome.value;
  const current = planIsCurrent.value;
  return (
    <Card
      id={`${hintId}-heading`}
      title="Find a layout"
      summary="Searches every way the framework can spread this job over the GPUs — tensor, pipeline, context and expert parallel times data parallel, its sharding, activation checkpointing, and CPU offload when nothing else fits — and estimates each."
    >
      <div class={styles.controls}>
        <SelectField
          label="Framework"
          name="--framework"
          value={framework}
          options={[
            {
              // The core's choice for the form's layout, once a search says it.
              value: '',
              label:
                o?.result && current && !framework
                  ? `auto: ${labelOf(PLAN_FRAMEWORKS, o.result.plan.framework)}`
                  : 'auto (from the form’s layout)',
            },
            ...PLAN_FRAMEWORKS,
          ]}
          onChange={(v) => setSetting('planner.framework', v)}
        />
        <NumberField
          label="Host RAM per node, GiB"
          name="--host-ram-gib"
          value={s.planner?.host_ram_gib ?? ''}
          min={1}
          max={1048576}
          optional
          hint="Checks CPU offload; empty: 2 × the node's GPU memory"
          onChange={(v) =>
            setSetting('planner.host_ram_gib', Number.isFinite(v) && v > 0 ? v : null)
          }
        />
        <button
          type="button"
          class={styles.run}
          disabled={!hasGpu}
          aria-describedby={hasGpu ? undefined : hintId}
          onClick={search}
        >
          Find layouts for {gpus} × {gpuLabel}
        </button>
      </div>
      <PlanProgress />
      {!hasGpu && (
        <p id={hintId} class={styles.hint}>
          Choose a GPU in the Hardware card first: the search needs the card's memory.
        </p>
      )}
      {o && !current && (
        <p class={styles.hint} role="status">
          The settings changed since the last search: find layouts again.
        </p>
      )}
      {o && current && o.error && (
        <ErrorNotice title="The planner could not use this input" error={o.error} />
      )}
      {o && current && o.result && (
        <Table.View
          fallback={<Showing />}
          failed={tableFailed}
          plan={o.result.plan}
          s={s}
          gpuLabel={gpuLabel}
        />
      )}
    </Card>
  );
}
