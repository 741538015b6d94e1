// The verdict's colour and words, the same on the sticky bar, the peak card,
// the GPU table and the planner (issue 18). The core decides the verdict once
// (core/src/fit.h verdict_of: `status` and `words` on fit, GPU rows, planner
// candidates and suggestions); this file only maps its status to a tone.

const TONES = {
  fits: 'good',
  tight: 'warn',
  fits_with_paging: 'warn',
  does_not_fit: 'bad',
  unsupported: 'bad',
};

// Words for a status when an object carries none (GPU table rows): the
// core's wording for the same status.
const WORDS = {
  fits: 'Fits',
  tight: 'Fits, with little headroom',
  fits_with_paging: 'Runs with paging',
  does_not_fit: 'Does not fit',
  unsupported: 'Not supported',
};

/**
 * {status, tone, words} for a fit, a GPU row, a planner candidate or a
 * suggestion; {status: 'none', tone: 'neutral'} without one.
 */
export function verdictOf(x) {
  if (!x) return { status: 'none', tone: 'neutral', words: 'No GPU chosen' };
  const status = x.status in TONES ? x.status : x.fits ? 'fits' : 'does_not_fit';
  return { status, tone: TONES[status], words: x.words || WORDS[status] };
}
