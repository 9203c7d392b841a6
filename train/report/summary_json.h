// summary_json.h — the run summaries for scripts (--summary-json): a JSON
// array, one object per run, written with amlp::write_file
// (framework/write_file.h), so a reader never sees half a file. Each run's
// keys, units and meanings are declared once, in run_figures.h.
//
//   [{"mode": "none", "label": "none", "device": "cpu:0", "batches": 60, "batch_size": 256,
//     "wall_s": 0.41, "samples_per_s": 37463, "mem_increase_bytes": 188743680, ...,
//     "final_loss": 0.49,                     // a non-finite number is null
//     "status": "completed", "failed": false, "interrupted": false, "error": null, ...}]
// A failed run ("status": "failed", "error": the one line printed) and an
// interrupted one ("interrupted": true) carry what was measured until they stopped.
// A study may add sections of its own (--sweep's "sweep" and "sweep_model",
// train/studies/sweep.h): the file is then an object, {"runs": the array
// above, then each section}.
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
