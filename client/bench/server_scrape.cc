#include "client/bench/server_scrape.h"

#include <httplib.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace kvserve::bench {

absl::StatusOr<MetricSnapshot> Scrape(const std::string& url) {
  // http://host:port/path
  const std::string prefix = "http://";
  if (url.rfind(prefix, 0) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--metrics_url must start with http://, got ", url));
  }
  const std::string rest = url.substr(prefix.size());
  const size_t slash = rest.find('/');
  const std::string host_port = rest.substr(0, slash);
  const std::string path = slash == std::string::npos ? "/metrics" : rest.substr(slash);
  httplib::Client http(("http://" + host_port).c_str());
  http.set_connection_timeout(2);
  auto res = http.Get(path.c_str());
  if (!res || res->status != 200) {
    return absl::UnavailableError(absl::StrCat("cannot scrape ", url));
  }
  MetricSnapshot snapshot;
  for (absl::string_view line : absl::StrSplit(res->body, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    double value;
    if (!absl::SimpleAtod(line.substr(space + 1), &value)) continue;
    snapshot[std::string(line.substr(0, space))] = value;
  }
  return snapshot;
}

double SumSeries(const MetricSnapshot& snapshot, const std::string& name) {
  double total = 0;
  for (const auto& [series, value] : snapshot) {
    if (series == name || series.rfind(name + "{", 0) == 0) total += value;
  }
  return total;
}

GaugePeakSampler::GaugePeakSampler(std::string url, std::string gauge)
    : url_(std::move(url)), gauge_(std::move(gauge)) {
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      absl::StatusOr<MetricSnapshot> s = Scrape(url_);
      if (s.ok()) peak_.store(std::max(peak_.load(), SumSeries(*s, gauge_)));
      for (int i = 0; i < 5 && !stop_.load(); ++i) absl::SleepFor(absl::Milliseconds(50));
    }
  });
}

GaugePeakSampler::~GaugePeakSampler() {
  stop_ = true;
  thread_.join();
}

}  // namespace kvserve::bench
