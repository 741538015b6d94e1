// How the planner runs (lib/plan.js, lib/planner.js): off the page's thread,
// with a "searching" state while it runs, and Cancel drops the search (in the
// browser it terminates the worker; here, without Worker, the answer is
// ignored).
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cancelPlan, clearPlan, planOutcome, planRunning, runPlan } from '../../src/lib/plan.js';
import { loadRealEstimator, openPage } from './helpers.jsx';

beforeAll(async () => {
  await loadRealEstimator();
});
beforeEach(() => clearPlan());

const LLAMA_8B_ON_A100 =
  '#m=preset:meta-llama/Llama-3.1-8B&task=train&method=full&gpus=8&gpu=A100%2040GB';

describe('running the planner', () => {
  it('is "searching" until the answer arrives, then keeps it', async () => {
    await openPage(LLAMA_8B_ON_A100);
    const search = runPlan();
    expect(planRunning.value).not.toBeNull();
    expect(planOutcome.value).toBeNull();
    const outcome = await search;
    expect(planRunning.value).toBeNull();
    expect(outcome.result.plan.candidates.length).toBeGreaterThan(0);
    expect(planOutcome.value).toBe(outcome);
  });

  it('Cancel drops the search in progress: no answer, no "searching"', async () => {
    await openPage(LLAMA_8B_ON_A100);
    const search = runPlan();
    cancelPlan();
    expect(planRunning.value).toBeNull();
    expect(await search).toBeNull();
    expect(planOutcome.value).toBeNull();
  });

  it('a newer search replaces an older one still running', async () => {
    await openPage(LLAMA_8B_ON_A100);
    const first = runPlan();
    const second = runPlan();
    expect(await first).toBeNull();
    expect((await second).result.plan.candidates.length).toBeGreaterThan(0);
  });
});
