// option_values.cpp — the readers of the options' values (option_values.h).
#include "train/options/option_values.h"

#include <cstdio>
#include <limits>

#include "framework/error.h"
#include "framework/nn/sgd.h"
#include "framework/ops.h"
#include "framework/parse.h"

namespace amlp::train {

SyncChoice parse_sync_choice(const std::string& text) {
  if (text == "auto") return {SyncMode{SyncPolicy::EveryBatch, 1}, true};
  try {
    return {parse_sync_mode(text), false};
  } catch (const ParseError&) {  // the option's own name, and auto beside the modes
    throw ParseError("", "must be auto, batch, none or every=K with K in [1, " + std::to_string(kMaxSyncEvery) +
                             "] (got " + quote(text) + ")");
  }
}

DeviceChoice read_device(const std::string& t) {
  DeviceChoice c{t, {}, false};
  c.device = parse_device(t, &c.fell_back);
  return c;
}

DevicesChoice read_devices(const std::string& t) {
  DevicesChoice c{t, {}};
  if (t.empty()) return c;
  for (std::string_view item : split_list(t)) {
    const std::string name(item);
    if (name.empty() || name == "auto")
      throw ParseError("", "must be a comma-separated list of cpu:N or cuda:N (got " + quote(t) + ")");
    const Device d = parse_device(name);
    for (const Device& seen : c.devices)
      if (seen == d) throw ParseError("", "names " + d.str() + " twice (got " + quote(t) + ")");
    c.devices.push_back(d);
  }
  if (std::string why; !all_reduce_supported(c.devices, &why)) throw ParseError("", "cannot be reduced: " + why);
  return c;
}

namespace {

// ", which is 0 as a float" where the float SGD is given is not the value written.
std::string as_float(double v, float f) {
  if (static_cast<double>(f) == v) return "";
  char t[48];
  std::snprintf(t, sizeof t, ", which is %.9g as a float", static_cast<double>(f));
  return t;
}

}  // namespace

float read_lr(const std::string& t) {
  const double v = parse_float(t, "");
  const bool fits = v > 0 && v <= std::numeric_limits<float>::max();
  if (!fits || !sgd_settings_problem(static_cast<float>(v), 0.f).empty())
    throw ParseError("", "must be positive and at most 3.4e+38, a float's largest (got " + t +
                             (fits ? as_float(v, static_cast<float>(v)) : "") + ")");
  return static_cast<float>(v);
}

float read_momentum(const std::string& t) {
  const double v = parse_float(t, "");
  const bool fits = v >= 0 && v < 1;
  if (!fits || !sgd_settings_problem(1.f, static_cast<float>(v)).empty())
    throw ParseError("", "must be in [0, 1) (got " + t + (fits ? as_float(v, static_cast<float>(v)) : "") + ")");
  return static_cast<float>(v);
}

models::LayerSpec read_hidden(const std::string& t) {
  if (t.empty()) parse_int_list(t, "", 1, models::kMaxLayerWidth);  // throws: "(got '': it is empty)"
  return models::parse_layer_spec(t);
}

AllocPolicy read_alloc_policy(const std::string& t) {
  AllocPolicy p;
  if (alloc_policy_named(t, &p)) return p;
  throw ParseError("", "must be enqueue, run or stream (got " + quote(t) + ")");
}

bool read_on_off(const std::string& t) {
  if (t == "on") return true;
  if (t == "off") return false;
  throw ParseError("", "must be off or on (got " + quote(t) + ")");
}

size_t read_bytes(const std::string& t) { return static_cast<size_t>(parse_byte_size(t, "", kMaxByteSize)); }

std::optional<size_t> read_memory_limit(const std::string& t) {
  if (t == "auto") return std::nullopt;
  if (t == "none") return size_t(0);
  try {
    return read_bytes(t);
  } catch (const ParseError& e) {  // name the two words too
    rethrow_naming_words(e, "a byte size", "'auto', 'none'");
  }
}

double read_status_every(const std::string& t) {
  const double v = parse_float(t, "");
  if (!(v > 0 && v <= kMaxStatusEvery_s)) throw ParseError("", "must be in (0, 86400] seconds (got " + t + ")");
  return v;
}

bool read_distributed(const std::string& t, bool with_mpi) {
  if (t == "none") return false;
  if (t != "mpi") throw ParseError("", "must be none or mpi (got " + quote(t) + ")");
  if (!with_mpi)
    throw ParseError("", "mpi: this build has no MPI (configure with -DASYNCMLP_MPI=ON where an MPI is installed)");
  return true;
}

HostWorkKind parse_host_work_kind(const std::string& text) {
  if (text == "wait") return HostWorkKind::Wait;
  if (text == "compute") return HostWorkKind::Compute;
  throw ParseError("", "must be wait or compute (got " + quote(text) + ")");
}

HostWork parse_host_work(const std::string& text) {
  HostWork w;
  if (text == "match") {
    w.match_device = true;
    return w;
  }
  try {
    w.ns = parse_duration_ns(text, "", kMaxHostWorkNs);
  } catch (const ParseError& e) {  // name the word too
    rethrow_naming_words(e, "a duration", "'match'");
  }
  return w;
}

std::string read_last_batch(const std::string& t) {
  if (t != "drop" && t != "keep") throw ParseError("", "must be drop or keep (got " + quote(t) + ")");
  return t;
}

}  // namespace amlp::train
