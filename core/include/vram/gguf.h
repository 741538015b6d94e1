// GGUF files and ggml tensor types (issue 30).
//
// A GGUF file (ggml-org/ggml docs/gguf.md; src/gguf.cpp gguf_init_from_reader)
// is a header — magic "GGUF", version, tensor and key/value counts, the
// metadata key/values, one info per tensor (name, dimensions, ggml type,
// offset) — then the aligned tensor data. The CLI reads a local file's header
// with read_header() (the weights are never read); the page reads a Hub
// file's with @huggingface/gguf. Both hand the core the same inventory as the
// request's `model.gguf` (docs/schema.md):
//
//   {"file": "Qwen2.5-7B-Instruct-Q4_K_M.gguf", "version": 3, "alignment": 32,
//    "metadata": {"general.architecture": "qwen2", "qwen2.block_count": 28, ...},
//    "tensors": [{"name": "token_embd.weight", "shape": [3584, 152064],
//                 "type": 12, "offset": 0}, ...]}
//
// `shape` is ggml's order (ne0 first: a Linear weight is [in, out]), `type`
// the ggml_type id, `offset` the tensor's offset in the data section.
// `metadata` keeps what an estimate can use (metadata_kept below).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vram/json_reader.h"
#include "vram/model.h"
#include "vram/status.h"

namespace vram::gguf {

// One ggml tensor type: ggml/include/ggml.h `enum ggml_type` (the id a GGUF
// tensor info stores) and ggml/src/ggml.c `type_traits[]` (.type_name,
// .blck_size, .type_size = sizeof(block_x), whose sizes ggml-common.h
// static_asserts), ggml-org/ggml d99724f2. A tensor of n elements takes
// n / block * bytes bytes (ggml_nbytes); its rows must hold whole blocks.
struct GgmlType {
  int id = 0;
  const char* name = "";  // ggml's type_name: "f32", "q4_K", "iq4_xs"
  int64_t block = 1;      // elements per block
  int64_t bytes = 0;      // bytes per block
  bool quantized = false;
};

// The type with ggml_type id `id`; nullptr for an id no GGUF may hold (the
// removed Q4_2/Q4_3 and Q4_0_4_4.. / IQ4_NL_4_4.. ids, or out of range).
const GgmlType* ggml_type(int64_t id);
// By name, case-insensitive ("Q4_K", "q4_k", "F16"); nullptr if unknown.
const GgmlType* ggml_type_named(std::string_view name);
// Every type, in id order.
const std::vector<GgmlType>& ggml_types();

// Limits of the header reader, checked before anything is allocated.
namespace header_limits {
// @huggingface/gguf stops at HTTP_TOTAL_MAX_SIZE = 50 MB of header
// (huggingface.js packages/gguf/src/gguf.ts, fe42e680): the page cannot read a
// longer one, so the CLI refuses the same.
inline constexpr uint64_t kMaxHeaderBytes = 50'000'000;
// ggml/include/ggml.h GGML_MAX_DIMS and GGML_MAX_NAME: gguf_init_from_reader
// refuses more dimensions or a name of GGML_MAX_NAME characters or more.
inline constexpr uint32_t kMaxDims = 4;
inline constexpr size_t kMaxNameLength = 63;
}  // namespace header_limits

// What the header reader reads from: a local file (the CLI) or a buffer (the
// tests and the fuzzer).
class Source {
 public:
  virtual ~Source() = default;
  // The file's size in bytes.
  virtual uint64_t size() const = 0;
  // Copies bytes [offset, offset + n) into dst; false when they are not there.
  virtual bool read(uint64_t offset, void* dst, size_t n) = 0;
};

// The inventory (above) of the GGUF whose bytes `src` holds; `file` names it
// in the inventory and in errors. Checks what ggml's own reader checks
// (magic, version 2 or 3, no duplicate keys or tensor names, known value and
// tensor types, at most 4 dimensions, non-negative dimensions whose product
// fits, rows of whole blocks, a power-of-two general.alignment, offsets in
// order) and that the data section fits the file. Errors are bad_json at
// "model.gguf" naming the file, the byte offset and what is wrong.
Result<json> read_header(Source& src, const std::string& file);

// The metadata rule both front ends apply: a key is kept unless it starts
// with "tokenizer." (the vocabulary: megabytes, and the token embedding's
// shape already says its size); a value is kept when it is a bool, a finite
// number (integers within ±2^53), a string of at most 1024 bytes, or an array
// of at most 65536 bools or numbers (per-layer head counts, SWA patterns).
inline constexpr size_t kMaxKeptString = 1024;
inline constexpr size_t kMaxKeptArray = 65536;

// A request's `model.gguf` (at `path`) -> the ModelSpec every estimate
// reads: the GGUF tensor list built into a model as a safetensors list is
// (vram/checkpoint.h), carrying the file's Model for the llama.cpp engine
// (spec.gguf).
Result<ModelSpec> model_from_gguf(const json& inventory, const std::string& path);

// read_header over the bytes of `bytes` as the text of an answer: the
// inventory, or {"error": ...} (the libFuzzer target's entry point).
std::string header_json(const std::string& bytes);

}  // namespace vram::gguf
