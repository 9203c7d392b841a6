// Covers train/options/options.cpp, option_table.cpp, option_values.cpp, option_checks.cpp, config_file.cpp,
// help_text.cpp, program_options.cpp, train/plan/outputs.cpp (tagged_path).
// test_train_options.cpp — train_mlp's options: defaults, every kind of bad
// input (one line naming the culprit, exit status 2, nothing written), config
// files (precedence, comments, a byte-order mark, FIFOs and pipes), and the
// small parsers behind them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>

#include "framework/device.h"
#include "framework/parse.h"
#include "framework/nn/sgd.h"
#include "train/options/file_options.h"
#include "train/options/option_table.h"
#include "train/options/options.h"
#include "train/options/program_options.h"
#include "train/plan/outputs.h"
#include "train/plan/plan.h"
#include "train/options/sync_policy.h"
#include "train/train_test_util.h"
#include "train/studies/comparisons.h"

namespace amlp::train {
namespace {

using amlp::testing::program_path;
using amlp::testing::Ran;
using amlp::testing::run_command;
using amlp::testing::source_file;
using amlp::testing::run_train_mlp;
using amlp::testing::ScratchDir;

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::istringstream in(s);
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

ParseOutcome parse(const std::string& args) { return parse_options(words(args)); }

TEST(TrainOptions, DefaultsAreTheBooksExperiment) {
  ParseOutcome p = parse("");
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  const Options& o = p.options;
  EXPECT_EQ(o.batches, 100);
  EXPECT_EQ(o.batch_size, 1024);
  EXPECT_EQ(o.features, 512);
  EXPECT_EQ(o.hidden.hidden, (std::vector<int64_t>{2048, 512}));
  EXPECT_FLOAT_EQ(o.lr, 0.005f);
  EXPECT_EQ(o.sync.policy, SyncPolicy::EveryBatch);
  EXPECT_EQ(o.max_pending_ops, 0u);
  EXPECT_EQ(o.max_pending_bytes, 0u);
  EXPECT_FALSE(o.studies.asked<CompareSettings>());
  EXPECT_EQ(o.device_text, "auto");
  EXPECT_EQ(o.device_fell_back, cuda_device_count() == 0);
  EXPECT_FALSE(o.memory_limit.has_value()) << "--memory-limit defaults to auto (the device's own budget)";
}

// auto: the device's default budget; none and 0: no cap; a byte size: that cap.
TEST(TrainOptions, MemoryLimitIsAutoNoneOrAByteSize) {
  EXPECT_FALSE(parse("--memory-limit auto").options.memory_limit.has_value());
  for (const char* none : {"--memory-limit none", "--memory-limit 0"}) {
    ParseOutcome p = parse(none);
    ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
    ASSERT_TRUE(p.options.memory_limit.has_value()) << none;
    EXPECT_EQ(*p.options.memory_limit, 0u) << none;
  }
  ParseOutcome p = parse("--memory-limit 200MiB");
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  EXPECT_EQ(p.options.memory_limit, std::optional<size_t>(size_t(200) << 20));
  for (const char* bad : {"--memory-limit None", "--memory-limit -1", "--memory-limit unlimited", "--memory-limit ''"}) {
    p = parse(bad);
    EXPECT_EQ(p.status, ParseStatus::Error) << bad;
    EXPECT_EQ(p.exit_code, 2) << bad;
    EXPECT_NE(p.message.find("--memory-limit must be 'auto', 'none' or a byte size"), std::string::npos) << p.message;
  }
}

TEST(TrainOptions, ReadsEveryOption) {
  ParseOutcome p = parse(
      "--device cpu:1 --sync every=4 --batches 7 --batch-size 32 --features 16 --hidden 8,4,2 --lr 0.1 "
      "--momentum 0.9 --seed 99 --max-pending 12 --max-pending-bytes 3MiB --memory-limit 1G --blocking --tf32 "
      "--check-finite --compare --compare-every 3,5");
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  const Options& o = p.options;
  EXPECT_EQ(o.device, Device::cpu(1));
  EXPECT_EQ(o.sync, (SyncMode{SyncPolicy::EveryK, 4}));
  EXPECT_EQ(o.batches, 7);
  EXPECT_EQ(o.batch_size, 32);
  EXPECT_EQ(o.features, 16);
  EXPECT_EQ(o.hidden.hidden, (std::vector<int64_t>{8, 4, 2}));
  EXPECT_FLOAT_EQ(o.lr, 0.1f);
  EXPECT_FLOAT_EQ(o.momentum, 0.9f);
  EXPECT_EQ(o.seed, 99u);
  EXPECT_EQ(o.max_pending_ops, 12u);
  EXPECT_EQ(o.max_pending_bytes, size_t(3) << 20);
  ASSERT_TRUE(o.memory_limit.has_value());
  EXPECT_EQ(*o.memory_limit, size_t(1) << 30);
  EXPECT_TRUE(o.blocking && o.tf32 && o.check_finite);
  ASSERT_NE(o.studies.find<CompareSettings>(), nullptr);
  EXPECT_EQ(o.studies.find<CompareSettings>()->every, (std::vector<int>{3, 5}));
}

TEST(TrainOptions, HelpDocumentsEveryOptionWithItsDefault) {
  ParseOutcome p = parse("--help");
  ASSERT_EQ(p.status, ParseStatus::Exit);
  EXPECT_EQ(p.exit_code, 0);
  for (const char* opt : {"--device",
                          "--sync",
                          "--batches",
                          "--batch-size",
                          "--features",
                          "--hidden",
                          "--lr",
                          "--momentum",
                          "--seed",
                          "--max-pending",
                          "--max-pending-bytes",
                          "--memory-limit",
                          "--blocking",
                          "--tf32",
                          "--check-finite",
                          "--memory-log",
                          "--trace",
                          "--summary-json",
                          "--compare",
                          "--compare-every",
                          "--config",
                          "--help",
                          "--version"})
    EXPECT_NE(p.message.find(opt), std::string::npos) << opt;
  for (const char* def : {"(=auto)", "(=batch)", "(=100)", "(=1024)", "(=512)", "(=2048,512)", "(=0.005)"})
    EXPECT_NE(p.message.find(def), std::string::npos) << def;
  EXPECT_TRUE(p.help);
  // The rest of --help: the models' (train/predict/predict.h) and what --compare runs.
  EXPECT_NE(help_after_models().find("mem.none.csv"), std::string::npos);  // the --compare log names
  const Ran r = run_train_mlp("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind(p.message, 0), 0u) << "train_mlp --help starts with the option table";
  EXPECT_NE(r.out.find("Memory model"), std::string::npos);
  EXPECT_NE(r.out.find(help_after_models()), std::string::npos);
}

// An options table in Markdown: a row per option in order, the value's name
// and default as --help writes them, a '|' escaped (in `code` too) and a '<'
// outside `code`, so the page reads as --help does.
TEST(OptionTable, MarkdownHasARowPerOptionAsHelpWritesIt) {
  po::options_description d("Some", kHelpWidth, kHelpWidth / 2);
  d.add_options()("help,h", "print it");
  Declare(d)
      .option<int>("batches", "N", "100", int_in(1, 1000), "minibatches, in [1, 1000]")
      .option<std::string>("mode", "off|on", "", [](const std::string& t) { return t; }, "on <rank> or `x|<y>`")
      .flag("quiet", "no status (default: off)")
      .text("trace", "FILE.json", "", "a trace");
  EXPECT_EQ(markdown_table(d),
            "| option (default) | meaning |\n"
            "|---|---|\n"
            "| `-h`, `--help` | print it |\n"
            "| `--batches N` (`100`) | minibatches, in [1, 1000] |\n"
            "| `--mode off\\|on` | on \\<rank> or `x\\|<y>` |\n"
            "| `--quiet` | no status (default: off) |\n"
            "| `--trace FILE.json` | a trace |\n");
}

// docs/cli.md's tables of the options are the ones option_table.cpp declares,
// row for row (each option, its value, its default and its help, as --help
// prints them), so the page cannot drift from the declarations.
TEST(OptionTable, CliMdsTablesAreTheDeclaredOnes) {
  EXPECT_TRUE(amlp::testing::page_section_is("docs/cli.md", "<!-- options: train/options/option_table.cpp -->\n",
                                              "<!-- /options -->", options_markdown(),
                                              "train/options/option_table.cpp"));
}

TEST(TrainOptions, VersionPrintsTheVersionString) {
  ParseOutcome p = parse("--version");
  ASSERT_EQ(p.status, ParseStatus::Exit);
  EXPECT_EQ(p.message.rfind("asyncmlp ", 0), 0u) << p.message;
}

// --- bad input: one line naming the culprit, exit status 2 ---------------------

struct BadCase {
  const char* args;
  const char* culprit;  // the message must contain this
};

class BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInput, IsOneLineNamingTheCulpritWithStatus2) {
  ParseOutcome p = parse(GetParam().args);
  ASSERT_EQ(p.status, ParseStatus::Error) << GetParam().args;
  EXPECT_EQ(p.exit_code, kExitBadInput);
  EXPECT_NE(p.message.find(GetParam().culprit), std::string::npos) << p.message;
  EXPECT_EQ(p.message.find('\n'), std::string::npos) << p.message;
}

INSTANTIATE_TEST_SUITE_P(
    TrainOptions, BadInput,
    ::testing::Values(
        BadCase{"--bogus", "unknown option '--bogus'"}, BadCase{"--batche 5", "'--batche'"},
        BadCase{"stray", "unexpected argument 'stray'"}, BadCase{"--batches", "'--batches' needs a value"},
        BadCase{"--batches 1 --batches 2", "more than once"},
        BadCase{"--batches 0", "--batches must be an integer in [1, 100000000] (got 0)"},
        BadCase{"--batches -3", "--batches must be an integer in [1, 100000000] (got -3)"},
        BadCase{"--batches x", "--batches must be an integer in [1, 100000000] (got 'x')"},
        // out of range names the range; numbers are decimal only
        BadCase{"--batch-size 100000000", "--batch-size must be an integer in [1, 16777216] (got 100000000)"},
        BadCase{"--batches 99999999999999999999", "--batches must be an integer in [1, 100000000] (got 99999999999999999999)"},
        BadCase{"--batches 0x10", "(got '0x10')"}, BadCase{"--batches +5", "(got '+5')"},
        BadCase{"--batches 5x", "(got '5x')"}, BadCase{"--features 1e3", "--features must be an integer in [1, 16777216] (got '1e3')"},
        BadCase{"--lr 0x10", "--lr must be a number (got '0x10')"}, BadCase{"--lr inf", "--lr must be a number (got 'inf')"},
        BadCase{"--lr +0.1", "--lr must be a number (got '+0.1')"}, BadCase{"--lr 1e999", "--lr"},
        BadCase{"--lr 1e300", "--lr must be positive and at most 3.4e+38"},
        BadCase{"--momentum 0x0", "--momentum must be a number (got '0x0')"},
        BadCase{"--seed 18446744073709551616", "--seed must be an integer in [0, 18446744073709551615]"},
        BadCase{"--max-pending 1099511627777", "--max-pending must be an integer in [0, 1099511627776]"},
        BadCase{"--memory-limit 2048TiB", "--memory-limit must be 'auto', 'none' or a byte size of at most 1024TiB"},
        BadCase{"--memory-limit 0x10", "(got '0x10')"},
        BadCase{"--sync every=0x2", "K in [1, 1000000000] (got 'every=0x2')"},
        BadCase{"--sync every=+2", "(got 'every=+2')"},
        BadCase{"--hidden 2048,0x10", "--hidden must be comma-separated integers in [1, 1048576] (got '2048,0x10'"},
        BadCase{"--hidden 2048,9999999", "item 2 is out of range"},
        BadCase{"--compare-every 2,1000001", "--compare-every must be comma-separated integers in [1, 1000000]"},
        BadCase{"--compare-every 2,10,2", "--compare-every names 2 twice (got '2,10,2')"},
        BadCase{"--device cpu:0x1", "unknown device 'cpu:0x1'"}, BadCase{"--device cpu:+1", "unknown device 'cpu:+1'"},
        BadCase{"--batch-size 0", "--batch-size"}, BadCase{"--batch-size -8", "--batch-size"},
        BadCase{"--features 0", "--features"}, BadCase{"--sync every=0", "--sync must be auto, batch, none or every=K with K in [1, 1000000000] (got 'every=0')"},
        BadCase{"--sync every=x", "'every=x'"}, BadCase{"--sync every=", "'every='"},
        BadCase{"--sync sometimes", "'sometimes'"}, BadCase{"--hidden 2048,,x", "'2048,,x'"},
        BadCase{"--hidden 2048,0", "'2048,0': item 2 is out of range"}, BadCase{"--lr 0", "--lr must be positive"},
        BadCase{"--lr -0.1", "--lr must be positive"}, BadCase{"--lr fast", "--lr must be a number"},
        BadCase{"--lr nan", "--lr"}, BadCase{"--momentum 1", "--momentum"}, BadCase{"--seed -1", "--seed"},
        BadCase{"--max-pending -1", "--max-pending"}, BadCase{"--max-pending-bytes 12XB", "'12XB'"},
        BadCase{"--max-pending-bytes MiB", "'MiB'"}, BadCase{"--memory-limit lots", "'lots'"},
        BadCase{"--memory-limit 1.5", "'1.5'"}, BadCase{"--compare-every 0", "--compare-every"},
        BadCase{"--compare-every 2,,3", "--compare-every"}, BadCase{"--device tpu", "unknown device 'tpu'"},
        BadCase{"--device cuda:99", "device 'cuda:99' is not there"},
        BadCase{"--device cpu:9", "device 'cpu:9' is not there"},
        BadCase{"--config /nonexistent/x.ini", "cannot read config file '/nonexistent/x.ini'"},
        BadCase{"--host-work 2", "--host-work must be 'match' or a duration in [0, 60s] with a unit ns, us, ms or s"},
        BadCase{"--host-work -1ms", "(got '-1ms')"}, BadCase{"--host-work 61s", "(got '61s')"},
        BadCase{"--host-work 0x10ms", "(got '0x10ms')"}, BadCase{"--host-work auto", "(got 'auto')"},
        BadCase{"--host-work-kind spin", "--host-work-kind must be wait or compute (got 'spin')"},
        BadCase{"--compare --compare-policies", "--compare and --compare-policies each print a table of their own"},
        BadCase{"--alloc later", "--alloc must be enqueue, run or stream (got 'later')"},
        BadCase{"--alloc Run", "--alloc must be enqueue, run or stream (got 'Run')"}, BadCase{"--alloc", "'--alloc' needs a value"},
        BadCase{"--alloc run --alloc enqueue", "more than once"},
        BadCase{"--data-queue yes", "unexpected argument 'yes'"}));

TEST(TrainOptions, AbsentGpuIsNamed) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible: 'cuda' is there";
  ParseOutcome p = parse("--device cuda");
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_NE(p.message.find("device 'cuda' is not there"), std::string::npos) << p.message;
}

TEST(TrainOptions, AllocAndDataQueue) {
  ParseOutcome p = parse("");
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  EXPECT_EQ(p.options.alloc, AllocPolicy::Enqueue);
  EXPECT_FALSE(p.options.data_queue);
  p = parse("--device cpu --alloc run --data-queue");
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  EXPECT_EQ(p.options.alloc, AllocPolicy::Run);
  EXPECT_TRUE(p.options.data_queue);
  p = parse("--device cpu --alloc stream");
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  EXPECT_EQ(p.options.alloc, AllocPolicy::Stream);
  ScratchDir dir;
  const std::string ini = dir.write("a.ini", "device = cpu\nalloc = run\ndata-queue = true\n");
  p = parse("--config " + ini);
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  EXPECT_EQ(p.options.alloc, AllocPolicy::Run);
  EXPECT_TRUE(p.options.data_queue);
  const std::string bad = dir.write("b.ini", "alloc = later\n");
  p = parse("--config " + bad);
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.exit_code, kExitBadInput);
  EXPECT_EQ(p.message, "'alloc' in " + bad + " must be enqueue, run or stream (got 'later')");
}

