// model.gguf -> gguf::Model (gguf/model.h). llama.cpp's rules are those of
// ggml-org/llama.cpp ec98e2002 (Dec 2025, vendored in ollama/ollama f63eea3d2
// under llama/llama.cpp/src): llama-arch.cpp for tensor layers,
// llama-model.cpp load_hparams and load_tensors for hyperparameters.
#include "gguf/model.h"

#include <algorithm>
#include <set>

#include "memory/bytes.h"
#include "vram/checkpoint.h"

namespace vram::gguf {

namespace {

const std::set<std::string> kInventoryKeys = {"file", "version", "metadata", "tensors"};
const std::set<std::string> kTensorKeys = {"name", "shape", "type", "offset", "shard"};

// llama-arch.cpp llm_arch_is_recurrent / llm_arch_is_hybrid: their memory is
// a recurrent state (llama-memory-recurrent.cpp), not modelled here.
const std::set<std::string> kRecurrent = {"mamba",  "mamba2",  "rwkv6",      "rwkv6qwen2",     "rwkv7",
                                          "arwkv7", "jamba",   "falcon-h1",  "plamo2",         "granitehybrid",
                                          "lfm2",   "lfm2moe", "nemotron_h", "nemotron_h_moe", "qwen3next"};
// Encoders (LLM_TENSOR_OUTPUT absent by design): no duplicated head.
const std::set<std::string> kEncoders = {"bert",         "nomic-bert",   "nomic-bert-moe", "neo-bert",
                                         "jina-bert-v2", "jina-bert-v3", "t5encoder",      "gemma-embedding"};

int64_t type_id(const json& t, const std::string& p) {
  if (t.is_number_integer()) return t.get<int64_t>();
  if (t.is_string()) {
    if (const GgmlType* g = ggml_type_named(t.get<std::string>())) return g->id;
  }
  fail(errc::kUnknownValue, p,
       p + " " + t.dump() + " is not a ggml type (an id such as 12 or a name such as \"q4_K\")");
}

Tensor read_tensor(const json& t, const std::string& p) {
  if (!t.is_object()) fail(errc::kWrongType, p, p + " must be an object {name, shape, type, offset}");
  for (const auto& [key, _] : t.items()) {
    if (!kTensorKeys.count(key)) fail(errc::kUnknownValue, p + "." + key, p + "." + key + " is not a tensor field");
  }
  JsonReader r(t, p);
  Tensor x;
  const auto name = r.str_opt("name");
  if (!name || name->empty() || name->size() > header_limits::kMaxNameLength) {
    fail(errc::kOutOfRange, r.child_path("name"), r.child_path("name") + " must be a name of 1 to 63 characters");
  }
  x.name = *name;
  if (!r.has("type")) fail(errc::kMissingField, r.child_path("type"), r.child_path("type") + " is required");
  x.type = ggml_type(type_id(t["type"], r.child_path("type")));
  if (x.type == nullptr) {
    fail(errc::kUnknownValue, r.child_path("type"), r.child_path("type") + " is not a type a GGUF file may hold");
  }
  const json* shape = r.get("shape");
  const std::string sp = r.child_path("shape");
  if (shape == nullptr || !shape->is_array() || shape->size() > header_limits::kMaxDims) {
    fail(errc::kWrongType, sp, sp + " must be an array of at most 4 dimensions (ggml order)");
  }
  x.elements = 1;
  for (const json& d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > checkpoint_limits::kMaxDim) {
      fail(errc::kOutOfRange, sp, sp + " must hold integers from 0 to 2^40 (tensor " + x.name + ")");
    }
    x.ne.push_back(d.get<int64_t>());
    x.elements = bytes::mul(x.elements, x.ne.back(), "a tensor's elements");
  }
  const int64_t ne0 = x.ne.empty() ? 1 : x.ne[0];
  if (ne0 % x.type->block != 0) {
    fail(errc::kInconsistent, sp,
         sp + ": rows of " + std::to_string(ne0) + " elements are not whole " + x.type->name + " blocks of " +
             std::to_string(x.type->block) + " (tensor " + x.name + ")");
  }
  x.bytes = bytes::mul(x.elements / x.type->block, x.type->bytes, "a tensor's bytes");
  x.offset = r.int_or("offset", -1, 0, limits::kMaxBytes);
  x.shard = static_cast<int32_t>(r.int_or("shard", 0, 0, 99999));
  x.part = part_of(x.name, x.layer);
  return x;
}

std::vector<Tensor> read_tensors(const JsonReader& inv) {
  const std::string tp = inv.child_path("tensors");
  const json* list = inv.get("tensors");
  if (list == nullptr) fail(errc::kMissingField, tp, tp + " is required: the file's [{name, shape, type}]");
  if (!list->is_array() || list->empty()) fail(errc::kWrongType, tp, tp + " must be a non-empty array");
  if (static_cast<int64_t>(list->size()) > checkpoint_limits::kMaxTensors) {
    fail(errc::kOutOfRange, tp, tp + " lists more than " + std::to_string(checkpoint_limits::kMaxTensors) + " tensors");
  }
  std::vector<Tensor> out;
  out.reserve(list->size());
  std::set<std::string> seen;
  int64_t total = 0;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string p = tp + "[" + std::to_string(i) + "]";
    Tensor t = read_tensor((*list)[i], p);
    if (!seen.insert(t.name).second) fail(errc::kInconsistent, p, p + ": tensor " + t.name + " is listed twice");
    total = bytes::add(total, t.bytes, "the file's tensors");
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

Part part_of(const std::string& name, int32_t& layer) {
  layer = -1;
  if (name.rfind("blk.", 0) == 0) {
    size_t i = 4;
    int64_t n = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && n < 1'000'000) n = n * 10 + (name[i++] - '0');
    if (i > 4 && i < name.size() && name[i] == '.') {
      layer = static_cast<int32_t>(n);
      return Part::kLayer;
    }
  }
  // LLM_TENSOR_LAYER_INPUT: token_embd, position_embd, token_types,
  // token_embd_norm, conv1d; everything else outside the blocks is output.
  for (const char* in : {"token_embd.", "position_embd.", "token_types.", "token_embd_norm.", "conv1d."}) {
    if (name.rfind(in, 0) == 0) return Part::kInput;
  }
  return Part::kOutput;
}

bool Hparams::has_kv(int64_t il) const {
  if (il < 0 || il >= n_layer || n_head_kv[static_cast<size_t>(il)] == 0) return false;
  return kv_from_start < 0 || il < kv_from_start;
}

bool Hparams::any_swa() const { return std::find(swa.begin(), swa.end(), true) != swa.end(); }

int64_t Model::total_bytes() const {
  int64_t s = 0;
  for (const auto& t : tensors) s += t.bytes;
  return s;
}

Model read_model(const json& inventory, const std::string& path) {
  if (!inventory.is_object()) fail(errc::kWrongType, path, path + " must be an object {file, metadata, tensors}");
  JsonReader inv(inventory, path);
  for (const auto& [key, _] : inventory.items()) {
    if (!kInventoryKeys.count(key)) {
      fail(errc::kUnknownValue, inv.child_path(key),
           inv.child_path(key) + " is not a field of " + path + " (file, version, metadata, tensors)");
    }
  }
  Model m;
  m.file = inv.str_or("file", "");
  if (m.file.size() > 4096) fail(errc::kOutOfRange, inv.child_path("file"), inv.child_path("file") + " is too long");
  if (inv.has("version")) inv.int_req("version", 2, 3);
  const json* meta = inv.get("metadata");
  if (meta == nullptr || !meta->is_object()) {
    fail(errc::kMissingField, inv.child_path("metadata"),
         inv.child_path("metadata") + " is required: the file's metadata keys (general.architecture, ...)");
  }
  m.tensors = read_tensors(inv);
  const JsonReader md(*meta, inv.child_path("metadata"));
  const auto arch = md.str_opt("general.architecture");
  if (!arch || arch->empty()) {
    fail(errc::kMissingField, md.child_path("general.architecture"),
         md.child_path("general.architecture") + " is required (llama.cpp reads the architecture from it)");
  }
  m.name = md.str_or("general.name", "");
  m.file_type = md.int_or("general.file_type", -1, 0, 1024);
  m.projector = *arch == "clip";
  if (m.projector) {
    m.hp.arch = *arch;
    return m;
  }
  if (kRecurrent.count(*arch)) {
    fail(errc::kUnsupported, md.child_path("general.architecture"),
         "general.architecture \"" + *arch +
             "\" keeps a recurrent state (llama.cpp llama-memory-recurrent.cpp), which the llama.cpp estimate does "
             "not model yet");
  }
  m.hp = read_hparams(*meta, m.tensors, md.path());
  m.has_output =
      std::any_of(m.tensors.begin(), m.tensors.end(), [](const Tensor& t) { return t.name == "output.weight"; });
  if (!m.has_output && kEncoders.count(*arch) == 0) {
    m.notes.push_back(
        "no output.weight: llama.cpp loads token_embd.weight a second time as the output layer "
        "(llama-model.cpp load_tensors, TENSOR_DUPLICATED), on the output layer's device");
  }
  for (auto& t : m.tensors) {
    t.skipped = m.hp.n_nextn > 0 && t.part == Part::kLayer && t.layer >= m.hp.n_layer - m.hp.n_nextn;
    if (t.part == Part::kLayer && t.layer >= m.hp.n_layer) {
      fail(errc::kInconsistent, path + ".tensors",
           path + ".tensors: " + t.name + " is past the " + std::to_string(m.hp.n_layer) + " blocks of " +
               md.child_path(m.hp.arch + ".block_count"));
    }
  }
  return m;
}

}  // namespace vram::gguf
