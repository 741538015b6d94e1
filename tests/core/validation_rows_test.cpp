// Validation through the user's path (issue 29): every row of
// tests/fixtures/validation/requests.json is what its source states in the
// user's vocabulary — its recipe files (through import) and request fields a
// user can know. A field the field table marks internal (a consequence of a
// framework release or a library version, vram/releases.h) is never set by a
// row: the release's rules must produce it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures.h"
#include "vram/fields.h"
#include "vram/releases.h"

namespace vram {
namespace {

// The dotted paths of every leaf `obj` sets (objects the table declares as
// one field, such as model.config or deepspeed, are leaves).
void leaves(const json& obj, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [key, value] : obj.items()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    const FieldSpec* f = find_field(path);
    if (value.is_object() && (f == nullptr || f->type != FieldType::kObject)) {
      leaves(value, path, out);
    } else {
      out.push_back(path);
    }
  }
}

json rows() { return json::parse(testing::read_text("validation/requests.json")); }

TEST(ValidationRows, NoRowSetsAFieldThatIsNotUserFacing) {
  const json all = rows();
  ASSERT_GT(all.size(), 60u);
  for (size_t i = 0; i < all.size(); ++i) {
    std::vector<std::string> paths;
    leaves(all[i]["request"], "", paths);
    for (const std::string& p : paths) {
      const FieldSpec* f = find_field(p);
      ASSERT_NE(f, nullptr) << "row " << i << " sets " << p << ", which is not a request field";
      EXPECT_FALSE(f->internal) << "row " << i << " sets " << p
                                << ": an internal field; name the framework release (or versions.*) whose rule "
                                   "sets it";
    }
  }
}

// A training row names its framework at a release: the date of its source
// decides the library versions, never a per-row switch.
TEST(ValidationRows, EveryTrainingRowNamesAFrameworkRelease) {
  const json all = rows();
  for (size_t i = 0; i < all.size(); ++i) {
    const json& r = all[i]["request"];
    if (r.value("task", "train") != "train") continue;
    ASSERT_TRUE(r.contains("train") && r["train"].contains("framework")) << "row " << i;
    const std::string fw = r["train"]["framework"].get<std::string>();
    const size_t at = fw.find('@');
    ASSERT_NE(at, std::string::npos) << "row " << i << ": train.framework " << fw << " names no release";
    bool known = false;
    for (const FrameworkRelease& rel : releases_of(fw.substr(0, at))) {
      known = known || rel.version == fw.substr(at + 1) || rel.version.rfind(fw.substr(at + 1) + ".", 0) == 0;
    }
    EXPECT_TRUE(known) << "row " << i << ": " << fw << " is not a release in core/src/release_table.h";
  }
}

TEST(ValidationRows, TheInternalFieldsAreMarkedInTheTable) {
  // The switches issue 29 named, each now a consequence of a release rule.
  for (const char* p : {"train.quant.saves_input", "train.quant.quantizer", "train.quant.prepare_kbit",
                        "train.keeps_fused_qkv", "train.returns_kv_cache", "train.lora.adapter_fp32",
                        "train.softmax_saves_input", "train.zero_grad_set_to_none"}) {
    ASSERT_NE(find_field(p), nullptr) << p;
    EXPECT_TRUE(find_field(p)->internal) << p;
  }
  for (const char* p : {"train.micro_batch", "train.seq_len", "train.framework", "train.lora.rank",
                        "versions.bitsandbytes", "train.loss"}) {
    EXPECT_FALSE(find_field(p)->internal) << p;
  }
}

}  // namespace
}  // namespace vram
