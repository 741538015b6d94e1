// ggml's tensor types (vram/gguf.h): ids from ggml/include/ggml.h `enum
// ggml_type`, block sizes and bytes per block from ggml/src/ggml.c
// `type_traits[GGML_TYPE_COUNT]` (.blck_size, .type_size = sizeof(block_x)),
// each block's size as ggml/src/ggml-common.h static_asserts it
// (ggml-org/ggml d99724f2b141fed9e1a9f402213506c081433465). There QK_K = 256,
// K_SCALE_SIZE = 12, sizeof(ggml_half) = 2, IQ3S_N_SCALE = QK_K / 64.
#include <algorithm>
#include <cctype>

#include "vram/gguf.h"

namespace vram::gguf {

namespace {

constexpr int64_t kQkK = 256;       // QK_K
constexpr int64_t kHalf = 2;        // sizeof(ggml_half)
constexpr int64_t kScaleSize = 12;  // K_SCALE_SIZE

std::vector<GgmlType> build() {
  return {
      {0, "f32", 1, 4, false},
      {1, "f16", 1, 2, false},
      {2, "q4_0", 32, kHalf + 32 / 2, true},                                   // 18
      {3, "q4_1", 32, 2 * kHalf + 32 / 2, true},                               // 20
      {6, "q5_0", 32, kHalf + 4 + 32 / 2, true},                               // 22: + uint32_t qh
      {7, "q5_1", 32, 2 * kHalf + 4 + 32 / 2, true},                           // 24
      {8, "q8_0", 32, kHalf + 32, true},                                       // 34
      {9, "q8_1", 32, 2 * kHalf + 32, true},                                   // 36
      {10, "q2_K", kQkK, 2 * kHalf + kQkK / 16 + kQkK / 4, true},              // 84
      {11, "q3_K", kQkK, kHalf + kQkK / 4 + kQkK / 8 + 12, true},              // 110
      {12, "q4_K", kQkK, 2 * kHalf + kScaleSize + kQkK / 2, true},             // 144
      {13, "q5_K", kQkK, 2 * kHalf + kScaleSize + kQkK / 2 + kQkK / 8, true},  // 176
      {14, "q6_K", kQkK, kHalf + kQkK / 16 + 3 * kQkK / 4, true},              // 210
      {15, "q8_K", kQkK, 4 + kQkK + kQkK / 16 * 2, true},                      // 292: float d, int8 qs, int16 bsums
      {16, "iq2_xxs", kQkK, kHalf + kQkK / 8 * 2, true},                       // 66
      {17, "iq2_xs", kQkK, kHalf + kQkK / 8 * 2 + kQkK / 32, true},            // 74
      {18, "iq3_xxs", kQkK, kHalf + 3 * (kQkK / 8), true},                     // 98
      {19, "iq1_s", kQkK, kHalf + kQkK / 8 + kQkK / 16, true},                 // 50
      {20, "iq4_nl", 32, kHalf + 32 / 2, true},                                // 18
      {21, "iq3_s", kQkK, kHalf + 13 * (kQkK / 32) + kQkK / 64, true},         // 110
      {22, "iq2_s", kQkK, kHalf + kQkK / 4 + kQkK / 16, true},                 // 82
      {23, "iq4_xs", kQkK, kHalf + 2 + kQkK / 64 + kQkK / 2, true},            // 136
      {24, "i8", 1, 1, false},
      {25, "i16", 1, 2, false},
      {26, "i32", 1, 4, false},
      {27, "i64", 1, 8, false},
      {28, "f64", 1, 8, false},
      {29, "iq1_m", kQkK, kQkK / 8 + kQkK / 16 + kQkK / 32, true},  // 56: no fp16 d in the block
      {30, "bf16", 1, 2, false},
      {34, "tq1_0", kQkK, kHalf + kQkK / 64 + (kQkK - 4 * kQkK / 64) / 5, true},  // 54
      {35, "tq2_0", kQkK, kHalf + kQkK / 4, true},                                // 66
      {39, "mxfp4", 32, 1 + 32 / 2, true},                                        // 17: e8m0 + 16 B
      {40, "nvfp4", 64, 64 / 16 + 64 / 2, true},  // 36: 4 UE4M3 scales (one per 16) + 32 B
      {41, "q1_0", 128, kHalf + 128 / 8, true},   // 18
      {42, "q2_0", 64, kHalf + 64 / 4, true},     // 18
  };
}

bool same_name(std::string_view a, const char* b) {
  const std::string_view bv(b);
  if (a.size() != bv.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(bv[i]))) return false;
  }
  return true;
}

}  // namespace

const std::vector<GgmlType>& ggml_types() {
  static const std::vector<GgmlType> kTypes = build();
  return kTypes;
}

const GgmlType* ggml_type(int64_t id) {
  const auto& types = ggml_types();
  auto it = std::find_if(types.begin(), types.end(), [&](const GgmlType& t) { return t.id == id; });
  return it == types.end() ? nullptr : &*it;
}

const GgmlType* ggml_type_named(std::string_view name) {
  for (const auto& t : ggml_types()) {
    if (same_name(name, t.name)) return &t;
  }
  return nullptr;
}

}  // namespace vram::gguf
