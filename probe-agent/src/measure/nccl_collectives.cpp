#include "measure/nccl_collectives.h"

#include <cuda_runtime_api.h>

#include <string>
#include <utility>
#include <vector>

#include "measure/error_handling.h"
#include "measure/nccl_library.h"

namespace vram::probe {
namespace {

class NcclCollectives final : public Collectives {
 public:
  explicit NcclCollectives(std::unique_ptr<NcclLibrary> library) : library_(std::move(library)) {}
  ~NcclCollectives() override { Release(); }
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  std::string_view name() const override { return "nccl"; }
  Result<std::string> Version() override { return library_->Version(); }
  Status Prepare(const std::vector<unsigned>& cuda_devices, std::size_t bytes) override;
  Status InitCommunicators() override;
  Status AllReduceOnce() override;
  Status Release() override;

 private:
  // One rank: a device with its all-reduce buffer, stream and communicator.
  struct Rank {
    int device = 0;
    void* buffer = nullptr;
    cudaStream_t stream = nullptr;
    NcclComm comm = nullptr;
  };

  Status PrepareRank(Rank* rank, std::size_t bytes);
  const char* ErrorString(int rc) const { return library_->ErrorString(rc); }

  std::unique_ptr<NcclLibrary> library_;
  std::vector<Rank> ranks_;
  std::size_t count_ = 0;  // float32 elements in each buffer
};

Status NcclCollectives::PrepareRank(Rank* rank, std::size_t bytes) {
  VRAM_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank->device));
  VRAM_CUDA_RETURN_IF_ERROR(cudaMalloc(&rank->buffer, bytes));
  // Zeros, so that the sum is defined; the values play no part in the memory.
  VRAM_CUDA_RETURN_IF_ERROR(cudaMemset(rank->buffer, 0, bytes));
  VRAM_CUDA_RETURN_IF_ERROR(cudaStreamCreate(&rank->stream));
  return Status::Ok();
}

Status NcclCollectives::Prepare(const std::vector<unsigned>& cuda_devices, std::size_t bytes) {
  Release();
  count_ = bytes / sizeof(float);
  // Each rank is appended before its allocations so that Release() frees
  // whatever a failure left behind.
  for (unsigned device : cuda_devices) {
    ranks_.push_back(Rank{static_cast<int>(device), nullptr, nullptr, nullptr});
    VRAM_RETURN_IF_ERROR(PrepareRank(&ranks_.back(), bytes));
  }
  return Status::Ok();
}

Status NcclCollectives::InitCommunicators() {
  std::vector<NcclComm> comms(ranks_.size(), nullptr);
  std::vector<int> devices;
  devices.reserve(ranks_.size());
  for (const Rank& rank : ranks_) devices.push_back(rank.device);
  auto error_string = [this](int rc) { return ErrorString(rc); };
  const NcclApi& api = library_->api();
  // The handles of a failed ncclCommInitAll are dropped, not destroyed: NCCL
  // runs the per-rank inits inside its own ncclGroupStart/ncclGroupEnd
  // (ncclCommInitAll in NCCL's src/init.cc), and what a failed group leaves
  // half-built is not safe to hand to ncclCommDestroy. The command ends right
  // after a failure, so leaking is the safe side.
  VRAM_NCCL_RETURN_IF_ERROR(error_string,
                            api.ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), devices.data()));
  for (std::size_t i = 0; i < ranks_.size(); ++i) ranks_[i].comm = comms[i];
  return Status::Ok();
}

Status NcclCollectives::AllReduceOnce() {
  for (const Rank& rank : ranks_) {
    if (rank.comm == nullptr) {
      return Status(StatusCode::kInternal,
                    "all-reduce before ncclCommInitAll on CUDA device " + std::to_string(rank.device));
    }
  }
  auto error_string = [this](int rc) { return ErrorString(rc); };
  const NcclApi& api = library_->api();
  VRAM_NCCL_RETURN_IF_ERROR(error_string, api.ncclGroupStart());
  // Every call inside the group is made, and the group always ended, even
  // after a failure: an open group would swallow the next NCCL call.
  Status first;
  for (const Rank& rank : ranks_) {
    const int rc = api.ncclAllReduce(rank.buffer, rank.buffer, count_, ncclFloat32, ncclSum, rank.comm, rank.stream);
    if (rc != nccl_rc::kSuccess && first.ok()) {
      first = NcclCallStatus(rc, ErrorString(rc),
                             "api.ncclAllReduce(buffer, buffer, count, ncclFloat32, ncclSum, comm, stream)", __FILE__,
                             __LINE__);
    }
  }
  const int ended = api.ncclGroupEnd();
  if (!first.ok()) return first;
  if (ended != nccl_rc::kSuccess) {
    return NcclCallStatus(ended, ErrorString(ended), "api.ncclGroupEnd()", __FILE__, __LINE__);
  }
  for (const Rank& rank : ranks_) {
    VRAM_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
    VRAM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(rank.stream));
  }
  return Status::Ok();
}

Status NcclCollectives::Release() {
  // Frees everything it can and reports the first failure. ncclCommDestroy
  // "frees local resources" (nccl.h) and is called rank by rank from this one
  // thread, as NVIDIA/nccl-tests src/common.cu does after ncclCommInitAll.
  Status first;
  auto keep_first = [&first](Status status) {
    if (first.ok() && !status.ok()) first = std::move(status);
  };
  auto error_string = [this](int rc) { return ErrorString(rc); };
  const NcclApi& api = library_->api();
  for (Rank& rank : ranks_) {
    if (rank.comm == nullptr) continue;
    keep_first([&]() -> Status {
      VRAM_NCCL_RETURN_IF_ERROR(error_string, api.ncclCommDestroy(rank.comm));
      return Status::Ok();
    }());
    rank.comm = nullptr;
  }
  for (Rank& rank : ranks_) {
    if (rank.buffer == nullptr && rank.stream == nullptr) continue;  // nothing was allocated
    keep_first([&]() -> Status {
      VRAM_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
      if (rank.buffer != nullptr) VRAM_CUDA_RETURN_IF_ERROR(cudaFree(rank.buffer));
      rank.buffer = nullptr;
      if (rank.stream != nullptr) VRAM_CUDA_RETURN_IF_ERROR(cudaStreamDestroy(rank.stream));
      rank.stream = nullptr;
      return Status::Ok();
    }());
  }
  ranks_.clear();
  return first;
}

}  // namespace

Result<std::unique_ptr<Collectives>> OpenNccl() {
  Result<std::unique_ptr<NcclLibrary>> library = NcclLibrary::Open();
  if (!library.ok()) return library.status();
  return std::unique_ptr<Collectives>(new NcclCollectives(std::move(library.value())));
}

}  // namespace vram::probe