TEST(TrainOptions, DataQueueNeedsACpuDevice) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible: --device cuda is refused as absent (BadInput)";
  ParseOutcome p = parse("--device cuda --data-queue");
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.exit_code, kExitBadInput);
  EXPECT_NE(p.message.find("--data-queue needs a CPU device"), std::string::npos) << p.message;
  EXPECT_EQ(p.message.find('\n'), std::string::npos) << p.message;
}

// --- config files ----------------------------------------------------------------

TEST(TrainOptions, CommandLineBeatsConfigBeatsDefault) {
  ScratchDir dir;
  const std::string ini = dir.write("c.ini", "# comment\nbatches = 7\nbatch-size = 64\nsync = none\ncompare = true\n");
  ParseOutcome p = parse("--config " + ini + " --batches 9");
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  EXPECT_EQ(p.options.batches, 9);      // command line wins
  EXPECT_EQ(p.options.batch_size, 64);  // the file beats the default
  EXPECT_EQ(p.options.sync.policy, SyncPolicy::Never);
  EXPECT_TRUE(p.options.studies.asked<CompareSettings>());         // a switch from the file
  EXPECT_EQ(p.options.features, 512);                      // default
  ParseOutcome q = parse("--sync batch --config " + ini);  // order on the line does not matter
  ASSERT_EQ(q.status, ParseStatus::Run) << q.message;
  EXPECT_EQ(q.options.sync.policy, SyncPolicy::EveryBatch);
}

