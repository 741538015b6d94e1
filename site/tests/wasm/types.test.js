// @vitest-environment node
//
// The hand-written declarations (wasm/vram.d.ts) compile and say what
// wasm/vram.test-d.ts expects of them: tsc type-checks that file, emitting
// nothing, and must report no error.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
const project = fileURLToPath(new URL('../../../wasm/tsconfig.json', import.meta.url));

describe('vram.d.ts', () => {
  it('type-checks the type-only test file without errors', () => {
    const run = spawnSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8' });
    expect(run.error).toBeUndefined();
    expect(run.stdout + run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});
