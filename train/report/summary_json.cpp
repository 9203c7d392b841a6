#include "train/report/summary_json.h"

#include "framework/json.h"
#include "framework/write_file.h"
#include "train/report/run_figures.h"

namespace amlp::train {

namespace {

Json runs_json(const std::vector<RunResult>& runs) {
  Json doc = Json::array();
  for (const RunResult& r : runs) doc.push_back(run_json(r));
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
