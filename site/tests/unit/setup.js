// Every page test starts from an empty URL and a clean DOM; replaced fetch functions are
// removed after each test so the WASM loader and later tests see the real one.
import { cleanup } from '@testing-library/preact';
import { afterEach, vi } from 'vitest';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  window.history.replaceState(null, '', window.location.pathname);
  sessionStorage.clear();
});