TEST(TrainOptions, ShippedConfigsParse) {
  for (const char* name : {"d2l.ini", "quick.ini", "sweep.ini", "host_work.ini"}) {
    ParseOutcome p = parse("--config " + source_file(std::string("configs/") + name));
    EXPECT_EQ(p.status, ParseStatus::Run) << name << ": " << p.message;
  }
  ParseOutcome hw = parse("--config " + source_file("configs/host_work.ini"));
  EXPECT_TRUE(hw.options.host_work.match_device);
  EXPECT_EQ(hw.options.host_work.kind, HostWorkKind::Wait);
  ParseOutcome d2l = parse("--config " + source_file("configs/d2l.ini"));
  EXPECT_EQ(d2l.options.batches, 100);
  EXPECT_EQ(d2l.options.batch_size, 1024);
  EXPECT_EQ(models::to_string(d2l.options.hidden), "2048,512");
}

TEST(TrainOptions, ConfigErrorsNameTheFileAndKey) {
  ScratchDir dir;
  const std::string unknown = dir.write("unknown.ini", "batches = 5\nbatchez = 6\n");
  ParseOutcome p = parse("--config " + unknown);
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_NE(p.message.find(unknown), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("unknown key 'batchez'"), std::string::npos) << p.message;

  const std::string bad = dir.write("bad.ini", "batches = 0\n");
  p = parse("--config " + bad);
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_NE(p.message.find("'batches' in " + bad), std::string::npos) << p.message;
  // Also where the command line sets the key: the file is bad input whatever
  // overrides it (a parser that skipped overridden keys would accept it).
  p = parse("--config " + bad + " --batches 3");
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.message, "'batches' in " + bad + " must be an integer in [1, 100000000] (got 0)");
  p = parse("--lr 0.1 --config " + dir.write("bad_lr.ini", "lr = 0x10\n"));
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_NE(p.message.find("'lr' in "), std::string::npos) << p.message;

  const std::string syntax = dir.write("syntax.ini", "just words\n");
  p = parse("--config " + syntax);
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_NE(p.message.find(syntax), std::string::npos) << p.message;

  p = parse("--config " + dir.path());
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_NE(p.message.find("it is a directory"), std::string::npos) << p.message;

  const std::string cfg_in_cfg = dir.write("nested.ini", "config = other.ini\n");
  p = parse("--config " + cfg_in_cfg);
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_NE(p.message.find("unknown key 'config'"), std::string::npos) << p.message;
}

