// Number formatting shared by every result view. Memory is shown in GiB (2^30
// bytes, what torch.cuda and nvidia-smi's MiB columns use), never GB.

export const GIB = 1024 ** 3;

/** Bytes as GiB with two decimals, e.g. 3.42. Non-finite input reads as a dash. */
export function formatGiB(bytes) {
  if (!Number.isFinite(bytes)) return '–';
  return (bytes / GIB).toFixed(2);
}

// One formatter for every call: Number.prototype.toLocaleString builds a new
// Intl.NumberFormat on each call (ECMA-402 §20.1.1: "Let numberFormat be ?
// Construct(%NumberFormat%, « locales, options »)"), which a result view with
// hundreds of byte titles paid on every render (a CPU profile of typing into
// the page: 16 ms of a 76 ms task). Same text for integers.
const INT_FORMAT = new Intl.NumberFormat('en-US');

/** Exact integer with thousands separators: 1,235,814,400. */
export function formatInt(n) {
  if (!Number.isFinite(n)) return '–';
  return INT_FORMAT.format(Math.round(n));
}

/** Short parameter count: 1.24 B, 135 M, 7.6 K. */
export function formatParamsShort(n) {
  if (!Number.isFinite(n)) return '–';
  const units = [
    [1e12, 'T'],
    [1e9, 'B'],
    [1e6, 'M'],
    [1e3, 'K'],
  ];
  for (const [scale, unit] of units) {
    if (n >= scale) return `${(n / scale).toPrecision(3)} ${unit}`;
  }
  return String(n);
}

/** A fraction (0.43) as a percentage with one decimal: 43.0 %. */
export function formatPercent(fraction) {
  if (!Number.isFinite(fraction)) return '–';
  return `${(fraction * 100).toFixed(1)} %`;
}

/** Exact bytes for titles and tooltips: "3,674,210,304 bytes". */
export function bytesTitle(bytes) {
  return `${formatInt(bytes)} bytes`;
}

/**
 * Bytes in the largest binary unit that keeps a whole part: 131072 -> "128 KiB",
 * 70272 -> "68.63 KiB", 512 -> "512 B". Up to two decimals, trailing zeros dropped.
 */
export function formatBytes(bytes) {
  if (!Number.isFinite(bytes)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = bytes;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${Number(v.toFixed(2))} ${units[i]}`;
}

/** The UTF-8 length of a string in bytes, without encoding it. */
export function utf8Length(text) {
  const s = String(text ?? '');
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** A figure with three significant digits, thousands separated: 0.0123, 4.56, 78.9, 1,230. */
export function formatSig(v) {
  if (!Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  if (a >= 1000) return formatInt(v);
  if (a === 0) return '0';
  return String(Number(v.toPrecision(3)));
}

/**
 * A range of the time model ({low, high}, core/src/speed): "1.2–1.6", the two
 * ends in order whichever is larger; one figure when they round alike.
 */
export function formatRange(r, scale = 1) {
  if (!r || !Number.isFinite(r.low) || !Number.isFinite(r.high)) return '–';
  const a = formatSig(Math.min(r.low, r.high) * scale);
  const b = formatSig(Math.max(r.low, r.high) * scale);
  return a === b ? a : `${a}–${b}`;
}

/** Seconds as the clearest unit: "310–420 ms", "1.2–1.6 s", "2.5–3.1 h", "3.2–4.0 days". */
export function formatDuration(r) {
  if (!r) return '–';
  const top = Math.max(r.low, r.high);
  if (top >= 3 * 86400) return `${formatRange(r, 1 / 86400)} days`;
  if (top >= 3 * 3600) return `${formatRange(r, 1 / 3600)} h`;
  if (top >= 180) return `${formatRange(r, 1 / 60)} min`;
  if (top >= 1) return `${formatRange(r)} s`;
  return `${formatRange(r, 1000)} ms`;
}
