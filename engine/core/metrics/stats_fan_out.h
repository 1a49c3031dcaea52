// Hands every iteration's stats to several observers, in order (the
// Prometheus metrics and the periodic stats line, for one).
#pragma once

#include <vector>

#include "engine/core/iteration_stats.h"

namespace kvserve {

class StatsFanOut final : public StatsObserver {
 public:
  /// The observers are borrowed and must outlive this.
  explicit StatsFanOut(std::vector<StatsObserver*> observers) : observers_(std::move(observers)) {}
  void OnIteration(const IterationStats& stats) override {
    for (StatsObserver* observer : observers_) observer->OnIteration(stats);
  }

 private:
  std::vector<StatsObserver*> observers_;
};

}  // namespace kvserve
