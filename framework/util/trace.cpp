#include "framework/trace.h"

#include <chrono>
#include <mutex>
#include <vector>

#include "framework/json.h"
#include "framework/write_file.h"

namespace amlp::trace {

std::atomic<bool> g_enabled{false};

namespace {

struct Event {
  char ph;  // 'X' span, 'C' counter
  int track;
  std::string name;
  uint64_t ts, dur;
  uint64_t seq;
  double value;
  size_t label;  // State::labels' index; 0: none
};

// Leaked on purpose: queue workers may still record while statics are torn down.
struct State {
  std::mutex mu;
  std::vector<std::string> tracks;
  std::vector<Event> events;
  std::vector<std::string> labels{""};  // set_run_label's, each once; [0] is none
  size_t label = 0;                     // the current one
};
State& state() {
  static State* s = new State;
  return *s;
}

const auto t_start = std::chrono::steady_clock::now();

// One trace event, one line: the events are serialized one by one, so a long
// run's trace costs its text, not a document tree besides.
std::string line(const Json& event) { return event.dump(); }

std::string trace_json(const std::vector<std::string>& tracks, const std::vector<Event>& events,
                       const std::vector<std::string>& labels,
                       const std::vector<std::pair<std::string, std::string>>& other_data) {
  std::string out = "{\"displayTimeUnit\":\"ms\",";
  if (!other_data.empty()) {
    Json other = Json::object();
    for (const auto& [k, v] : other_data) other[k] = v;
    out += "\"otherData\":" + line(other) + ",";
  }
  out += "\"traceEvents\":[\n";
  out += line({{"ph", "M"}, {"pid", 1}, {"name", "process_name"}, {"args", {{"name", "asyncmlp"}}}});
  for (size_t i = 0; i < tracks.size(); ++i) {
    const size_t tid = i + 1;
    // The frontend's track first, then the queues in the order they were made.
    const size_t order = tracks[i].rfind("frontend", 0) == 0 ? 0 : tid;
    out += ",\n" + line({{"ph", "M"}, {"pid", 1}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", tracks[i]}}}});
    out += ",\n" + line({{"ph", "M"},
                         {"pid", 1},
                         {"tid", tid},
                         {"name", "thread_sort_index"},
                         {"args", {{"sort_index", order}}}});
  }
  for (const Event& e : events) {
    Json j{{"ph", std::string(1, e.ph)}, {"pid", 1}, {"tid", e.track}, {"ts", e.ts}, {"name", e.name}};
    if (e.ph == 'X') {
      j["dur"] = e.dur;
      j["args"] = {{"seq", e.seq}};
      if (e.label) j["args"]["run"] = labels[e.label];
    } else {
      j["args"] = {{"value", e.value}};
    }
    out += ",\n" + line(j);
  }
  return out + "\n]}\n";
}


}  // namespace

uint64_t now_us() {
  return static_cast<uint64_t>(
             std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t_start).count()) +
         1;  // never 0: 0 means "not tracing" to callers
}

int register_track(const std::string& name) {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  s.tracks.push_back(name);
  return static_cast<int>(s.tracks.size());  // tid 0 is left unused
}

int frontend_track() {
  static int t = register_track("frontend (enqueue)");
  return t;
}

void start() {
  frontend_track();
  State& s = state();
  {
    std::lock_guard<std::mutex> lk(s.mu);
    s.events.clear();
  }
  g_enabled = true;
}

void span(int track, const char* name, uint64_t b, uint64_t e, uint64_t seq) {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  s.events.push_back({'X', track, name, b, e > b ? e - b : 0, seq, 0.0, s.label});
}

void counter(const char* name, uint64_t ts, double v) {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  s.events.push_back({'C', 0, name, ts, 0, 0, v, 0});
}

void set_run_label(const std::string& label) {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  size_t i = 0;
  while (i < s.labels.size() && s.labels[i] != label) ++i;
  if (i == s.labels.size()) s.labels.push_back(label);
  s.label = i;
}

void stop_and_write(const std::string& path, const std::vector<std::pair<std::string, std::string>>& other_data) {
  g_enabled = false;
  State& s = state();
  std::string text;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    text = trace_json(s.tracks, s.events, s.labels, other_data);
  }
  write_file(path, text);
}

}  // namespace amlp::trace
