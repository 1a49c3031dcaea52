#include "kernels/cuda/pdl.h"

#include <atomic>

namespace kvserve::cuda {
namespace {
std::atomic<bool> enabled{true};
}  // namespace

void SetProgrammaticLaunch(bool on) { enabled.store(on, std::memory_order_relaxed); }
bool ProgrammaticLaunchEnabled() { return enabled.load(std::memory_order_relaxed); }

}  // namespace kvserve::cuda
