#include "train/runs/live_status.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "framework/runtime.h"
#include "framework/parse.h"
#include "train/runs/loop.h"
#include "train/runs/run_meter.h"

namespace amlp::train {

namespace {

// A terminal's line is redrawn this often.
constexpr double kTerminalTick_s = 0.25;

void write_stderr(const std::string& s) {
  for (size_t off = 0; off < s.size();) {
    const ssize_t n = ::write(STDERR_FILENO, s.data() + off, s.size() - off);
    if (n <= 0) return;  // a status line is not worth failing a run for
    off += static_cast<size_t>(n);
  }
}

}  // namespace

std::string live_line(const LiveFigures& f) {
  char buf[256];
  char epoch[48] = "";
  if (f.epochs > 1) std::snprintf(epoch, sizeof epoch, "epoch %d/%d, ", f.epoch, f.epochs);
  std::snprintf(buf, sizeof buf, "%s: %s%d/%d batches queued, %d finished | backlog %d batch%s, %s | memory +%s (",
                f.label.c_str(), epoch, f.queued, f.batches, f.finished, f.backlog_batches, f.backlog_batches == 1 ? "" : "es",
                format_mb(double(f.backlog_bytes)).c_str(), format_mb(double(f.in_use_bytes)).c_str());
  std::string t = buf;
  if (f.predicted_bytes) t += "predicted " + format_mb(double(f.predicted_bytes)) + ", ";
  t += "budget " + (f.budget_bytes ? format_mb(double(f.budget_bytes)) : std::string("none"));
  std::snprintf(buf, sizeof buf, ") | %.0f samples/s", f.samples_per_s);
  return t + buf;
}

LiveStatus::LiveStatus(const RunSpec& spec, const std::vector<Device>& devices, size_t budget_bytes,
                       size_t start_bytes)
    : spec_(spec), devices_(devices), budget_(budget_bytes), start_bytes_(start_bytes),
      terminal_(::isatty(STDERR_FILENO) == 1), t0_(std::chrono::steady_clock::now()) {
  if (spec_.options.quiet) return;
  last_seq_.reserve(static_cast<size_t>(std::max(0, spec_.options.total_batches())));
  thread_ = std::thread([this] { loop(); });
}

LiveStatus::~LiveStatus() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  clear();
}

void LiveStatus::batch_queued(int batch, uint64_t last_seq, size_t bytes_per_batch) {
  if (!thread_.joinable()) return;
  std::lock_guard<std::mutex> lk(mu_);
  queued_ = batch;
  bytes_per_batch_ = bytes_per_batch;
  last_seq_.push_back(last_seq);
}

void LiveStatus::clear() {
  if (!terminal_) return;
  std::lock_guard<std::mutex> lk(mu_);
  if (shown_) write_stderr("\r\033[K");
  shown_ = false;
}

LiveFigures LiveStatus::figures() {
  LiveFigures f;
  f.label = spec_.label;
  f.batches = spec_.options.total_batches();
  f.epochs = spec_.options.epochs;
  f.budget_bytes = budget_;
  size_t in_use = 0;
  for (const Device& d : devices_) {
    in_use += memory_stats(d).bytes_in_use;
    f.backlog_bytes += queue_stats(d).backlog_bytes;
  }
  const uint64_t completed = queue_stats(devices_.front()).completed;
  f.in_use_bytes = in_use > start_bytes_ ? in_use - start_bytes_ : 0;
  std::lock_guard<std::mutex> lk(mu_);
  f.queued = queued_;
  f.epoch =
      spec_.options.batches > 0
          ? std::min(spec_.options.epochs, std::max(1, (queued_ + spec_.options.batches - 1) / spec_.options.batches))
          : 1;
  f.finished = static_cast<int>(std::upper_bound(last_seq_.begin(), last_seq_.end(), completed) - last_seq_.begin());
  f.backlog_batches = f.queued - f.finished;
  if (spec_.options.alloc == AllocPolicy::Enqueue) f.predicted_bytes = size_t(f.backlog_batches) * bytes_per_batch_;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  f.samples_per_s = s > 0 ? double(f.finished) * double(spec_.options.batch_size) / s : 0;
  return f;
}

void LiveStatus::draw() {
  const std::string line = live_line(figures());
  std::lock_guard<std::mutex> lk(mu_);
  if (stop_) return;
  if (terminal_) {
    // Cut to the terminal's width: a line that wrapped could not be redrawn in place.
    winsize ws{};
    const size_t width = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : line.size();
    write_stderr("\r\033[K" + line.substr(0, width));
    shown_ = true;
  } else {
    write_stderr(line + "\n");
  }
}

void LiveStatus::loop() {
  const double tick = terminal_ ? kTerminalTick_s : spec_.options.status_every_s;
  const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(tick));
  auto next = t0_ + period;
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    if (wake_.wait_until(lk, next, [this] { return stop_; })) break;
    lk.unlock();
    draw();
    lk.lock();
    next += period;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + period;  // a draw that took longer than a tick: no burst after
  }
}

namespace {

// The live status as a part of the loop: a count published as each batch is
// queued; the line cleared before any of the run's own lines is printed.
class LiveStatusPart : public LoopPart {
 public:
  explicit LiveStatusPart(Loop& loop)
      : loop_(loop),
        live_(loop.spec, loop.devices, loop.result.measured.memory_limit_bytes, loop.result.measured.start_bytes) {
    loop.before_print = [this] { live_.clear(); };
  }
  ~LiveStatusPart() override { loop_.before_print = nullptr; }
  void after_batch(Batch& b) override {
    live_.batch_queued(b.number, loop_.meter.last_queued_seq(), loop_.meter.bytes_per_batch());
  }

 private:
  Loop& loop_;
  LiveStatus live_;
};

}  // namespace

std::unique_ptr<LoopPart> live_status_part(Loop& loop) { return std::make_unique<LiveStatusPart>(loop); }

}  // namespace amlp::train
