// The control functions of the fake libnvidia-ml (fake_nvml.cpp), declared
// once for the library that defines them and the tests that find them with
// dlsym and call them through decltype(&FakeNvmlConfigure).
#pragma once

extern "C" {

// nvmlInit_v2 answers `init_rc` (an nvmlReturn_t value); the compute process
// list holds `process_count` processes at its first call and `grow_by` more
// from the second call on. Resets the process-list call count.
__attribute__((visibility("default"))) void FakeNvmlConfigure(int init_rc, unsigned process_count, int grow_by);

// How many times the compute process-list entry point was called.
__attribute__((visibility("default"))) int FakeNvmlProcessCalls();

}  // extern "C"
