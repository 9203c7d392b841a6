#include "train/summary_json.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "framework/error.h"

namespace amlp::train {

namespace {

std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    o += c;
  }
  return o + "\"";
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";  // JSON has no NaN or Infinity
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::string summary_json(const std::vector<RunResult>& runs) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunResult& r = runs[i];
    os << (i ? ",\n " : "\n ") << "{";
    os << "\"mode\": " << quoted(r.mode) << ", \"label\": " << quoted(r.label) << ", \"device\": " << quoted(r.device)
       << ", \"batches\": " << r.batches << ", \"batch_size\": " << r.batch_size << ", \"wall_s\": " << number(r.wall_s)
       << ", \"samples_per_s\": " << number(r.samples_per_s) << ", \"mem_increase_bytes\": " << r.mem_increase_bytes
       << ", \"rss_increase_bytes\": " << r.rss_increase_bytes << ", \"peak_queue_depth\": " << r.peak_queue_depth
       << ", \"peak_backlog_batches\": " << r.peak_backlog_batches
       << ", \"peak_backlog_bytes\": " << r.peak_backlog_bytes << ", \"bytes_per_batch\": " << r.bytes_per_batch
       << ", \"predicted_increase_bytes\": " << r.predicted_increase_bytes
       << ", \"largest_tensor_bytes\": " << r.largest_tensor_bytes << ", \"start_bytes\": " << r.start_bytes
       << ", \"peak_bytes\": " << r.peak_bytes << ", \"end_bytes\": " << r.end_bytes
       << ", \"start_rss_bytes\": " << r.start_rss << ", \"peak_rss_bytes\": " << r.peak_rss
       << ", \"end_rss_bytes\": " << r.end_rss << ", \"max_pending_ops\": " << r.max_pending_ops
       << ", \"max_pending_bytes\": " << r.max_pending_bytes << ", \"final_loss\": " << number(r.final_loss) << "}";
  }
  os << "\n]\n";
  return os.str();
}

void write_summary_json(const std::string& path, const std::vector<RunResult>& runs) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream os(tmp);
    if (!os) throw Error("cannot write summary '" + path + "'");
    os << summary_json(runs);
    if (!os.flush()) {
      std::remove(tmp.c_str());
      throw Error("cannot write summary '" + path + "'");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("cannot write summary '" + path + "'");
  }
}

}  // namespace amlp::train
