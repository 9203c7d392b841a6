// Covers train/runs/trainer.cpp (load, save), train/plan/parameters_file.cpp,
// and --load/--save in train/options/option_table.cpp, through the real binary.
// --save writes the trained parameters as safetensors (also when a signal
// interrupts the run, after the queued batches); --load starts from them,
// checked before anything runs: a file that does not fit the model is one
// line naming the tensor and both shapes, status 2.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <limits>

#include "framework/nn/checkpoint.h"
#include "framework/ops.h"
#include "train/options/options.h"
#include "train/plan/parameters_file.h"
#include "train/train_test_util.h"

namespace amlp::train {
namespace {

using amlp::testing::Ran;
using amlp::testing::read_json;
using amlp::testing::run_train_mlp;
using amlp::testing::ScratchDir;
using amlp::testing::Spawned;
using amlp::testing::wait_for_lines;

const std::string kModel = "--device cpu --batch-size 32 --features 8 --hidden 16,8 --quiet ";

double final_loss(const std::string& summary) {
  const auto j = read_json(summary);
  return (j.is_array() ? j[0] : j)["final_loss"].get<double>();
}

TEST(TrainParameters, SaveWritesTheTrainedModelAndLoadStartsFromIt) {
  ScratchDir dir;
  const std::string p = dir.file("p.safetensors");
  Ran a = run_train_mlp(kModel + "--batches 6 --save " + p);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.out.find("parameters saved: '" + p + "'"), std::string::npos) << a.out;
  Options o;
  o.features = 8;
  o.hidden.hidden = {16, 8};
  const auto want = model_parameter_shapes(o);
  const std::vector<NamedValues> got = read_safetensors(p);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].first);
    EXPECT_EQ(got[i].shape, want[i].second) << got[i].name;
  }
  EXPECT_NE(got[1].values, std::vector<float>(16, 0.f)) << "dense0.bias starts at 0: trained, it moved";

  // Two runs from the file train alike, and not like a run from --seed.
  Ran b = run_train_mlp(kModel + "--batches 3 --load " + p + " --summary-json " + dir.file("b.json"));
  Ran c = run_train_mlp(kModel + "--batches 3 --load " + p + " --summary-json " + dir.file("c.json"));
  Ran d = run_train_mlp(kModel + "--batches 3 --summary-json " + dir.file("d.json"));
  ASSERT_EQ(b.code, 0) << b.err;
  ASSERT_EQ(c.code, 0) << c.err;
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(final_loss(dir.file("b.json")), final_loss(dir.file("c.json")));
  EXPECT_NE(final_loss(dir.file("b.json")), final_loss(dir.file("d.json")));
  // Six batches of training from the seed lowered the loss below the seed's start.
  EXPECT_LT(final_loss(dir.file("b.json")), final_loss(dir.file("d.json")));
}

TEST(TrainParameters, AFileThatDoesNotFitIsRefusedUpFrontNamingTheTensor) {
  ScratchDir dir;
  const std::string p = dir.file("p.safetensors");
  ASSERT_EQ(run_train_mlp(kModel + "--batches 2 --save " + p).code, 0);
  const std::string outputs = " --summary-json " + dir.file("s.json") + " --memory-log " + dir.file("m.csv");
  const std::string base = "--device cpu --batch-size 32 --quiet --batches 2 ";
  const std::pair<std::string, std::string> cases[] = {
      {"--features 8 --hidden 16,4 --load " + p, "tensor 'dense1.weight' is (8, 16) in the file, (4, 16) in the model"},
      {"--features 9 --hidden 16,8 --load " + p, "tensor 'dense0.weight' is (16, 8) in the file, (16, 9) in the model"},
      {"--features 8 --hidden 16 --load " + p, "tensor 'dense1.weight' is (8, 16) in the file, (1, 16) in the model"},
      {"--features 8 --hidden 16,8,4 --load " + p, "tensor 'dense2.weight' is (1, 8) in the file, (4, 8) in the model"},
      {"--load " + dir.file("none.safetensors"), "cannot read"},
      {"--load " + dir.write("t.safetensors", "not a tensor file at all"), "not a safetensors file"},
      {"--compare --save " + dir.file("q.safetensors"), "--save keeps one run's parameters: not with --compare"},
      {"--save " + dir.file("no/such/dir/q.safetensors"), "--save: cannot write"},
  };
  for (const auto& [args, want] : cases) {
    SCOPED_TRACE(args);
    const Ran r = run_train_mlp(base + args + outputs);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("s.json"))) << "nothing ran";
    EXPECT_FALSE(std::filesystem::exists(dir.file("m.csv"))) << "nothing ran";
  }
}

