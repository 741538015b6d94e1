// model.safetensors: a checkpoint's tensor list -> exact parameter and
// weight-bytes inventory (vram/checkpoint.h).
#include "checkpoint/inventory.h"

#include <algorithm>
#include <map>
#include <set>

#include "checkpoint/names.h"
#include "vram/checkpoint.h"

namespace vram {

int dtype_bits(const std::string& d) {
  // safetensors/src/tensor.rs Dtype::bitsize.
  if (d == "BOOL" || d == "U8" || d == "I8" || d == "F8_E5M2" || d == "F8_E4M3" || d == "F8_E8M0") return 8;
  if (d == "I16" || d == "U16" || d == "F16" || d == "BF16") return 16;
  if (d == "I32" || d == "U32" || d == "F32") return 32;
  if (d == "F64" || d == "I64" || d == "U64" || d == "C64") return 64;
  // Spellings @huggingface/hub's parser also accepts (its Dtype type):
  // FNUZ float8 variants, E8M0 / UE8 scale bytes, FP4.
  if (d == "F8_E4M3FNUZ" || d == "F8_E5M2FNUZ" || d == "E8M0" || d == "UE8") return 8;
  if (d == "F4" || d == "FP4") return 4;
  if (d == "F6_E2M3" || d == "F6_E3M2") return 6;
  return 0;
}

namespace detail {

namespace {

constexpr int64_t kMaxElements = int64_t{100'000'000'000'000};  // as registry.cpp's kMaxParams

const std::set<std::string> kAllowedInventoryKeys = {"tensors", "metadata"};
const std::set<std::string> kAllowedTensorKeys = {"name", "dtype", "shape", "shard"};

}  // namespace

std::vector<TensorIn> read_inventory(const JsonReader& inv, CheckpointSummary& sum) {
  for (const auto& [key, _] : inv.raw().items()) {
    if (!kAllowedInventoryKeys.count(key)) {
      fail(errc::kUnknownValue, inv.child_path(key),
           inv.child_path(key) + " is not a field of model.safetensors (tensors, metadata)");
    }
  }
  const std::string tpath = inv.child_path("tensors");
  const json* list = inv.get("tensors");
  if (list == nullptr)
    fail(errc::kMissingField, tpath, tpath + " is required: the checkpoint's [{name, dtype, shape}]");
  if (!list->is_array()) fail(errc::kWrongType, tpath, tpath + " must be an array of {name, dtype, shape}");
  if (list->empty()) fail(errc::kOutOfRange, tpath, tpath + " is empty: a checkpoint lists at least one tensor");
  if (static_cast<int64_t>(list->size()) > checkpoint_limits::kMaxTensors) {
    fail(errc::kOutOfRange, tpath,
         tpath + " lists " + std::to_string(list->size()) + " tensors, more than the limit of " +
             std::to_string(checkpoint_limits::kMaxTensors));
  }
  if (auto meta = inv.object_opt("metadata")) {
    // model.safetensors.index.json "metadata": total_size (bytes of tensor
    // data, written by transformers' save_pretrained) and, since 2025,
    // total_parameters.
    if (meta->has("total_size")) sum.declared_total_size = meta->int_req("total_size", 0, kMaxElements);
    if (meta->has("total_parameters")) {
      sum.declared_total_parameters = meta->int_req("total_parameters", 0, kMaxElements);
    }
  }
  std::vector<TensorIn> out;
  out.reserve(list->size());
  std::set<std::string> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string p = tpath + "[" + std::to_string(i) + "]";
    JsonReader t((*list)[i], p);
    if (!(*list)[i].is_object()) fail(errc::kWrongType, p, p + " must be an object {name, dtype, shape}");
    for (const auto& [key, _] : (*list)[i].items()) {
      if (!kAllowedTensorKeys.count(key)) {
        fail(errc::kUnknownValue, t.child_path(key), t.child_path(key) + " is not a tensor field (name, dtype, shape)");
      }
    }
    TensorIn x;
    const auto name = t.str_opt("name");
    if (!name || name->empty()) fail(errc::kMissingField, t.child_path("name"), t.child_path("name") + " is required");
    if (static_cast<int64_t>(name->size()) > checkpoint_limits::kMaxNameLength) {
      fail(errc::kOutOfRange, t.child_path("name"), t.child_path("name") + " is longer than 1024 characters");
    }
    x.name = *name;
    if (!seen.insert(x.name).second) {
      fail(errc::kInconsistent, t.child_path("name"), t.child_path("name") + " \"" + x.name + "\" is listed twice");
    }
    const auto dtype = t.str_opt("dtype");
    if (!dtype) fail(errc::kMissingField, t.child_path("dtype"), t.child_path("dtype") + " is required");
    x.dtype = *dtype;
    x.bits = dtype_bits(x.dtype);
    if (x.bits == 0) {
      fail(errc::kUnknownValue, t.child_path("dtype"),
           t.child_path("dtype") + " \"" + x.dtype + "\" (tensor " + x.name +
               ") is not a safetensors dtype: BOOL, U8, I8, F8_E4M3, F8_E5M2, F8_E8M0, I16, U16, F16, BF16, I32, "
               "U32, F32, F64, I64, U64, F4, F6_E2M3, F6_E3M2");
    }
    const json* shape = t.get("shape");
    const std::string sp = t.child_path("shape");
    if (shape == nullptr) fail(errc::kMissingField, sp, sp + " is required (an array of dimensions, [] for a scalar)");
    if (!shape->is_array() || static_cast<int64_t>(shape->size()) > checkpoint_limits::kMaxRank) {
      fail(errc::kWrongType, sp, sp + " must be an array of at most 8 dimensions");
    }
    int64_t n = 1;
    for (size_t k = 0; k < shape->size(); ++k) {
      const json& d = (*shape)[k];
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > checkpoint_limits::kMaxDim) {
        fail(errc::kOutOfRange, sp, sp + " must hold integers from 0 to 2^40 (tensor " + x.name + ")");
      }
      const int64_t v = d.get<int64_t>();
      if (v != 0 && n > kMaxElements / v) {
        fail(errc::kOutOfRange, sp, sp + " of " + x.name + " describes more than 1e14 elements");
      }
      n *= v;
      x.shape.push_back(v);
    }
    x.numel = n;
    x.bytes = (n * x.bits + 7) / 8;
    sum.tensors += 1;
    sum.stored_elements += n;
    sum.stored_bytes += x.bytes;
    sum.elements_by_dtype[x.dtype] += n;
    if (sum.stored_elements > kMaxElements) {
      fail(errc::kOutOfRange, tpath, tpath + " describes more than 1e14 elements in all");
    }
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace detail

}  // namespace vram
