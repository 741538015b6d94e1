// The body of the comparison card for each kind of probe report: what the
// report measured, set against the page's estimate and its GPU.

import { bytesTitle, formatBytes, formatGiB, formatInt, GIB } from '../../lib/format.js';
import {
  CONTEXT_PRIOR_BYTES,
  compareWatch,
  matchCatalogGpu,
  measuredPeak,
  measuredSeries,
  runPhaseRows,
} from '../../lib/probe-report.js';
import { chosenGpuName, gpuCatalog, setSetting, settings } from '../../lib/state.js';
import { Sparkline } from './Sparkline.jsx';
import styles from './style.module.css';

/** Signed GiB with two decimals: "+1.21", "-0.40". */
export function signedGiB(bytes) {
  return `${bytes < 0 ? '-' : '+'}${formatGiB(Math.abs(bytes))}`;
}

/** A signed fraction as a percentage with one decimal: "-11.9 %". */
export function signedPercent(fraction) {
  if (!Number.isFinite(fraction)) return '–';
  return `${fraction < 0 ? '-' : '+'}${Math.abs(fraction * 100).toFixed(1)} %`;
}

function duration(ms) {
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

// One argument as a POSIX shell would need it typed.
function shellWord(a) {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

function exitWords(exit) {
  if (exit.signal !== null) return `ended by ${exit.signal_name ?? `signal ${exit.signal}`}`;
  if (exit.code === null) return 'ended (no exit status)';
  return exit.code === 0 ? 'exited with code 0' : `failed with exit code ${exit.code}`;
}

function Bytes({ bytes, unit = 'GiB' }) {
  if (bytes === null || bytes === undefined) return <span>not reported</span>;
  return (
    <span title={bytesTitle(bytes)} data-bytes={String(bytes)}>
      {unit === 'GiB' ? `${formatGiB(bytes)} GiB` : formatBytes(bytes)}
    </span>
  );
}

function chooseCatalogGpu(name) {
  settings.value = { ...settings.value, gpu: { ...settings.value.gpu, mode: 'catalog', name } };
}

function chooseCustomGpu(totalBytes) {
  const gib = Math.round((totalBytes / GIB) * 100) / 100;
  settings.value = {
    ...settings.value,
    gpu: { ...settings.value.gpu, mode: 'custom', memory_gib: gib },
  };
}

const HOW_WORDS = {
  name: 'by name',
  'name and memory': 'by name and memory total',
  memory: 'by memory total',
};

/**
 * The report's GPU against the page's: the same card, or which catalog card
 * it is and a button to choose it.
 */
function GpuMatch({ gpu }) {
  const s = settings.value;
  const catalog = gpuCatalog.value;
  if (!catalog.length) return null;
  const match = matchCatalogGpu(gpu, catalog);
  const custom = s.gpu.mode === 'custom';
  const pageGpu = custom ? `a custom GPU of ${s.gpu.memory_gib} GiB` : chosenGpuName(s, catalog);
  const reportName = gpu.name ?? `GPU ${gpu.index}`;
  const total = gpu.total;
  const same = custom
    ? total !== null && Math.abs(s.gpu.memory_gib * GIB - total) <= total * 0.01
    : Boolean(match?.name) && match.name === pageGpu;
  if (same) {
    return (
      <p class={styles.note}>
        Same GPU as the page's estimate: <strong>{custom ? pageGpu : match.name}</strong>
        {!custom && ` (matched ${HOW_WORDS[match.how]})`}.
      </p>
    );
  }
  const choices = match ? match.candidates : [];
  return (
    <div class={styles.mismatch} role="group" aria-label="GPU mismatch">
      <p class={styles.mismatchText}>
        The report ran on <strong>{reportName}</strong>
        {total !== null && ` (${formatGiB(total)} GiB)`}; the page estimates for{' '}
        <strong>{pageGpu}</strong>.{' '}
        {match?.name &&
          `In the catalog that is ${match.name}, matched ${HOW_WORDS[match.how]}${
            match.memory_differs ? ', though its memory differs' : ''
          }.`}
        {match && !match.name && `Catalog cards with that memory: ${choices.join(', ')}.`}
        {!match && 'No catalog GPU matches it.'}
      </p>
      <div class={styles.row}>
        {choices.map((name) => (
          <button
            key={name}
            type="button"
            class={styles.button}
            onClick={() => chooseCatalogGpu(name)}
          >
            Choose {name}
          </button>
        ))}
        {(!match || match.memory_differs) && total !== null && (
          <button type="button" class={styles.button} onClick={() => chooseCustomGpu(total)}>
            Use a custom GPU of {formatGiB(total)} GiB
          </button>
        )}
      </div>
    </div>
  );
}

const SOURCE_WORDS = {
  accounting: 'the driver’s high-water mark (NVML accounting)',
  process: 'the process peak (NVML usedGpuMemory)',
  device_growth: 'the device’s growth over the baseline (the driver did not list the process)',
};

// What the gap says and what to do about it, in a few sentences.
function Reading({ c, w }) {
  const contextSet = settings.value.overheads?.cuda_context_bytes ?? null;
  const contextWords =
    contextSet === null
      ? `the ${formatBytes(CONTEXT_PRIOR_BYTES)} prior`
      : `the measured ${formatBytes(contextSet)}`;
  const lines = [];
  const amount = `${formatGiB(Math.abs(c.gap))} GiB`;
  const mismatch =
    'The form probably does not describe this job: check the model, batch, sequence length, checkpointing, precision and GPUs.';
  if (c.tone === 'far_under') {
    lines.push(
      `The job used ${amount} more than estimated: far more than the CUDA context or allocator fragmentation explain.`,
      mismatch,
    );
  } else if (c.tone === 'far_over') {
    lines.push(
      `The estimate is ${amount} above the measurement: far more than polling misses.`,
      mismatch,
    );
  } else if (c.tone === 'close') {
    lines.push(
      `The estimate is within ${Math.abs(c.error * 100).toFixed(1)} % of the measurement.`,
    );
  } else if (c.tone === 'under') {
    lines.push(
      <>
        The job used {amount} more than estimated: beyond what the CUDA context explains. First
        check that the form describes the job (batch, sequence length, checkpointing, precision).
        Then it is the caching allocator’s fragmentation, which the estimate counts as none by
        default: <code>overheads.fragmentation</code>
        {c.fragmentation !== null && <> ≈ {c.fragmentation.toFixed(2)}</>} in a request (
        <code>vram-probe estimate --fragmentation</code>) adds it as a share of the allocated peak.
      </>,
    );
  } else if (c.tone === 'slightly_under') {
    lines.push(
      `The job used ${amount} more than estimated: within what the CUDA context's size on that machine and allocator fragmentation explain.`,
    );
  } else if (c.tone === 'over') {
    lines.push(`The estimate is ${amount} above the measurement.`);
    if (w.peak.accounting_max_bytes === null) {
      lines.push(
        <>
          Polling every {w.sampling.interval_ms} ms can miss a short peak; with accounting on (
          <code>nvidia-smi -am 1</code>) the report carries the driver’s exact high-water mark.
        </>,
      );
    }
  }
  if (c.tone === 'under' || c.tone === 'slightly_under' || c.tone === 'over') {
    lines.push(
      contextSet === null ? (
        <>
          The estimate counts the CUDA context as {contextWords}:{' '}
          <code>vram-probe overheads --json</code> on that machine measures it; drop its report here
          to use it.
        </>
      ) : (
        `The estimate counts the CUDA context as ${contextWords}.`
      ),
    );
  }
  if (w.exit.signal !== null || (w.exit.code !== null && w.exit.code !== 0)) {
    lines.push(
      `The command ${exitWords(w.exit)}: if it ran out of memory, the measurement stops where it failed, below what the job needs.`,
    );
  }
  return (
    <div class={styles.reading} aria-label="Reading of the gap" role="note">
      {lines.map((l, i) => (
        <p key={i}>{l}</p>
      ))}
    </div>
  );
}

export function WatchView({ report, result }) {
  const w = report.watch;
  const measured = measuredPeak(w);
  const c = result ? compareWatch(w, result) : null;
  const series = measuredSeries(w);
  const p = w.peak;
  return (
    <>
      <pre class={styles.command} aria-label="Command">
        <code>{w.command.map(shellWord).join(' ')}</code>
      </pre>
      <p class={styles.line}>
        Ran on device {w.device}: <strong>{w.gpu.name ?? 'unnamed GPU'}</strong>,{' '}
        <Bytes bytes={w.gpu.total} /> total; {exitWords(w.exit)}.
      </p>
      <GpuMatch gpu={w.gpu} />
      <dl class={styles.facts} role="group" aria-label="Measured">
        <div>
          <dt>
            Process peak <code>usedGpuMemory</code>
          </dt>
          <dd>
            {p.process_used_bytes === null ? (
              'not seen'
            ) : (
              <>
                <Bytes bytes={p.process_used_bytes} />
                {p.process_t_ms !== null && (
                  <span class={styles.muted}> at {duration(p.process_t_ms)}</span>
                )}
              </>
            )}
          </dd>
        </div>
        <div>
          <dt>Driver high-water mark (accounting)</dt>
          <dd>
            {p.accounting_max_bytes === null ? 'off' : <Bytes bytes={p.accounting_max_bytes} />}
          </dd>
        </div>
        <div>
          <dt>Device used peak</dt>
          <dd>
            <Bytes bytes={p.device_used_bytes} />
            {w.baseline.device_used_bytes !== null && (
              <span class={styles.muted}>
                {' '}
                (baseline <Bytes bytes={w.baseline.device_used_bytes} />)
              </span>
            )}
          </dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd>
            {duration(w.sampling.duration_ms)}
            <span class={styles.muted}>
              {' '}
              · {formatInt(w.sampling.samples)} samples every {w.sampling.interval_ms} ms
            </span>
          </dd>
        </div>
      </dl>
      {c ? (
        <>
          <dl class={styles.versus} role="group" aria-label="Estimate against measurement">
            <div>
              <dt>
                Estimate <code>peak_bytes</code> (device view)
              </dt>
              <dd>
                <Bytes bytes={c.estimate} />
              </dd>
            </div>
            <div>
              <dt>Measured: {SOURCE_WORDS[measured.source]}</dt>
              <dd>
                <Bytes bytes={c.measured.bytes} />
              </dd>
            </div>
            <div>
              <dt>Estimate − measured</dt>
              <dd class={styles[`gap_${c.tone}`]} data-bytes={String(c.gap)}>
                {signedGiB(c.gap)} GiB
                {c.error !== null && ` (${signedPercent(c.error)})`}
              </dd>
            </div>
          </dl>
          <Reading c={c} w={w} />
        </>
      ) : (
        <p class={styles.note}>
          There is no estimate to compare with: the page’s input has an error (see above).
        </p>
      )}
      {series.length >= 2 && (
        <Sparkline
          points={series}
          estimate={c ? c.estimate : null}
          label={`Measured memory over ${duration(series[series.length - 1].t_ms - series[0].t_ms)}: peak ${formatGiB(
            Math.max(...series.map((s) => s.bytes)),
          )} GiB${c ? `; the dashed line is the estimate, ${formatGiB(c.estimate)} GiB` : ''}`}
        />
      )}
    </>
  );
}

/** The estimate's component `key` in bytes, or null. */
function componentBytes(result, key) {
  const b = result?.components?.find((c) => c.key === key)?.bytes;
  return Number.isSafeInteger(b) ? b : null;
}

function UseButton({ path, bytes }) {
  const inUse = settings.value.overheads?.[path] === bytes;
  return (
    <div class={styles.row}>
      <button
        type="button"
        class={styles.primary}
        disabled={inUse}
        onClick={() => setSetting(`overheads.${path}`, bytes)}
      >
        Use as overheads.{path}
      </button>
      {inUse && <span class={styles.muted}>In use: the estimate counts this measurement.</span>}
    </div>
  );
}

export function OverheadsView({ report, result }) {
  const o = report.overheads;
  const now = componentBytes(result, 'cuda_context');
  const set = settings.value.overheads?.cuda_context_bytes ?? null;
  return (
    <>
      <p class={styles.line}>
        Device {o.device}: <strong>{o.gpu.name ?? 'unnamed GPU'}</strong>
        {report.driver_version && `, driver ${report.driver_version}`}
      </p>
      <GpuMatch gpu={o.gpu} />
      {o.cuda_context_bytes === null ? (
        <p class={styles.note}>
          The probe could not measure the CUDA context (method <code>{o.method}</code>); its notes
          below say why.
        </p>
      ) : (
        <>
          <dl class={styles.versus} role="group" aria-label="CUDA context">
            <div>
              <dt>
                Measured <code>cuda_context_bytes</code>
              </dt>
              <dd>
                <Bytes bytes={o.cuda_context_bytes} />{' '}
                <span class={styles.muted}>
                  ({formatBytes(o.cuda_context_bytes)}, by <code>{o.method}</code>)
                </span>
              </dd>
            </div>
            {now !== null && (
              <div>
                <dt>
                  The estimate’s CUDA context{' '}
                  {set === null ? '(the 512 MiB prior)' : '(measured, set on this page)'}
                </dt>
                <dd>
                  <Bytes bytes={now} /> <span class={styles.muted}>({formatBytes(now)})</span>
                </dd>
              </div>
            )}
          </dl>
          {o.cuda_module_loading !== null && (
            <p class={styles.note}>
              Measured with <code>CUDA_MODULE_LOADING={o.cuda_module_loading}</code>.
            </p>
          )}
          <UseButton path="cuda_context_bytes" bytes={o.cuda_context_bytes} />
        </>
      )}
    </>
  );
}

export function NcclView({ report, result }) {
  const n = report.nccl;
  const now = componentBytes(result, 'nccl');
  const set = settings.value.overheads?.nccl_bytes ?? null;
  const gpu = report.gpus.find((g) => g.index === n.devices[0]?.index) ?? report.gpus[0];
  const env = n.env.filter(([, v]) => v !== null);
  return (
    <>
      <p class={styles.line}>
        NCCL {n.nccl_version ?? '(version unknown)'} on {n.devices.length} GPU
        {n.devices.length === 1 ? '' : 's'} (<strong>{gpu.name ?? 'unnamed GPU'}</strong>), one
        all-reduce of {formatBytes(n.all_reduce_bytes)}, measured by <code>{n.method}</code>.
      </p>
      <GpuMatch gpu={gpu} />
      {n.devices.length > 0 && (
        <div class={styles.scroll}>
          <table class={styles.table} aria-label="NCCL memory per GPU">
            <thead>
              <tr>
                <th scope="col">GPU</th>
                <th scope="col" class={styles.num}>
                  At init
                </th>
                <th scope="col" class={styles.num}>
                  First all-reduce
                </th>
                <th scope="col" class={styles.num}>
                  NCCL total
                </th>
              </tr>
            </thead>
            <tbody>
              {n.devices.map((d) => (
                <tr key={d.index}>
                  <th scope="row">{d.index}</th>
                  <td class={styles.num}>
                    <Bytes bytes={d.init_bytes} unit="auto" />
                  </td>
                  <td class={styles.num}>
                    <Bytes bytes={d.first_collective_bytes} unit="auto" />
                  </td>
                  <td class={styles.num}>
                    <Bytes bytes={d.nccl_bytes} unit="auto" />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p class={styles.note}>
        {env.length
          ? `Set while measuring: ${env.map(([k, v]) => `${k}=${v}`).join(' ')}.`
          : 'No NCCL_* variable that changes the answer was set: NCCL’s defaults.'}
      </p>
      {n.nccl_bytes === null ? (
        <p class={styles.note}>
          The probe could not measure NCCL’s memory; its notes below say why.
        </p>
      ) : (
        <>
          <dl class={styles.versus} role="group" aria-label="NCCL memory">
            <div>
              <dt>
                Measured <code>nccl_bytes</code> (busiest GPU)
              </dt>
              <dd>
                <Bytes bytes={n.nccl_bytes} />{' '}
                <span class={styles.muted}>({formatBytes(n.nccl_bytes)})</span>
              </dd>
            </div>
            <div>
              <dt>The estimate’s NCCL memory</dt>
              <dd>
                {now === null ? (
                  'none: the page’s layout has no communicator (one GPU)'
                ) : (
                  <>
                    <Bytes bytes={now} />{' '}
                    <span class={styles.muted}>
                      ({formatBytes(now)},{' '}
                      {set === null ? 'modelled' : 'measured, set on this page'})
                    </span>
                  </>
                )}
              </dd>
            </div>
          </dl>
          <UseButton path="nccl_bytes" bytes={n.nccl_bytes} />
        </>
      )}
    </>
  );
}

export function DeviceView({ report }) {
  const s = settings.value;
  const catalog = gpuCatalog.value;
  const pageGpu = s.gpu.mode === 'custom' ? '' : chosenGpuName(s, catalog);
  return (
    <div class={styles.scroll}>
      <table class={styles.table} aria-label="GPUs in the report">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">GPU</th>
            <th scope="col" class={styles.num}>
              Total
            </th>
            <th scope="col" class={styles.num}>
              Used
            </th>
            <th scope="col">In the catalog</th>
          </tr>
        </thead>
        <tbody>
          {report.gpus.map((g) => {
            const match = matchCatalogGpu(g, catalog);
            return (
              <tr key={g.index}>
                <td>{g.index}</td>
                <th scope="row">{g.name ?? 'unnamed GPU'}</th>
                <td class={styles.num}>
                  <Bytes bytes={g.total} />
                </td>
                <td class={styles.num}>
                  <Bytes bytes={g.used} />
                </td>
                <td>
                  {match?.name ? (
                    match.name === pageGpu ? (
                      <span>
                        {match.name} <span class={styles.muted}>(the page’s GPU)</span>
                      </span>
                    ) : (
                      <button
                        type="button"
                        class={styles.button}
                        onClick={() => chooseCatalogGpu(match.name)}
                      >
                        Choose {match.name}
                      </button>
                    )
                  ) : g.total !== null ? (
                    <button
                      type="button"
                      class={styles.button}
                      onClick={() => chooseCustomGpu(g.total)}
                    >
                      Use a custom GPU of {formatGiB(g.total)} GiB
                    </button>
                  ) : (
                    <span class={styles.muted}>no match</span>
                  )}
                  {match?.name && <span class={styles.muted}> matched {HOW_WORDS[match.how]}</span>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

const PHASE_WORDS = {
  load: 'after load',
  forward: 'forward',
  loss: 'loss',
  backward: 'backward',
  optimizer_step: 'optimizer step',
};

/**
 * A `vram-probe run` report: the script trained the report's own request, so
 * its phases are set against the estimate of that request (which the report
 * carries, from the same core as this page), phase by phase.
 */
export function RunView({ report, result }) {
  const run = report.run;
  const rows = runPhaseRows(run);
  const t = run.request.train ?? {};
  const samePage = result?.peak_bytes === run.estimate.peak_bytes;
  const onCpu = run.device === 'cpu';
  const tensors = run.tensor_bytes;
  const parts = run.estimate.components;
  return (
    <div>
      <p class={styles.line}>
        The script trained {run.steps} step{run.steps === 1 ? '' : 's'} of{' '}
        <strong>
          {t.method ?? 'the request'}
          {t.micro_batch ? `, ${t.micro_batch} × ${t.seq_len ?? '?'} tokens` : ''}
        </strong>{' '}
        on the {onCpu ? 'CPU' : 'GPU'}
        {run.script && (
          <>
            {' '}
            (<code>{run.script}</code>)
          </>
        )}
        .{' '}
        {samePage
          ? "The page's form is this request: its estimate is the one below."
          : "The page's form describes another job; the table uses the report's estimate of its own request."}
      </p>
      {run.error && (
        <p class={styles.mismatchText} role="status">
          The script did not train: {run.error.message}
          {run.error.path && (
            <>
              {' '}
              (field <code>{run.error.path}</code>)
            </>
          )}
        </p>
      )}
      {onCpu && !run.error && (
        <p class={styles.muted}>
          A CPU run has no CUDA allocator, so there is nothing to measure per phase: the run checks
          that the script trains, and its tensors against the estimate.
        </p>
      )}
      <div class={styles.scroll}>
        <table class={styles.table} aria-label="Estimated and measured memory per phase">
          <thead>
            <tr>
              <th scope="col">Phase</th>
              <th scope="col" class={styles.num}>
                Estimated allocated / reserved
              </th>
              <th scope="col" class={styles.num}>
                Measured max allocated / reserved
              </th>
              <th scope="col" class={styles.num}>
                Gap
              </th>
              <th scope="col" class={styles.num}>
                Time
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.phase}>
                <th scope="row">{PHASE_WORDS[r.phase]}</th>
                <td class={styles.num}>
                  <Bytes bytes={r.estimated.allocated} unit="bytes" /> /{' '}
                  {r.estimated.reserved === null ? (
                    <span title="the estimate has no load phase: its weights">–</span>
                  ) : (
                    <Bytes bytes={r.estimated.reserved} unit="bytes" />
                  )}
                </td>
                <td class={styles.num}>
                  {r.measured.allocated === null && r.measured.reserved === null ? (
                    <span>not reported</span>
                  ) : (
                    <>
                      <Bytes bytes={r.measured.allocated} unit="bytes" /> /{' '}
                      <Bytes bytes={r.measured.reserved} unit="bytes" />
                    </>
                  )}
                </td>
                <td class={styles.num}>{r.error === null ? '–' : signedPercent(r.error)}</td>
                <td class={styles.num}>
                  {r.seconds === null ? '–' : `${(r.seconds * 1000).toFixed(0)} ms`}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {tensors && (
        <p class={styles.line} aria-label="Tensors at the end of the run">
          Tensors at the end: weights <Bytes bytes={tensors.weights} unit="bytes" /> (estimate{' '}
          <Bytes bytes={parts.weights ?? null} unit="bytes" />
          ), optimizer states <Bytes bytes={tensors.optimizer_states} unit="bytes" /> (estimate{' '}
          <Bytes bytes={parts.optimizer_states ?? null} unit="bytes" />
          ).
        </p>
      )}
      {run.notes.length > 0 && (
        <ul class={styles.notes} aria-label="Notes from the script">
          {run.notes.map((n, i) => (
            <li key={i}>{n}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
