// Type-only test of vram.d.ts (CanvasKit's npm_build/types idea): it is
// compiled with `tsc --noEmit -p wasm/tsconfig.json` and never run. Lines
// marked @ts-expect-error must fail to compile; if one compiles, tsc reports
// the unused directive and the test fails.
import {
  EstimatorError,
  estimateRaw,
  fieldsRaw,
  loadPlanner,
  loadVram,
  modelInfoRaw,
  planRaw,
  type Engine,
  type ErrorCode,
  type FieldInfo,
  type FieldsInfo,
  type FitVerdict,
  type InferFacts,
  type ModelInfo,
  type ParallelFacts,
  type PipelineStage,
  type PlanCandidate,
  type PlanResult,
  type Request,
  type Result,
  type SuggestResult,
  type VersionInfo,
  type Vram,
} from './vram.js';

// The argument must have exactly type T (both ways assignable).
declare function expectType<T>(value: T): void;
type Equal<A, B> =
  (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
declare function assertTrue<T extends true>(): void;

async function usesTheFacade(): Promise<void> {
  const pending = loadVram();
  expectType<Promise<Vram>>(pending);
  const vram = await pending;

  // The contract's example request (DESIGN.md §2) type-checks as written.
  const request: Request = {
    model: { config: { model_type: 'llama', hidden_size: 4096, num_hidden_layers: 32 } },
    task: 'train',
    train: {
      method: 'full',
      micro_batch: 1,
      seq_len: 2048,
      precision: 'bf16',
      optimizer: 'adamw_torch_fused',
      grad_checkpointing: false,
      attention: 'sdpa',
      lora: { rank: 16, targets: ['q_proj', 'v_proj'] },
    },
    parallel: { gpus: 8, dp: 8, tp: 1, pp: 1, zero: 3, fsdp: '', offload_optimizer: false },
    gpu: { name: 'H100 80GB' },
  };
  const inference: Request = {
    model: { custom: { layers: 32, hidden: 4096, heads: 32, vocab: 32000 } },
    task: 'infer',
    infer: { batch: 8, context_len: 8192, weights_dtype: 'int4', kv_dtype: 'fp8' },
    gpu: { memory_gib: 24 },
  };
  // vLLM over two tensor-parallel GPUs, with every engine setting.
  const serving: Request = {
    model: { config: { model_type: 'llama' } },
    task: 'infer',
    infer: {
      engine: 'vllm',
      batch: 4,
      context_len: 8192,
      prompt_len: 1024,
      gpu_memory_utilization: 0.9,
      block_size: 16,
      max_num_seqs: 256,
      max_num_batched_tokens: 8192,
      enforce_eager: false,
    },
    parallel: { gpus: 2, tp: 2 },
    gpu: { name: 'H100 80GB' },
  };
  const offloaded: Request = {
    model: { config: { model_type: 'llama' } },
    train: { activation_offload: true, optimizer_in_backward: true },
  };
  void offloaded;
  // Megatron-style MoE training: expert and interleaved pipeline parallel over
  // two nodes, with every NCCL and sharding knob.
  const megatron: Request = {
    model: { config: { model_type: 'mixtral' } },
    parallel: {
      gpus: 16,
      tp: 2,
      pp: 2,
      ep: 4,
      vp: 2,
      nodes: 2,
      distributed_optimizer: true,
      main_grads_fp32: false,
      nccl_channels: 16,
      nvls: false,
    },
  };
  const fsdp2: Request = {
    model: { config: { model_type: 'llama' } },
    parallel: {
      gpus: 8,
      fsdp: 'full_shard',
      fsdp_version: 2,
      fsdp_reduce_dtype: 'fp32',
      stage3_param_persistence_threshold: 0,
    },
  };
  void fsdp2;
  const oneField: Request = {
    model: { config: { model_type: 'llama' } },
    parallel: { gpus: 8, sharding: 'zero3' },
    overheads: { nccl_bytes: 1 << 30 },
  };
  void oneField;
  const withAllocator: Request = {
    model: { config: { model_type: 'llama' } },
    allocator: { conf: 'max_split_size_mb:128', expandable_segments: true, max_split_size_mb: 256 },
  };
  void withAllocator;
  const options = vram.layoutOptions({ gpus: 8, tp: 2, zero: 3 });
  expectType<number>(options.dp);
  expectType<boolean>(options.offload_params);
  // @ts-expect-error zero is a stage number
  vram.layoutOptions({ zero: 'three' });
  const fw = vram.frameworkDefaults({ framework: 'torchtune', method: 'lora' });
  expectType<string>(fw.label);
  expectType<string>(fw.defaults[0].source);
  // @ts-expect-error the framework is named
  vram.frameworkDefaults({ method: 'lora' });
  const badAllocator: Request = {
    model: { config: { model_type: 'llama' } },
    // @ts-expect-error expandable_segments is a boolean, not PYTORCH_CUDA_ALLOC_CONF's 'True'
    allocator: { expandable_segments: 'True' },
  };
  void badAllocator;

  const result = vram.estimate(request);
  assertTrue<Equal<typeof result, Result>>();
  expectType<number>(result.peak_bytes);
  expectType<string>(result.peak_phase);
  expectType<number>(result.model.params_total);
  expectType<number>(result.model.params_trainable);
  expectType<string>(result.components[0].key);
  expectType<number>(result.components[0].bytes);
  expectType<string>(result.phases[0].key);
  expectType<number>(result.phases[0].bytes);
  expectType<string[]>(result.warnings);
  // fit is null without a GPU, so it has to be checked before use.
  // @ts-expect-error fit may be null
  result.fit.fits;
  if (result.fit !== null) {
    expectType<boolean>(result.fit.fits);
    expectType<number>(result.fit.capacity_bytes);
    expectType<'fits' | 'fits_with_paging' | 'does_not_fit'>(result.fit.verdict);
    expectType<number>(result.fit.paged_bytes);
    expectType<number | undefined>(result.fit.max_micro_batch_with_paging);
  }
  expectType<FitVerdict>(result.gpus[0].verdict);
  expectType<number>(vram.estimate(inference).tokens_per_micro_batch);

  // Inference answers are absent for training, so they are checked first.
  const served = vram.estimate(serving);
  // @ts-expect-error infer is absent for training results
  served.infer.kv_bytes_per_token;
  if (served.infer !== undefined) {
    assertTrue<Equal<typeof served.infer, InferFacts>>();
    expectType<Engine>(served.infer.engine);
    expectType<number>(served.infer.kv_bytes_per_token);
    expectType<number>(served.infer.kv_bytes_per_token_per_layer);
    expectType<number>(served.infer.kv_cache_bytes);
    expectType<number>(served.infer.tp);
    expectType<number | undefined>(served.infer.max_concurrent_sequences);
    expectType<number | undefined>(served.infer.max_context_len);
    expectType<number | undefined>(served.infer.kv_blocks);
    expectType<number | undefined>(served.infer.kv_block_bytes);
  }

  // The layout is absent for one GPU, and stages only with pipeline parallel.
  const laidOut = vram.estimate(megatron);
  // @ts-expect-error parallel is absent for single-GPU and inference results
  laidOut.parallel.layout;
  if (laidOut.parallel !== undefined) {
    assertTrue<Equal<typeof laidOut.parallel, ParallelFacts>>();
    expectType<string>(laidOut.parallel.layout);
    expectType<number | undefined>(laidOut.parallel.ep);
    expectType<number | undefined>(laidOut.parallel.vp);
    expectType<number | undefined>(laidOut.parallel.nodes);
    expectType<number | undefined>(laidOut.parallel.gpus_per_node);
    expectType<number | undefined>(laidOut.parallel.experts_per_rank);
    expectType<number | undefined>(laidOut.parallel.nccl_bytes);
    expectType<number | undefined>(laidOut.parallel.params_per_gpu);
    expectType<number | undefined>(laidOut.parallel.busiest_stage);
    // @ts-expect-error stages are absent without pipeline parallel
    laidOut.parallel.stages[0];
    for (const stage of laidOut.parallel.stages ?? []) {
      assertTrue<Equal<typeof stage, PipelineStage>>();
      expectType<number>(stage.stage);
      expectType<number>(stage.layers);
      expectType<number>(stage.moe_layers);
      expectType<number>(stage.params);
      expectType<number>(stage.in_flight);
      expectType<boolean>(stage.embeddings);
      expectType<boolean>(stage.head);
      expectType<number>(stage.peak_bytes);
    }
  }

  const info = vram.modelInfo({ config: { model_type: 'qwen2' } });
  assertTrue<Equal<typeof info, ModelInfo>>();
  expectType<number>(info.params_total);
  expectType<number>(vram.modelInfo(request).params_active);

  const version = vram.version();
  assertTrue<Equal<typeof version, VersionInfo>>();
  expectType<string[]>(version.supported_model_types);

  const fields = await vram.fields();
  assertTrue<Equal<typeof fields, FieldsInfo>>();
  expectType<Promise<Result>>(vram.estimateAsync(request));
  expectType<Promise<true>>(vram.loadFull());
  const rank: FieldInfo | undefined = fields.fields.find((f) => f.path === 'train.lora.rank');
  expectType<string | null | undefined>(rank?.cli);
  expectType<Promise<string>>(fieldsRaw());
  // @ts-expect-error a field's type is one of the seven JSON kinds
  const badType: FieldInfo['type'] = 'float';

  expectType<Promise<string>>(estimateRaw('{}'));
  expectType<Promise<string>>(modelInfoRaw('{}'));

  // @ts-expect-error a request needs a model
  vram.estimate({ task: 'train' });
  // @ts-expect-error task is train or infer
  vram.estimate({ model: { config: { model_type: 'llama' } }, task: 'serve' });
  const tiny = { custom: { layers: 1, hidden: 64, heads: 1, vocab: 10 } };
  // @ts-expect-error method is full, lora, qlora or freeze
  vram.estimate({ model: tiny, train: { method: 'dora' } });
  // @ts-expect-error micro_batch is a number
  vram.estimate({ model: { config: { model_type: 'llama' } }, train: { micro_batch: '4' } });
  // @ts-expect-error the engine is hf, vllm, sglang or litgpt
  vram.estimate({ model: tiny, task: 'infer', infer: { engine: 'tgi' } });
  // @ts-expect-error gpu_memory_utilization is a number
  vram.estimate({ model: tiny, task: 'infer', infer: { gpu_memory_utilization: '0.9' } });
  // @ts-expect-error enforce_eager is a boolean
  vram.estimate({ model: tiny, task: 'infer', infer: { enforce_eager: 1 } });
  // @ts-expect-error fsdp_version is 1 or 2
  vram.estimate({ model: tiny, parallel: { gpus: 2, fsdp: 'full_shard', fsdp_version: 3 } });
  vram.estimate({
    model: tiny,
    // @ts-expect-error fsdp_reduce_dtype is bf16, fp16 or fp32
    parallel: { gpus: 2, fsdp: 'full_shard', fsdp_reduce_dtype: 'fp8' },
  });
  // @ts-expect-error sharding is one of the named strategies
  vram.estimate({ model: tiny, parallel: { gpus: 2, sharding: 'zero4' } });
  // @ts-expect-error distributed_optimizer is a boolean
  vram.estimate({ model: tiny, parallel: { gpus: 2, distributed_optimizer: 'yes' } });
  // @ts-expect-error ep is a number
  vram.estimate({ model: tiny, parallel: { gpus: 2, ep: '2' } });
  // @ts-expect-error activation_offload is a boolean
  vram.estimate({ model: tiny, train: { activation_offload: 'cpu' } });
  // @ts-expect-error a config needs its model_type
  vram.modelInfo({ config: { hidden_size: 4096 } });
  // @ts-expect-error the raw call takes text, not an object
  estimateRaw(request);

  // The planner: the same request with a GPU budget and planner options.
  // Asynchronous on the estimator (the plan module loads on first use).
  const planning = vram.plan({
    ...request,
    parallel: { gpus: 8 },
    plan: { framework: 'fsdp', top: 5 },
  });
  expectType<Promise<PlanResult>>(planning);
  const planned = await planning;
  expectType<PlanResult>(planned);
  const best: PlanCandidate = planned.plan.candidates[0];
  expectType<number>(best.peak_bytes);
  expectType<string>(best.label);
  // A candidate's layout is a request's parallel object.
  vram.estimate({ ...request, parallel: best.parallel });
  expectType<Promise<string>>(planRaw('{}'));
  // @ts-expect-error the framework is one of three
  vram.plan({ ...request, plan: { framework: 'jax' } });
  // @ts-expect-error top is a number
  vram.plan({ ...request, plan: { top: '5' } });

  // The plan module alone (the workers' loadPlanner): the same calls, synchronous.
  const planner = await loadPlanner();
  expectType<PlanResult>(planner.plan({ ...request, parallel: { gpus: 8 } }));
  expectType<Promise<SuggestResult>>(vram.suggest(request));
  const suggested = planner.suggest(request);
  expectType<SuggestResult>(suggested);
  // The full module's estimate, with the time model's answer.
  expectType<Result>(planner.estimate(request));
}

function handlesErrors(thrown: unknown): void {
  if (thrown instanceof EstimatorError) {
    expectType<ErrorCode>(thrown.code);
    expectType<string>(thrown.path);
    expectType<string>(thrown.message);
    const asError: Error = thrown;
    void asError;
    // @ts-expect-error the code is read-only
    thrown.code = 'bad_json';
  }
  const made = new EstimatorError({ code: 'missing_field', message: 'x is required', path: 'x' });
  // @ts-expect-error codes are the stable list
  new EstimatorError({ code: 'oops' });
  void made;
}

void usesTheFacade;
void handlesErrors;