TEST(TrainOptions, AKeyTwiceInAConfigFileIsAnErrorNamingTheFileAndKey) {
  ScratchDir dir;
  const std::string ini = dir.write("twice.ini", "batches = 5\nlr = 0.1\nbatches = 6\n");
  ParseOutcome p = parse("--config " + ini);
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.exit_code, kExitBadInput);
  EXPECT_EQ(p.message, ini + ": key 'batches' is given more than once");
  // Also when the command line sets the key, so the file's values are never read.
  p = parse("--batches 2 --config " + ini);
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.message, ini + ": key 'batches' is given more than once");
  const std::string once = dir.write("once.ini", "batches = 5\nlr = 0.1\n");
  EXPECT_EQ(parse("--config " + once).status, ParseStatus::Run);
}

TEST(TrainOptions, ConfigValuesAreReadByTheSameParsers) {
  ScratchDir dir;
  const std::string hex = dir.write("hex.ini", "lr = 0x10\n");
  ParseOutcome p = parse("--config " + hex);
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.message, "'lr' in " + hex + " must be a number (got '0x10')");
  const std::string big = dir.write("big.ini", "batch-size = 100000000\n");
  p = parse("--config " + big);
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.message, "'batch-size' in " + big + " must be an integer in [1, 16777216] (got 100000000)");
  const std::string dev = dir.write("dev.ini", "device = tpu\n");
  p = parse("--config " + dev);
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.message, "'device' in " + dev + ": unknown device 'tpu' (expected auto, cpu, cpu:N, cuda or cuda:N)");
  // Spaces around '=' are the INI syntax, not part of the value.
  const std::string spaced = dir.write("spaced.ini", "batches   =   7   \nmemory-limit=1.5GiB\n");
  p = parse("--config " + spaced);
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  EXPECT_EQ(p.options.batches, 7);
  ASSERT_TRUE(p.options.memory_limit.has_value());
  EXPECT_EQ(*p.options.memory_limit, size_t(3) << 29);
}

