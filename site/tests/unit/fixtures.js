// Real config.json files and their checkpoints' exact parameter counts
// (shared/fixtures/models.json: sum(p.numel() for p in model.parameters()),
// tied weights counted once).
import qwen3 from '../../../tests/fixtures/models/Qwen__Qwen3-0.6B.json';
import smollm2 from '../../../tests/fixtures/models/HuggingFaceTB__SmolLM2-135M.json';
import llama32 from '../../../tests/fixtures/models/meta-llama__Llama-3.2-1B.json';

export const MODELS = {
  'Qwen/Qwen3-0.6B': { config: qwen3, params: 596049920 },
  'HuggingFaceTB/SmolLM2-135M': { config: smollm2, params: 134515008 },
  'meta-llama/Llama-3.2-1B': { config: llama32, params: 1235814400 },
};

/** A Response like the Hub's, with the headers the page reads. */
export function hubResponse(status, body = '', headers = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return new Response(status === 204 ? null : text, {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}
