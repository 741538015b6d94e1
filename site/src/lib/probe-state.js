// The vram-probe report dropped on the page, as page state (a signal). The
// reader that checks a report (lib/probe-report.js) and the card's views of
// one (components/CompareCard/report.jsx) are 9 KiB gzip, 15 % of the
// page's first script, that no first visit needs: they are chunks of their
// own, imported with the first report (a dynamic import(): Vite splits it
// off and preloads its dependencies,
// https://vite.dev/guide/features#dynamic-import; the service worker
// precaches the chunks for offline use).

import { signal } from '@preact/signals';

/** What the page does not accept in a report: the message and the field's path. */
export class ReportError extends Error {
  constructor(path, message) {
    super(message);
    this.name = 'ReportError';
    this.path = path;
  }
}

/** The dropped report: {name, report} or {name, error}, or null. */
export const probeReport = signal(null);

// The newest read wins: a report read while an earlier one was still
// loading the reader, or removed meanwhile, is not overwritten by it.
let reading = 0;

/**
 * Reads report text into the page; resolves to true when it is a usable
 * report (false too when a newer read or a removal came first).
 */
export async function loadProbeReport(textIn, name = 'pasted report') {
  const ticket = ++reading;
  let parsed;
  try {
    const { parseProbeReport } = await import('./probe-report.js');
    parsed = parseProbeReport(textIn);
  } catch (e) {
    // The reader's chunk did not load (offline before the service worker had it).
    parsed = {
      error: new ReportError('report', `The report reader could not be loaded (${e.message}).`),
    };
  }
  if (ticket !== reading) return false;
  const { report, error } = parsed;
  probeReport.value = report ? { name, report } : { name, error };
  return Boolean(report);
}

/** A file the browser could not read (permissions, a folder): said in words. */
export function probeReportUnreadable(name, reason) {
  reading++;
  probeReport.value = {
    name,
    error: new ReportError('report', `The file ${name} could not be read (${reason}).`),
  };
}

export function clearProbeReport() {
  reading++;
  probeReport.value = null;
}