// A full-line ';' comment (INI's other comment mark) and a UTF-8 byte-order
// mark (what some editors put first) are read like '#' and like nothing,
// not as a syntax error or an unknown key '\xef\xbb\xbfbatches'.
TEST(TrainOptions, ConfigTakesSemicolonCommentsAndAByteOrderMark) {
  ScratchDir dir;
  const std::string ini =
      dir.write("c.ini", "\xEF\xBB\xBF; the quick run\nbatches = 7\n  ;\tindented comment\n# hash comment\nlr = 0.25\n");
  ParseOutcome p = parse("--config " + ini);
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  EXPECT_EQ(p.options.batches, 7);
  EXPECT_FLOAT_EQ(p.options.lr, 0.25f);
  // A ';' after a value is not a comment: the value is bad, as before.
  p = parse("--config " + dir.write("inline.ini", "batches = 7 ; seven\n"));
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_NE(p.message.find("'batches' in "), std::string::npos) << p.message;
  // A byte-order mark anywhere but first is part of the key.
  p = parse("--config " + dir.write("mid.ini", "batches = 7\n\xEF\xBB\xBFlr = 0.25\n"));
  ASSERT_EQ(p.status, ParseStatus::Error);
}

// A config file in UTF-16 or UTF-32 or with carriage-return-only line endings is named
// as such (not "unknown key '\xff\xfeb\x00...'" or "must be an integer (got
// '3\rbatch-size = 32...')"); \r\n line endings are read as \n.
TEST(TrainOptions, ConfigInUtf16OrWithCrOnlyLinesIsNamedAsSuch) {
  ScratchDir dir;
  std::string utf16 = "\xFF\xFE";
  for (char c : std::string("batches = 3\n")) utf16 += std::string{c, '\0'};
  std::string utf32le("\xFF\xFE\0\0", 4), utf32be("\0\0\xFE\xFF", 4);
  for (char c : std::string("batches = 3\n")) {
    utf32le += std::string{c, '\0', '\0', '\0'};
    utf32be += std::string{'\0', '\0', '\0', c};
  }
  const std::pair<std::string, std::string> cases[] = {
      {utf16, "it is UTF-16 (it begins with a UTF-16 byte-order mark): save it as UTF-8"},
      {utf32le, "it is UTF-32 (it begins with a UTF-32 byte-order mark): save it as UTF-8"},
      {utf32be, "it is UTF-32 (it begins with a UTF-32 byte-order mark): save it as UTF-8"},
      {utf16.substr(2), "it holds NUL bytes, which no INI text does (UTF-16 or UTF-32 without a byte-order mark?)"},
      {"batches = 3\rbatch-size = 32\r", "its lines end in a carriage return alone (classic Mac OS line endings)"},
  };
  int i = 0;
  for (const auto& [text, says] : cases) {
    const std::string ini = dir.write("c" + std::to_string(i++) + ".ini", text);
    const ParseOutcome p = parse("--config " + ini);
    ASSERT_EQ(p.status, ParseStatus::Error) << says;
    EXPECT_EQ(p.exit_code, kExitBadInput);
    EXPECT_EQ(p.message.rfind("config file '" + ini + "': " + says, 0), 0u) << p.message;
  }
  const ParseOutcome crlf = parse("--config " + dir.write("crlf.ini", "batches = 3\r\nbatch-size = 32\r\n"));
  ASSERT_EQ(crlf.status, ParseStatus::Run) << crlf.message;
  EXPECT_EQ(crlf.options.batches, 3);
  EXPECT_EQ(crlf.options.batch_size, 32);
}

