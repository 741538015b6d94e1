// Requests shared by the WASM tests: the contract's example request
// (DESIGN.md §2) with overrides per case.
export function trainRequest(modelConfig, train = {}, extra = {}) {
  return {
    model: { config: modelConfig },
    task: 'train',
    train: {
      method: 'full',
      micro_batch: 1,
      seq_len: 2048,
      precision: 'bf16',
      optimizer: 'adamw_torch_fused',
      grad_checkpointing: false,
      attention: 'sdpa',
      ...train,
    },
    gpu: { name: 'H100 80GB' },
    ...extra,
  };
}