TEST(TrainParameters, AnInterruptedRunStillSavesWhatItTrained) {
  ScratchDir dir;
  const std::string p = dir.file("p.safetensors"), log = dir.file("m.csv");
  Spawned run("train_mlp", {"--device", "cpu", "--batches", "100000", "--batch-size", "32", "--features", "8",
                            "--hidden", "16,8", "--memory-log", log, "--save", p, "--summary-json", dir.file("s.json")});
  ASSERT_TRUE(run.running());
  ASSERT_TRUE(wait_for_lines(log, 1 + 5, [] { return false; })) << run.err_so_far();
  run.signal(SIGINT);
  const Ran r = run.wait();
  EXPECT_EQ(r.code, 130) << r.err;
  ASSERT_TRUE(std::filesystem::exists(p)) << r.err;
  EXPECT_EQ(read_safetensors(p).size(), 6u);
  const auto s = read_json(dir.file("s.json"));
  EXPECT_EQ((s.is_array() ? s[0] : s)["status"], "interrupted");
}

// A run that diverges writes nothing over a file: --save onto the --load file
// keeps the parameters it started from (the next --load still takes them), a
// --save file already there keeps its bytes, a new one is not created, and no
// temporary is left; the one line says the parameters were not saved.
TEST(TrainParameters, ADivergedRunSavesNothing) {
  ScratchDir dir;
  const std::string g = dir.file("g.st"), ck = dir.file("ck.st"), old = dir.file("old.st"), fresh = dir.file("new.st");
  ASSERT_EQ(run_train_mlp(kModel + "--batches 2 --save " + g).code, 0);
  const std::string held = amlp::testing::read_file(g);
  std::filesystem::copy_file(g, ck);
  dir.write("old.st", "what was there\n");
  for (const std::string sync : {"batch", "none"}) {
    SCOPED_TRACE(sync);
    for (const auto& [save, before] : std::vector<std::pair<std::string, std::string>>{
             {ck, held}, {old, "what was there\n"}, {fresh, ""}}) {
      const Ran r = run_train_mlp(kModel + "--batches 2 --sync " + sync + " --lr 1e30 --load " + ck + " --save " + save);
      EXPECT_EQ(r.code, 1) << r.err;
      EXPECT_EQ(r.err_lines(), 1u) << r.err;
      EXPECT_NE(r.err.find("diverged"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("not saved (--save)"), std::string::npos) << r.err;
      EXPECT_EQ(r.out.find("parameters saved"), std::string::npos) << r.out;
      if (before.empty()) {
        EXPECT_FALSE(std::filesystem::exists(fresh));
      } else {
        EXPECT_EQ(amlp::testing::read_file(save), before) << save;
      }
      EXPECT_TRUE(amlp::testing::temporaries_of(save).empty());
    }
  }
  EXPECT_EQ(run_train_mlp(kModel + "--batches 1 --load " + ck).code, 0) << "the --load file still loads";
}

// The writer refuses what the reader would: a parameter that is NaN or
// infinite is an error naming the tensor, and no file is written.
TEST(TrainParameters, TheWriterRefusesAValueThatIsNotFinite) {
  ScratchDir dir;
  const std::string p = dir.file("p.st");
  const float values[] = {1.f, std::numeric_limits<float>::infinity()};
  const Tensor t = from_host({2}, values, Device::cpu(0));
  try {
    save_safetensors(p, {{"w", t}});
    ADD_FAILURE() << "written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'w' holds inf (value 1 of 2)"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(p));
  EXPECT_TRUE(amlp::testing::temporaries_of(p).empty());
  // A name the reader would refuse (given twice, or the format's own) is not written either.
  for (const std::string name : {"w", "__metadata__"}) {
    const std::vector<std::pair<std::string, Tensor>> named =
        name == "w" ? std::vector<std::pair<std::string, Tensor>>{{"w", ones({1}, Device::cpu(0))}, {"w", ones({1}, Device::cpu(0))}}
                    : std::vector<std::pair<std::string, Tensor>>{{name, ones({1}, Device::cpu(0))}};
    EXPECT_THROW(save_safetensors(p, named), Error) << name;
    EXPECT_FALSE(std::filesystem::exists(p));
  }
  // The header the writer makes is the one the reader takes, names escaped.
  save_safetensors(p, {{"a\"b\n", ones({2, 1}, Device::cpu(0))}, {"c", ones({3}, Device::cpu(0))}});
  const std::vector<NamedValues> back = read_safetensors(p);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, "a\"b\n");
  EXPECT_EQ(back[0].shape, (Shape{2, 1}));
  EXPECT_EQ(back[1].values, std::vector<float>(3, 1.f));
}

}  // namespace
}  // namespace amlp::train