// "" names no config file and no layers: both are bad input (not a run that
// reads no file, or one that trains a lone Dense(1)).
TEST(TrainOptions, AnEmptyConfigOrHiddenIsRefused) {
  ParseOutcome p = parse_options(std::vector<std::string>{"--config", ""});
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.exit_code, kExitBadInput);
  EXPECT_EQ(p.message, "--config must name a file (got '')");
  p = parse_options(std::vector<std::string>{"--hidden", ""});
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.message, "--hidden must be comma-separated integers in [1, 1048576] (got '': it is empty)");
  ScratchDir dir;
  const std::string ini = dir.write("c.ini", "hidden =\n");
  p = parse("--config " + ini);
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.message, "'hidden' in " + ini + " must be comma-separated integers in [1, 1048576] (got '': it is empty)");
}

// Every option that names a file refuses an empty path, on the command line
// and in the config (`save =`), as --config does, instead of taking it for
// the option left out (the run would start from the seed, save nothing).
TEST(TrainOptions, AnEmptyPathIsRefusedForEveryFileOption) {
  ScratchDir dir;
  for (const FileOption& f : file_options()) {
    SCOPED_TRACE(f.option);
    const std::string option = std::string("--") + f.option;
    ParseOutcome p = parse_options(std::vector<std::string>{option, ""});
    ASSERT_EQ(p.status, ParseStatus::Error);
    EXPECT_EQ(p.exit_code, kExitBadInput);
    EXPECT_EQ(p.message, option + " must name a file (got '')");
    if (std::string(f.option) == "config") continue;  // a key of the command line only
    const std::string ini = dir.write(std::string("empty-") + f.option + ".ini", std::string(f.option) + " =\n");
    p = parse("--config " + ini);
    ASSERT_EQ(p.status, ParseStatus::Error);
    EXPECT_EQ(p.message, option + " must name a file (got '')");
  }
}

// --lr and --momentum are checked as the floats SGD takes, by SGD's own
// check: at each option's boundaries the option check and the engine's
// agree, so nothing the options accept is refused when the run starts.
TEST(TrainOptions, LrAndMomentumAgreeWithSgdAtTheirBoundaries) {
  const auto engine_takes = [](float lr, float momentum) { return sgd_settings_problem(lr, momentum).empty(); };
  for (const std::string lr : {"1e-46", "7e-46", "8e-46", "1.4e-45", "1e-45", "1e-38", "3.4028234e38", "3.5e38", "0.005"}) {
    SCOPED_TRACE(lr);
    const ParseOutcome p = parse("--lr " + lr);
    const bool taken = p.status == ParseStatus::Run;
    const double v = std::stod(lr);
    const bool fits = v <= std::numeric_limits<float>::max();
    EXPECT_EQ(taken, fits && engine_takes(static_cast<float>(v), 0.f)) << p.message;
    if (!taken) EXPECT_EQ(p.message.rfind("--lr must be positive", 0), 0u) << p.message;
  }
  EXPECT_EQ(parse("--lr 1e-46").message,
            "--lr must be positive and at most 3.4e+38, a float's largest (got 1e-46, which is 0 as a float)");
  for (const std::string m : {"0", "0.5", "0.9999999", "0.99999997", "0.99999999", "0.99999999999", "1"}) {
    SCOPED_TRACE(m);
    const ParseOutcome p = parse("--momentum " + m);
    const bool taken = p.status == ParseStatus::Run;
    const double v = std::stod(m);
    EXPECT_EQ(taken, engine_takes(0.005f, static_cast<float>(v))) << p.message;
    if (!taken) EXPECT_EQ(p.message.rfind("--momentum must be in [0, 1)", 0), 0u) << p.message;
  }
  EXPECT_EQ(parse("--momentum 0.99999999999").message,
            "--momentum must be in [0, 1) (got 0.99999999999, which is 1 as a float)");
  // What the options take, the engine takes: the boundary cases run.
  const Ran r = run_train_mlp("--device cpu --quiet --batches 1 --batch-size 8 --features 4 --hidden 4 --lr 1.4e-45 --momentum 0.99999997");
  EXPECT_EQ(r.code, 0) << r.err;
}

