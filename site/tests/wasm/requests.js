// Requests and paths shared by the WASM tests: the contract's example
// request (DESIGN.md §2) with overrides per case, the repository's fixtures
// and the native estimator.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, and the native estimator the parity tests compare against. */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const probe = process.env.VRAM_PROBE ?? join(repoRoot, 'build/bin/vram-probe');

/** tests/fixtures/models/<org>__<name>.json for a Hub id. */
export function modelFile(id) {
  return join(repoRoot, `tests/fixtures/models/${id.replace('/', '__')}.json`);
}

export function trainRequest(modelConfig, train = {}, extra = {}) {
  return {
    model: { config: modelConfig },
    task: 'train',
    train: {
      method: 'full',
      micro_batch: 1,
      seq_len: 2048,
      precision: 'bf16',
      optimizer: 'adamw_torch_fused',
      grad_checkpointing: false,
      attention: 'sdpa',
      ...train,
    },
    gpu: { name: 'H100 80GB' },
    ...extra,
  };
}
