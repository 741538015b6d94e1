// Mamba (Gu & Dao 2023, "Mamba: Linear-Time Sequence Modeling with Selective
// State Spaces"): a stack of selective state-space mixers, no attention.
// Sources: transformers src/transformers/models/mamba/configuration_mamba.py
// and modeling_mamba.py (the 4.5x line).
#include <cmath>

#include "families/dense_helpers.h"
#include "families/registry_entries.h"
#include "families/ssm_mixers.h"
#include "vram/families.h"

namespace vram::detail {

// configuration_mamba.py (MambaConfig): vocab 50280, hidden 768, state_size
// 16, 32 layers, expand 2 (intermediate_size = expand x hidden), conv_kernel 4,
// use_bias False, use_conv_bias True, time_step_rank "auto" (=
// ceil(hidden / 16)), tie_word_embeddings True.
// modeling_mamba.py, per MambaBlock: norm (MambaRMSNorm, hidden) and mixer
// (MambaMixer): in_proj (hidden -> 2 x intermediate, bias = use_bias), conv1d
// (depthwise Conv1d(intermediate, intermediate, conv_kernel, groups =
// intermediate): intermediate x conv_kernel weights + intermediate bias when
// use_conv_bias), x_proj (intermediate -> time_step_rank + 2 x state_size, no
// bias), dt_proj (time_step_rank -> intermediate, with bias), A_log
// (intermediate x state_size), D (intermediate), out_proj (intermediate ->
// hidden, bias = use_bias). MambaModel: embeddings, layers, norm_f;
// MambaForCausalLM: lm_head tied to the embeddings unless
// tie_word_embeddings is False.
void build_mamba(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "MambaConfig (configuration_mamba.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 50280);
  t.hidden = k.size({"hidden_size", "d_model"}, 768);
  t.layers = k.size({"num_hidden_layers", "n_layer"}, 32, 1, 100000);
  t.ssm_state = k.size({"state_size"}, 16);
  t.ssm_conv_kernel = k.size({"conv_kernel"}, 4, 1, 1024);
  const int64_t expand = k.size({"expand"}, 2, 1, 1024);
  t.ssm_inner = cfg.int_or("intermediate_size", expand * t.hidden);
  // time_step_rank "auto" (or absent) = math.ceil(hidden_size / 16).
  const int64_t auto_rank = (t.hidden + 15) / 16;
  if (const json* r = cfg.get("time_step_rank"); r != nullptr && r->is_string()) {
    if (r->get<std::string>() != "auto") {
      fail(errc::kUnknownValue, cfg.child_path("time_step_rank"),
           cfg.child_path("time_step_rank") + " must be an integer or \"auto\"");
    }
    t.ssm_dt_rank = auto_rank;
  } else {
    t.ssm_dt_rank = cfg.int_or("time_step_rank", auto_rank);
  }
  t.ssm_layers = t.layers;
  t.heads = 0;
  t.kv_heads = 0;
  t.head_dim = 0;
  t.v_head_dim = 0;
  t.intermediate = 0;
  t.norm = NormKind::kRmsNorm;
  t.mlp = MlpKind::kPlain;
  t.activation = k.str({"hidden_act"}, "silu");
  t.position_encoding = "none";
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", true);
  read_dtype(cfg, spec);

  const bool bias = k.flag("use_bias", false);
  const bool conv_bias = k.flag("use_conv_bias", true);
  const int64_t L = t.layers, h = t.hidden, I = t.ssm_inner, N = t.ssm_state, R = t.ssm_dt_rank;
  add_embedding(spec, "embeddings", "text", spec.vocab, h);
  add_linear(spec, "in_proj", comp::kSsm, "text", h, 2 * I, bias, L);
  add_other(spec, "conv1d", comp::kSsm, "text", I * t.ssm_conv_kernel + (conv_bias ? I : 0), L);
  add_linear(spec, "x_proj", comp::kSsm, "text", I, R + 2 * N, false, L);
  add_linear(spec, "dt_proj", comp::kSsm, "text", R, I, true, L);
  add_other(spec, "A_log", comp::kSsm, "text", I * N, L);
  add_other(spec, "D", comp::kSsm, "text", I, L);
  add_linear(spec, "out_proj", comp::kSsm, "text", I, h, bias, L);
  add_norm(spec, "norm", "text", h, false, L);
  add_norm(spec, "norm_f", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

namespace {

void tag(ModelSpec& spec, size_t from, LayerSet layers) {
  for (size_t i = from; i < spec.groups.size(); ++i) spec.groups[i].layers = layers;
}

}  // namespace

void add_mamba2_mixer(ModelSpec& spec, const Mamba2Shape& m, int64_t instances, LayerSet layers) {
  const size_t first = spec.groups.size();
  const int64_t conv_dim = m.inner + 2 * m.groups * m.state;
  add_linear(spec, "in_proj", comp::kSsm, "text", m.hidden, m.inner + conv_dim + m.heads, m.bias, instances);
  add_other(spec, "conv1d", comp::kSsm, "text", conv_dim * m.conv_kernel + (m.conv_bias ? conv_dim : 0), instances);
  add_other(spec, "dt_bias", comp::kSsm, "text", m.heads, instances);
  add_other(spec, "A_log", comp::kSsm, "text", m.heads, instances);
  add_other(spec, "D", comp::kSsm, "text", m.heads, instances);
  if (m.gated_norm) add_other(spec, "norm", comp::kSsm, "text", m.inner, instances);
  add_linear(spec, "out_proj", comp::kSsm, "text", m.inner, m.hidden, m.out_bias, instances);
  tag(spec, first, layers);
}

void set_mamba2_stack(LayerStack& t, const Mamba2Shape& m, int64_t ssm_layers) {
  t.ssm_kind = SsmKind::kMamba2;
  t.ssm_layers = ssm_layers;
  t.ssm_inner = m.inner;
  t.ssm_state = m.state;
  t.ssm_conv_kernel = m.conv_kernel;
  t.ssm_conv_dim = m.inner + 2 * m.groups * m.state;
  t.ssm_heads = m.heads;
  t.ssm_groups = m.groups;
  t.ssm_dt_rank = 0;
}

// Mamba-2 (Dao & Gu 2024, "Transformers are SSMs"), transformers
// configuration_mamba2.py / modeling_mamba2.py.
// Mamba2Config defaults: num_heads 128, head_dim 64, vocab 32768, hidden
// 4096, state_size 128, 64 layers, expand 2, conv_kernel 4, n_groups 8,
// use_bias False, use_conv_bias True, tie_word_embeddings False.
// Mamba2Block: norm (Mamba2RMSNorm, hidden) and mixer (Mamba2Mixer, see
// add_mamba2_mixer; intermediate_size = int(expand x hidden), the config's
// own "intermediate_size" key is not read). Mamba2Model: embeddings, layers,
// norm_f; Mamba2ForCausalLM: lm_head, tied only when tie_word_embeddings.
// There is no MLP: the mixer is the whole layer.
void build_mamba2(const JsonReader& cfg, ModelSpec& spec) {
  ConfigKeys k(cfg, spec, "Mamba2Config (configuration_mamba2.py)");
  LayerStack& t = spec.text;
  t.name = "text";
  spec.vocab = k.size({"vocab_size"}, 32768);
  t.hidden = k.size({"hidden_size"}, 4096);
  t.layers = k.size({"num_hidden_layers"}, 64, 1, 100000);
  Mamba2Shape m;
  m.hidden = t.hidden;
  m.state = k.size({"state_size"}, 128);
  m.conv_kernel = k.size({"conv_kernel"}, 4, 1, 1024);
  const int64_t expand = k.size({"expand"}, 2, 1, 1024);
  m.inner = expand * t.hidden;
  m.heads = k.size({"num_heads"}, 128, 1, 1 << 20);
  m.head_dim = k.size({"head_dim"}, 64, 1, 1 << 20);
  m.groups = k.size({"n_groups"}, 8, 1, 1 << 20);
  m.bias = k.flag("use_bias", false);
  m.out_bias = m.bias;
  m.conv_bias = k.flag("use_conv_bias", true);
  // Mamba2Mixer views the scan input (intermediate wide) as num_heads x
  // head_dim and repeats each group's B and C over num_heads / n_groups heads.
  if (m.heads * m.head_dim != m.inner) {
    fail(errc::kInconsistent, k.path({"num_heads"}),
         k.path({"num_heads"}) + " x " + k.path({"head_dim"}) + " (" + std::to_string(m.heads) + " x " +
             std::to_string(m.head_dim) + ") must equal expand x hidden_size (" + std::to_string(m.inner) + ")");
  }
  check_divisible(k.path({"num_heads"}), m.heads, k.path({"n_groups"}), m.groups);
  set_mamba2_stack(t, m, t.layers);
  t.heads = 0;
  t.kv_heads = 0;
  t.head_dim = 0;
  t.v_head_dim = 0;
  t.intermediate = 0;
  t.norm = NormKind::kRmsNorm;
  t.mlp = MlpKind::kPlain;
  t.activation = k.str({"hidden_act"}, "silu");
  t.position_encoding = "none";
  spec.tie_word_embeddings = k.flag("tie_word_embeddings", false);
  read_dtype(cfg, spec);

  const int64_t L = t.layers, h = t.hidden;
  add_embedding(spec, "embeddings", "text", spec.vocab, h);
  add_mamba2_mixer(spec, m, L, LayerSet::kEvery);
  add_norm(spec, "norm", "text", h, false, L);
  add_norm(spec, "norm_f", "text", h, false, 1);
  if (!spec.tie_word_embeddings) add_linear(spec, "lm_head", comp::kLmHead, "text", h, spec.vocab, false, 1);
}

}  // namespace vram::detail