// A config that is a pipe is read as its writer writes, to its end: here the
// writer sends two lines some time apart, then closes (the shell's
// `--config <(...)` and `--config /dev/stdin` are such pipes).
TEST(TrainOptions, AConfigFromAPipeIsReadToItsWritersEnd) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([fd = fds[1]] {
    const std::string first = "batches = 9\n", second = "lr = 0.5\n";
    if (::write(fd, first.data(), first.size()) >= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (::write(fd, second.data(), second.size()) < 0) ADD_FAILURE() << "write: " << std::strerror(errno);
    }
    ::close(fd);
  });
  const ParseOutcome p = parse("--config /dev/fd/" + std::to_string(fds[0]));
  writer.join();
  ::close(fds[0]);
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  EXPECT_EQ(p.options.batches, 9);
  EXPECT_FLOAT_EQ(p.options.lr, 0.5f);
}

TEST(TrainOptions, ValuesWithWhitespaceOrEmptyAreRejected) {
  for (const char* v : {" 5", "5 ", "5\n", "", "\t"}) {
    ParseOutcome p = parse_options(std::vector<std::string>{"--batches", v});
    ASSERT_EQ(p.status, ParseStatus::Error) << "'" << v << "'";
    EXPECT_EQ(p.message.find('\n'), std::string::npos) << p.message;
    EXPECT_EQ(p.message.rfind("--batches must be an integer in [1, 100000000] (got '", 0), 0u) << p.message;
  }
  ParseOutcome p = parse_options(std::vector<std::string>{"--batches=5\n6"});
  ASSERT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.message, "--batches must be an integer in [1, 100000000] (got '5\\n6')");
}

TEST(TrainOptions, LeadingZerosAreDecimalNotOctal) {
  ParseOutcome p = parse("--batches 010 --seed 0018446744073709551615");
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  EXPECT_EQ(p.options.batches, 10);
  EXPECT_EQ(p.options.seed, 18446744073709551615u);
}

TEST(TrainOptions, HelpAndVersionWinOverBadValues) {
  EXPECT_EQ(parse("--batches 0 --help").status, ParseStatus::Exit);
  EXPECT_EQ(parse("--lr 0x10 --version").status, ParseStatus::Exit);
  EXPECT_EQ(parse("--help --bogus").status, ParseStatus::Error);  // an unknown option is still named
}

// --- the small parsers -------------------------------------------------------------

TEST(SyncPolicy, ParsesEveryModeAndSaysWhenToWait) {
  SyncMode b = parse_sync_mode("batch"), n = parse_sync_mode("none"), k = parse_sync_mode("every=3");
  EXPECT_EQ(b.policy, SyncPolicy::EveryBatch);
  EXPECT_EQ(n.policy, SyncPolicy::Never);
  EXPECT_EQ(k, (SyncMode{SyncPolicy::EveryK, 3}));
  for (int i = 1; i <= 9; ++i) {
    EXPECT_TRUE(b.syncs_after(i));
    EXPECT_FALSE(n.syncs_after(i));
    EXPECT_EQ(k.syncs_after(i), i % 3 == 0) << i;
  }
  EXPECT_EQ(to_string(k), "every=3");
  EXPECT_EQ(file_tag(k), "every3");
  EXPECT_EQ(to_string(parse_sync_mode(to_string(n))), "none");
  for (const char* bad : {"", "Batch", "every", "every=0", "every=-1", "every=x", "every=2x", "every=9999999999"})
    EXPECT_THROW(parse_sync_mode(bad), ParseError) << bad;
}

TEST(TrainOptions, TaggedPathsForCompare) {
  EXPECT_EQ(tagged_path("out/mem.csv", "none"), "out/mem.none.csv");
  EXPECT_EQ(tagged_path("mem.csv", "every10"), "mem.every10.csv");
  EXPECT_EQ(tagged_path("out.d/mem", "batch"), "out.d/mem.batch");
  EXPECT_EQ(tagged_path("out/.hidden", "batch"), "out/.hidden.batch");
}

// --- the real binary -------------------------------------------------------------------

