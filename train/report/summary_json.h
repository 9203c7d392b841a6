// summary_json.h — the run summaries for scripts (--summary-json): a JSON
// array, one object per run (framework/json.h), written with amlp::write_file
// (framework/write_file.h), so a reader never sees half a file.
//
//   [{"mode": "none", "label": "none", "device": "cpu:0", "batches": 60, "batch_size": 256,
//     "wall_s": 0.41, "samples_per_s": 37463, "mem_increase_bytes": 188743680, ...,
//     "final_loss": 0.49,                     // a non-finite number is null
//     "status": "completed", "failed": false, "interrupted": false, "error": null,
//     "batches_done": 60, "memory_limit_bytes": 21709037158,   // null: none
//     "memory_limit_source": "MemAvailable at start, less a 10% margin"}]
// A failed run ("status": "failed", "error": the one line printed) and an
// interrupted one ("interrupted": true) carry what was measured until they stopped.
// "sync_auto" is what --sync auto chose and why (null without it).
// "fresh_bytes", "fresh_s_per_gib" (0: not measured) and "fresh_s" are the
// throughput model's fresh-memory term (train/models/predict.h); "fresh_counted":
// fresh_s is the worker's measured backing time (else the probe's price).
// d per batch taken apart (CPU devices; "d_measured" false and zeros
// elsewhere): "d_kernels_s" + "d_fresh_s" (both measured) + "d_rest_s" (the
// remainder) = "device_s_per_batch"; the run's backing counters (seconds,
// bytes): "fresh_worker_s" (the lock and lookups included), "fresh_worker_populate_s",
// "fresh_backed_bytes" (the worker's), "fresh_populator_s",
// "fresh_populator_bytes". A run across
// processes (--distributed mpi, rank 0 writes the file) has "ranks": each
// rank's {"rank", "samples_per_s", "wall_s", "mem_increase_bytes",
// "predicted_increase_bytes", "host_s_per_batch", "device_s_per_batch"},
// and the communication term: "comm_alpha_s", "comm_beta_s_per_byte",
// "comm_exposed_s_per_batch" (otherwise empty and 0).
// With --sweep (train/studies/sweep.h) the file is an object instead: {"runs": the
// array above, "sweep": one row per (fraction, mode): "fraction", "mode",
// "run" (its index in runs), "host_work_s", "target_h_s", "h_s", "d_s",
// "x" (h_s / the sweep's d), "wall_s", "predicted_wall_s", "samples_per_s",
// "predicted_samples_per_s", "speedup", "predicted_speedup", "peak_backlog",
// "predicted_backlog", "mem_increase_bytes", "predicted_increase_bytes",
// "model_increase_bytes"; "sweep_model": {"device_s", "queue_host_s",
// "batches", "batch_size", "bytes_per_batch", "curves": one per mode: "mode",
// "every", "points": [{"x", "speedup", "backlog", "increase_bytes"}]}}.
#pragma once
#include <string>
#include <vector>

#include "train/plan/run_result.h"

namespace amlp::train {

// A study's own part of the document beside "runs" (--sweep's "sweep" and
// "sweep_model"): its key and its JSON text. With any, the document is an
// object: {"runs": [...], then each section in order}.
struct SummarySection {
  std::string name;
  std::string json;
};

std::string summary_json(const std::vector<RunResult>& runs, const std::vector<SummarySection>& sections = {});
// throws amlp::Error
void write_summary_json(const std::string& path, const std::vector<RunResult>& runs,
                        const std::vector<SummarySection>& sections = {});

}  // namespace amlp::train
