// One colour per memory component, the same in the breakdown table and the
// phase bars, so a user can follow a component across the step.

const COLORS = {
  weights: '#3451b2',
  gradients: '#e5484d',
  optimizer_states: '#f76b15',
  optimizer_temporaries: '#ffb224',
  master_weights: '#8e4ec6',
  activations: '#30a46c',
  layer_backward: '#12a594',
  loss_buffers: '#d6409f',
  logits: '#d6409f',
  kv_cache: '#0090ff',
  cublas_workspace: '#8d8d8d',
  cuda_context: '#6f6e77',
  gathered_params: '#6e56cf',
  grad_partitions: '#ca244d',
  comm_buffers: '#0d74ce',
  nccl: '#5b5bd6',
  cuda_graphs: '#978365',
  allocator: '#b4b4b4',
  misc: '#c2c2c2',
};

const SPARE = ['#7c66dc', '#ad7f58', '#29a383', '#e54666', '#5b5bd6', '#978365'];

/** The colour of a component key; unknown keys get a stable spare colour. */
export function colorOf(key) {
  if (COLORS[key]) return COLORS[key];
  let h = 0;
  for (const ch of String(key)) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return SPARE[h % SPARE.length];
}
