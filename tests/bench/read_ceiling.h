// The machine's read bandwidth as the CPU backend can use it: every pool
// thread summing its own part of a 1 GiB buffer (vectorized by the compiler).
// A decode step streams the weights once, so this is its memory ceiling; a
// memcpy figure would count the writes too.
#pragma once

namespace kvserve::bench {

/// Best of 5 passes, bytes read per second.
double ReadCeiling();

}  // namespace kvserve::bench