class BinaryBadInput : public ::testing::TestWithParam<const char*> {};

// Exit status 2, exactly one line on stderr, and not one output file created.
TEST_P(BinaryBadInput, FailsUpFrontWritingNothing) {
  ScratchDir dir;
  const std::string outputs =
      " --memory-log " + dir.file("m.csv") + " --trace " + dir.file("t.json") + " --summary-json " + dir.file("s.json");
  Ran r = run_train_mlp(std::string(GetParam()) + outputs);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("train_mlp: error: ", 0), 0u) << r.err;
  EXPECT_TRUE(dir.empty());
}

INSTANTIATE_TEST_SUITE_P(TrainMlp, BinaryBadInput,
                         ::testing::Values("--bogus", "--batches 0", "--batch-size -1", "--sync every=0",
                                           "--sync every=x", "--hidden 2048,,x", "--lr 0", "--max-pending-bytes 12XB",
                                           "--config /nonexistent/x.ini", "--device tpu", "--device cuda:99",
                                           "--batch-size 100000000", "--lr 0x10", "--batches 99999999999999999999",
                                           "--memory-limit 2048TiB", "--memory-limit lots", "--memory-limit -1",
                                           "--memory-limit NONE", "--compare-every 2,,3",
                                           "--batches 2 --trace /nonexistent/t.json"));

// An output that cannot be written is refused before anything runs (the
// plan stage knows every file: one memory log per run of a comparison),
// naming its option, with status 2 and one line.
TEST(TrainMlp, AnUnwritableOutputIsRefusedUpFrontNamingItsOption) {
  const std::pair<const char*, const char*> cases[] = {
      {"--memory-log /nonexistent/m.csv", "--memory-log: cannot write '/nonexistent/m.csv'"},
      {"--memory-log /tmp", "it is a directory"},
      {"--trace /nonexistent/t.json", "--trace: cannot write"},
      {"--summary-json /nonexistent/s.json", "--summary-json: cannot write"},
      {"--compare --memory-log /nonexistent/m.csv", "'/nonexistent/m.batch.csv'"},
      {"--compare-policies --memory-log /nonexistent/m.csv", "'/nonexistent/m.enqueue.csv'"}};
  for (const auto& [args, want] : cases) {
    SCOPED_TRACE(args);
    const Ran r = run_train_mlp(std::string("--device cpu --batches 2 --batch-size 8 --hidden 4 ") + args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "nothing ran";
  }
}

// A config FIFO that no process writes to: one line and status 2 after a
// bounded wait, not a hang (`timeout` ends a run that waits for ever, TERM
// then KILL, with a status other than 2: a failure).
TEST(TrainMlp, AConfigFifoWithNoWriterIsOneLineNotAHang) {
  ScratchDir dir;
  const std::string fifo = amlp::testing::make_fifo(dir, "c.pipe");
  const Ran r = run_command("timeout -k 5 20 " + program_path("train_mlp") + " --config " + fifo);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_EQ(r.err, "train_mlp: error: cannot read config file '" + fifo +
                       "': nothing came in 5 s (a FIFO that no process writes to?)\n");
  EXPECT_EQ(r.out, "");
}

// The shell's process substitution: a pipe with its writer, read to its end.
TEST(TrainMlp, AConfigFromProcessSubstitutionRuns) {
  const Ran r = run_command("bash -c \"timeout -k 5 60 " + program_path("train_mlp") +
                            " --device cpu --quiet --batch-size 8 --hidden 4 --config <(printf 'batches=3\\nlr=0.01\\n')\"");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("3 batches of 8, lr 0.01,"), std::string::npos) << r.out;
}

// /dev/zero never ends: a config past 16 MiB is refused, not read for ever.
TEST(TrainMlp, AnEndlessConfigIsRefused) {
  const Ran r = run_command("timeout -k 5 60 " + program_path("train_mlp") + " --config /dev/zero");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err, "train_mlp: error: cannot read config file '/dev/zero': it is over 16 MiB: not an INI file of options\n");
}

TEST(TrainMlp, UnknownConfigKeyFailsUpFront) {
  ScratchDir dir;
  const std::string ini = dir.write("c.ini", "batches = 2\nnot-an-option = 1\n");
  Ran r = run_train_mlp("--config " + ini + " --memory-log " + dir.file("m.csv"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("'not-an-option'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.csv")));
}

TEST(TrainMlp, HelpAndVersionExitZero) {
  Ran h = run_train_mlp("--help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--max-pending-bytes"), std::string::npos);
  EXPECT_TRUE(h.err.empty());
  Ran v = run_train_mlp("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out.rfind("asyncmlp ", 0), 0u) << v.out;
}

TEST(TrainMlp, AutoSaysItFellBackToTheCpu) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible";
  Ran r = run_train_mlp("--device auto --batches 2 --batch-size 8 --hidden 4");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("falling back to cpu:0"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace amlp::train
