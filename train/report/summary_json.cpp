#include "train/report/summary_json.h"

#include <cmath>


#include "framework/json.h"
#include "framework/write_file.h"

namespace amlp::train {

namespace {

// [[batch, loss], ...]: each loss the loop read, a non-finite one as null.
Json losses_json(const RunResult& r) {
  Json out = Json::array();
  for (const auto& [batch, loss] : r.losses)
    out.push_back({batch, std::isfinite(loss) ? Json(loss) : Json()});
  return out;
}

Json runs_json(const std::vector<RunResult>& runs) {
  Json doc = Json::array();
  for (const RunResult& r : runs) {
    Json devices = Json::array();
    for (const DeviceResult& d : r.per_device)
      devices.push_back({{"device", d.device},
                         {"rows_per_batch", d.rows_per_batch},
                         {"start_bytes", d.start_bytes},
                         {"peak_bytes", d.peak_bytes},
                         {"mem_increase_bytes", d.mem_increase_bytes},
                         {"bytes_per_batch", d.bytes_per_batch},
                         {"predicted_increase_bytes", d.predicted_increase_bytes},
                         {"peak_backlog_batches", d.peak_backlog_batches},
                         {"peak_queue_depth", d.peak_queue_depth},
                         {"peak_backlog_bytes", d.peak_backlog_bytes},
                         {"working_set_bytes", d.working_set_bytes},
                         {"device_s_per_batch", d.device_s_per_batch}});
    Json ranks = Json::array();
    for (const RankResult& k : r.ranks)
      ranks.push_back({{"rank", k.rank},
                       {"samples_per_s", k.samples_per_s},
                       {"wall_s", k.wall_s},
                       {"mem_increase_bytes", k.mem_increase_bytes},
                       {"predicted_increase_bytes", k.predicted_increase_bytes},
                       {"host_s_per_batch", k.host_s_per_batch},
                       {"device_s_per_batch", k.device_s_per_batch}});
    // Keys in this order; a non-finite number (final_loss of a diverged run) is written as null.
    const RunSpec& s = r.asked;
    doc.push_back({{"mode", to_string(s.sync)},
                   {"label", s.label},
                   {"device", r.device},
                   {"batches", s.batches},
                   {"batch_size", s.batch_size},
                   {"wall_s", r.wall_s},
                   {"samples_per_s", r.samples_per_s},
                   {"mem_increase_bytes", r.mem_increase_bytes},
                   {"rss_increase_bytes", r.rss_increase_bytes},
                   {"peak_queue_depth", r.peak_queue_depth},
                   {"peak_backlog_batches", r.peak_backlog_batches},
                   {"peak_backlog_bytes", r.peak_backlog_bytes},
                   {"bytes_per_batch", r.bytes_per_batch},
                   {"predicted_increase_bytes", r.predicted.increase_bytes},
                   {"largest_tensor_bytes", r.largest_tensor_bytes},
                   {"alloc_policy", to_string(s.alloc)},
                   {"data_queue", s.data_queue},
                   {"data_bytes_per_batch", r.data_bytes_per_batch},
                   {"peak_data_ahead_bytes", r.peak_data_ahead_bytes},
                   {"peak_data_lead_batches", r.peak_data_lead_batches},
                   {"working_set_bytes", r.working_set_bytes},
                   {"start_bytes", r.start_bytes},
                   {"peak_bytes", r.peak_bytes},
                   {"end_bytes", r.end_bytes},
                   {"start_rss_bytes", r.start_rss},
                   {"peak_rss_bytes", r.peak_rss},
                   {"end_rss_bytes", r.end_rss},
                   {"max_pending_ops", s.max_pending_ops},
                   {"max_pending_bytes", s.max_pending_bytes},
                   {"sync_auto", s.sync_chosen.empty() ? Json() : Json(s.sync_chosen)},
                   {"final_loss", r.final_loss},
                   {"losses", losses_json(r)},
                   {"status", to_string(r.status)},
                   {"failed", r.status == RunStatus::Failed},
                   {"interrupted", r.status == RunStatus::Interrupted},
                   {"error", r.error.empty() ? Json() : Json(r.error)},
                   {"batches_done", r.batches_done},
                   {"memory_limit_bytes",
                    r.memory_limit_bytes ? Json(r.memory_limit_bytes) : Json()},
                   {"memory_limit_source", r.memory_limit_source},
                   {"minor_faults", r.minor_faults},
                   {"minor_faults_per_batch", r.minor_faults_per_batch},
                   {"minor_faults_steady_per_batch", r.minor_faults_steady_per_batch},
                   {"host_work_s", s.host_work.ns * 1e-9},
                   {"host_work_kind", to_string(s.host_work.kind)},
                   {"host_s_per_batch", r.host_s_per_batch},
                   {"device_s_per_batch", r.device_s_per_batch},
                   {"model_every", r.predicted.every},
                   {"predicted_wall_s", r.predicted.wall_s},
                   {"data_parallel", r.data_parallel()},
                   {"blas_threads", r.blas_threads},
                   {"devices", devices},
                   {"device_allocs", r.device_allocs},
                   {"ops_per_batch", r.ops_per_batch},
                   {"fresh_bytes", r.fresh_bytes},
                   {"fresh_s_per_gib", r.fresh_s_per_gib},
                   {"fresh_s", r.predicted.fresh_s},
                   {"fresh_counted", r.fresh_counted},
                   {"d_measured", r.d_measured},
                   {"d_kernels_s", r.d_kernels_s},
                   {"d_fresh_s", r.d_fresh_s},
                   {"d_rest_s", r.d_rest_s},
                   {"fresh_worker_s", r.fresh_worker_s},
                   {"fresh_worker_populate_s", r.fresh_worker_populate_s},
                   {"fresh_backed_bytes", r.fresh_worker_bytes},
                   {"fresh_populator_s", r.fresh_populator_s},
                   {"fresh_populator_bytes", r.fresh_populator_bytes},
                   {"distributed", s.distributed},
                   {"ranks", ranks},
                   {"comm_alpha_s", r.comm_alpha_s},
                   {"comm_beta_s_per_byte", r.comm_beta_s_per_byte},
                   {"comm_exposed_s_per_batch", r.predicted.comm_exposed_s},
                   {"graph", s.graph ? Json{{"steps", r.graph.steps},
                                                              {"eager", r.graph.eager},
                                                              {"captured", r.graph.captured},
                                                              {"replayed", r.graph.replayed},
                                                              {"updated", r.graph.updated},
                                                              {"invalidations", r.graph.invalidations},
                                                              {"capture_failures", r.graph.capture_failures},
                                                              {"slot_bytes", r.graph.slot_bytes},
                                                              {"last_reason", r.graph.last_reason}}
                                     : Json()}});
    if (s.epochs > 1) {  // with --epochs only: one object per epoch that ended
      Json epochs = Json::array();
      for (const EpochResult& e : r.epochs)
        epochs.push_back({{"epoch", e.epoch},
                          {"batches", e.batches},
                          {"wall_s", e.wall_s},
                          {"samples_per_s", e.samples_per_s},
                          {"mem_increase_bytes", e.mem_increase_bytes},
                          {"peak_reserved_bytes", e.peak_reserved_bytes},
                          {"peak_backlog_batches", e.peak_backlog_batches},
                          {"host_s_per_batch", e.host_s_per_batch},
                          {"device_s_per_batch", e.device_s_per_batch},
                          {"predicted_samples_per_s", e.predicted_samples_per_s},
                          {"fresh_bytes", e.fresh_bytes},
                          {"fresh_worker_s", e.fresh_worker_s},
                          {"loss", e.loss}});
      doc.back()["epochs"] = {{"asked", s.epochs}, {"each", std::move(epochs)}};
    }
  }
  return doc;
}

}  // namespace

std::string summary_json(const std::vector<RunResult>& runs, const std::vector<SummarySection>& sections) {
  Json doc = runs_json(runs);
  if (!sections.empty()) {
    doc = Json{{"runs", std::move(doc)}};
    for (const SummarySection& s : sections) doc[s.name] = Json::parse(s.json);
  }
  return doc.dump(2) + "\n";
}

void write_summary_json(const std::string& path, const std::vector<RunResult>& runs,
                        const std::vector<SummarySection>& sections) {
  write_file(path, summary_json(runs, sections));
}

}  // namespace amlp::train
