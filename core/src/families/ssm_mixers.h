// Private: state-space mixers shared by the pure SSM families and the hybrids
// (mamba.cpp builds them; Mamba-2's mixer is also Falcon-H1's).
#pragma once

#include <cstdint>
#include <string>

#include "vram/model.h"

namespace vram::detail {

// One Mamba-2 mixer (modeling_mamba2.py Mamba2Mixer; the same module tree in
// modeling_falcon_h1.py FalconH1Mixer and modeling_bamba.py BambaMixer).
struct Mamba2Shape {
  int64_t hidden = 0;
  int64_t inner = 0;  // intermediate_size = expand x hidden (Falcon-H1: mamba_d_ssm)
  int64_t heads = 0;  // num_heads
  int64_t head_dim = 0;
  int64_t groups = 0;  // n_groups
  int64_t state = 0;   // state_size
  int64_t conv_kernel = 0;
  bool bias = false;       // use_bias: in_proj (and out_proj unless out_bias says otherwise)
  bool out_bias = false;   // out_proj's bias (Falcon-H1: projectors_bias)
  bool conv_bias = true;   // use_conv_bias
  bool gated_norm = true;  // MambaRMSNormGated over the inner width (Falcon-H1: mamba_rms_norm)
};

// Adds the mixer's parameters `instances` times to the text stack, as
// Mamba2Mixer.__init__ creates them: in_proj (hidden -> inner + conv_dim +
// heads), conv1d (depthwise over conv_dim = inner + 2 x groups x state),
// dt_bias, A_log and D (one per head), the gated norm (inner) and out_proj
// (inner -> hidden). `prefix` goes before each module name ("" or
// "mamba."), so that checkpoints and LoRA targets see transformers' names.
void add_mamba2_mixer(ModelSpec& spec, const Mamba2Shape& m, int64_t instances, LayerSet layers);

// Records the mixer's shape on the text stack (state cache, saved
// activations, tensor-parallel split).
void set_mamba2_stack(LayerStack& t, const Mamba2Shape& m, int64_t ssm_layers);

}  // namespace vram::detail
