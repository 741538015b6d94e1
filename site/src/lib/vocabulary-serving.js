// The serving half of the page's words (lib/vocabulary.js has the rest):
// what only the inference fields of the Job card (components/WorkloadForm/
// inference.jsx, a chunk a first visit does not load) show.

// How the model is served: transformers' model.generate() with its dynamic
// cache growing to the context; vLLM, whose paged KV cache takes what
// gpu_memory_utilization leaves after the weights and a profiling run; SGLang,
// whose token pool takes mem_fraction_static of the GPU less the weights;
// llama.cpp and the apps over it. Keyed by vocabulary.js ENGINES' values.
export const ENGINE_HINTS = {
  hf: 'model.generate(): the KV cache grows to the full context of each sequence.',
  vllm: 'vLLM fills gpu_memory_utilization of the GPU: weights, a profile run, then KV-cache blocks.',
  sglang: 'SGLang gives its token pool mem_fraction_static of the free memory, less the weights.',
  llama_cpp:
    'llama-server / llama-cli: weights in their GGUF types, the last -ngl layers on the GPU, the KV cache and the compute buffers llama.cpp reserves at start-up.',
  ollama:
    "Ollama's llama.cpp runner: num_ctx × OLLAMA_NUM_PARALLEL KV cells, its defaults by version.",
  lmstudio:
    'LM Studio runs llama.cpp: Context Length, GPU Offload (layers), Flash Attention, KV cache types.',
  litgpt:
    'litgpt generate: the KV cache and a context² mask are allocated up front; with bitsandbytes 4-bit, lm_head is quantised too.',
};

// llama-quantize types (tools/quantize/quantize.cpp QUANT_OPTIONS) for a
// config served by a GGUF engine without a file.
export const GGUF_TYPES = [
  'Q4_K_M',
  'Q4_K_S',
  'Q5_K_M',
  'Q5_K_S',
  'Q6_K',
  'Q8_0',
  'Q3_K_M',
  'Q3_K_S',
  'Q3_K_L',
  'Q2_K',
  'IQ4_XS',
  'IQ4_NL',
  'IQ3_M',
  'IQ3_XXS',
  'IQ2_M',
  'IQ2_XXS',
  'IQ1_M',
  'Q4_0',
  'MXFP4_MOE',
  'BF16',
  'F16',
].map((value) => ({ value, label: value }));

// llama.cpp --cache-type-k / --cache-type-v.
export const CACHE_TYPES = [
  'f16',
  'q8_0',
  'q4_0',
  'bf16',
  'f32',
  'q4_1',
  'iq4_nl',
  'q5_0',
  'q5_1',
].map((value) => ({ value, label: value }));

// llama.cpp --flash-attn; '' = the release's default.
export const FLASH_ATTN = [
  { value: '', label: "the release's default" },
  { value: 'on', label: 'on' },
  { value: 'off', label: 'off' },
  { value: 'auto', label: 'auto' },
];
