// fail() and recover(), with exceptions or without (status.h).
#include "vram/status.h"

#include <cstdlib>
#include <string>

#include "memory/bytes.h"

#if defined(VRAM_NO_EXCEPTIONS)
#include <csetjmp>
#endif

namespace vram {

namespace {
// Per thread, as bytes::Driver's path: the Python module may be called from
// several.
thread_local uint64_t unwinds = 0;
}  // namespace

uint64_t unwind_count() { return unwinds; }

#if !defined(VRAM_NO_EXCEPTIONS)

void fail(Error e) { throw Failure(std::move(e)); }

// A std::runtime_error that is not a Failure: recover() without `internal`
// lets it pass, as it lets every other std::exception pass.
void fail_internal(const std::string& what) { throw std::runtime_error(what); }

void fail_to_api(Error e) { throw ApiFailure(std::move(e)); }

namespace detail {

std::optional<Error> recover_erased(void (*body)(void*), void* context, bool internal) {
  try {
    body(context);
    return std::nullopt;
  } catch (const Failure& f) {
    ++unwinds;
    return f.error();
  } catch (const ApiFailure& f) {
    if (!internal) throw;
    ++unwinds;
    return f.error();
  } catch (const std::exception& ex) {
    if (!internal) throw;
    ++unwinds;
    return Error{errc::kInternal, std::string("internal error: ") + ex.what(), ""};
  } catch (...) {
    if (!internal) throw;
    ++unwinds;
    return Error{errc::kInternal, "internal error: unknown exception", ""};
  }
}

}  // namespace detail

#else  // VRAM_NO_EXCEPTIONS

namespace {

// One recover() in progress; they nest through `outer`.
struct Scope {
  std::jmp_buf env;
  Scope* outer = nullptr;
  bool internal = false;
  Error error;
};

thread_local Scope* innermost = nullptr;

[[noreturn]] void unwind(Error e, bool is_internal) {
  Scope* s = innermost;
  // An internal failure passes every scope that would not have caught a
  // std::exception in the exception build.
  while (s != nullptr && is_internal && !s->internal) s = s->outer;
  // No scope: every public entry point has one (api.cpp guarded()), so this
  // is a call from outside them.
  if (s == nullptr) std::abort();
  s->error = std::move(e);
  std::longjmp(s->env, 1);
}

}  // namespace

void fail(Error e) { unwind(std::move(e), false); }

void fail_internal(const std::string& what) { unwind(Error{errc::kInternal, "internal error: " + what, ""}, true); }

void fail_to_api(Error e) { unwind(std::move(e), true); }

namespace detail {

std::optional<Error> recover_erased(void (*body)(void*), void* context, bool internal) {
  Scope scope;
  scope.outer = innermost;
  scope.internal = internal;
  // bytes::Driver restores the path in its destructor, which an unwind skips.
  const std::string driver = bytes::driver();
  innermost = &scope;
  if (setjmp(scope.env) == 0) {
    body(context);
    innermost = scope.outer;
    return std::nullopt;
  }
  innermost = scope.outer;
  bytes::restore_driver(driver);
  ++unwinds;
  return std::move(scope.error);
}

}  // namespace detail

// nlohmann/json's JSON_THROW in this build (no_exceptions.h): its type and
// range errors are bugs in core, reported as internal errors.
void json_threw(const std::exception& e) { fail_internal(e.what()); }

#endif  // VRAM_NO_EXCEPTIONS

}  // namespace vram
