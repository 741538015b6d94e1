// Private: llama.cpp as an inference engine (issue 30), with Ollama and LM
// Studio as presets of it.
//
// What llama.cpp allocates, device by device: the weights tensor by tensor in
// their ggml types (a GGUF file's own list, or a llama-quantize preset of an
// HF config), on the GPU for the last -ngl blocks and the output layer past
// them (llama-model.cpp load_tensors); the KV cache of each layer on its
// layer's device; the host output buffer; the compute buffers ggml reserves
// for the worst-case graph (infer/llama_cpp_graph.h); the CUDA context. The
// GPU's view is a memory::Timeline of those tensors (load, prefill, decode).
#pragma once

#include "vram/json_reader.h"
#include "vram/request.h"
#include "vram/result.h"

namespace vram::infer::llama_cpp {

Result<Estimate> estimate(const Request& req);

// The answers on a card of `capacity` usable bytes: the largest -ngl and the
// longest context that fit (facts max_gpu_layers, max_ctx_size).
void fit(const Request& req, int64_t capacity, Estimate& e);

// The result's infer.devices (one object per DeviceUse).
json devices_json(const Estimate& e);

}  // namespace vram::infer::llama_cpp
