#include "framework/trace.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <vector>

#include "framework/error.h"

namespace amlp::trace {

std::atomic<bool> g_enabled{false};

namespace {

struct Event {
  char ph;           // 'X' span, 'C' counter
  int track;
  std::string name;
  uint64_t ts, dur;
  uint64_t seq;
  double value;
};

// Leaked on purpose: queue workers may still record while statics are torn down.
struct State {
  std::mutex mu;
  std::vector<std::string> tracks;
  std::vector<Event> events;
};
State& state() {
  static State* s = new State;
  return *s;
}

const auto t_start = std::chrono::steady_clock::now();

void json_escape(std::ostream& os, const std::string& s) {
  for (char c : s) {
    if (c == '"' || c == '\\') os << '\\' << c;
    else if (static_cast<unsigned char>(c) < 0x20) os << ' ';
    else os << c;
  }
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
  s.events.push_back({'X', track, name, b, e > b ? e - b : 0, seq, 0.0});
}

void counter(const char* name, uint64_t ts, double v) {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  s.events.push_back({'C', 0, name, ts, 0, 0, v});
}

void stop_and_write(const std::string& path) {
  g_enabled = false;
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  std::string tmp = path + ".tmp";
  {
    std::ofstream os(tmp);
    if (!os) throw Error("cannot write trace file '" + path + "'");
    os << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
    os << R"({"ph":"M","pid":1,"name":"process_name","args":{"name":"asyncmlp"}})";
    for (size_t i = 0; i < s.tracks.size(); ++i) {
      os << ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << i + 1 << ",\"name\":\"thread_name\",\"args\":{\"name\":\"";
      json_escape(os, s.tracks[i]);
      os << "\"}}";
      // The frontend's track first, then the queues in the order they were made.
      const size_t order = s.tracks[i].rfind("frontend", 0) == 0 ? 0 : i + 1;
      os << ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << i + 1
         << ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" << order << "}}";
    }
    for (const Event& e : s.events) {
      os << ",\n{\"ph\":\"" << e.ph << "\",\"pid\":1,\"tid\":" << e.track << ",\"ts\":" << e.ts << ",\"name\":\"";
      json_escape(os, e.name);
      os << "\"";
      if (e.ph == 'X') os << ",\"dur\":" << e.dur << ",\"args\":{\"seq\":" << e.seq << "}";
      if (e.ph == 'C') os << ",\"args\":{\"value\":" << e.value << "}";
      os << "}";
    }
    os << "\n]}\n";
    if (!os.flush()) throw Error("cannot write trace file '" + path + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error("cannot write trace file '" + path + "'");
}

}  // namespace amlp::trace
