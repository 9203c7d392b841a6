#!/usr/bin/env python3
"""gpu_kit.py — the checks and timings to make on a lent GPU machine, in
commands that each fit a share of a 15-minute lease (its start and idle
time included): quick, then matrix, on the warm machine; deep in another
(docs/gpu.md, "The GPU kit").

  quick  (<= 300 s, about 275)  unpack the carried archive (pack.sh), print the
         machine and the commit the build came from; the CUDA-touching test
         executables; train_mlp at batch 64 and 1024 (batch, none, --graph on
         in both sync modes, TF32), two rounds alternated with PyTorch's
         whole-step CUDA graph (FP32 and TF32); the cuBLAS floor at both
         sizes, FP32 and TF32, and the SGD update and the ReLU passes beside a
         device copy of their bytes; a traced `none` run (and a `--graph on`
         one) through tools/trace_summary.py, the step kernel by kernel with
         the idle gap before each
  matrix (<= 300 s, about 268)  the candidates (CANDIDATES below: cuBLASLt's
         epilogues, ASYNCMLP_CANDIDATES' kernels and worker_spin), each first
         checked by test_cuda's cases with it on, then timed against the
         default in alternated rounds at batch 64 and 1024, FP32 and TF32
         (--graph on --sync none): each one's ratio to the default per round,
         median and spread (bench/gpu/matrix_table.py); a candidate becomes
         the default only if it wins in every round; bench_op_cost with the
         raw-launch and raw-capture floors; mpirun -np 1 train_mlp
         --distributed mpi against the one-process run; the goals table last
  deep   (<= 300 s, about 285)  compute-sanitizer memcheck/racecheck/synccheck
         on the kernels changed since the last GPU run (SANITIZE below), the
         remaining test executables, examples/chapter.py on the GPU,
         bench_cuda_random, --compare-policies (enqueue, run, bounded),
         --host-work match and --sweep on cuda

  bench/gpu/gpu_kit.py --plan          every step, its timeout and expected time
  bench/gpu/gpu_kit.py quick|matrix|deep
                                       from the repository root on the GPU machine
  bench/gpu/gpu_kit.py quick STEP...   only those steps of it, in its order (a rerun:
                                       quick unpack tests)
  bench/gpu/gpu_kit.py table DIR [DIR] the goals table of a quick run's (and a matrix run's) logs
  ASYNCMLP_KIT_DRY=1 bench/gpu/gpu_kit.py quick|matrix|deep
                                       walks every step here: what needs no GPU runs,
                                       each GPU command is printed with the timeout it
                                       would get, not run

Every step runs its commands under a timeout cut to what is left of the
command's budget (a step whose expected time no longer fits is not started,
and says so). A dry run takes each step's expected time on its clock and no
other, so it walks the budget as a real run would: the same timeouts, the
same steps left out, the same total on every machine. Logs go to
$LOGS/COMMAND (default out/gpu/COMMAND); after each step they are packed
into $OUT/COMMAND.tar.xz, so a command stopped at its limit still brings back
what it did. Environment: BUILD (build-gpu), ARCHIVE (build-gpu.tar.xz),
LOGS, OUT, ROUNDS (2), MATRIX_ROUNDS (3), MODES_ONLY (the perf modes' tags to
run; default all), TORCH_CAPTURE (graph), TESTS_ONLY (the test executables;
default pack.sh's list), SANITIZE_ENV (ASYNCMLP_CANDIDATES=all), KIT_BUDGET
(the command's budget in seconds; a dry run with KIT_BUDGET=200 shows which
steps a short budget leaves out), ASYNCMLP_KIT_DRY. Exit status: 0 when every
check passed, 1 otherwise, 2 on bad usage.

The standard library only: the GPU machine has a plain python3 (the one the
commands below run as `python3`, where PyTorch is installed).
"""
import concurrent.futures
import contextlib
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Each command's steps: name, expected seconds on an H100, timeout (bound),
# and what it does. The bounds add up to more than the budget on purpose: a
# step gets min(bound, what is left). The expected times are an H100's and
# H200's from earlier leases, scaled where a step now does less: perf's 11
# modes and three PyTorch peers a round (95 and 105 s) are 5 modes and two
# peers (60, 65); bench_op_cost at half the minimum time (20 s of 40); the
# floor without repeats of the copies (30).
COMMANDS = {
    "quick": ["unpack", "tests", "perf64", "perf1024", "floor", "trace"],
    "matrix": ["mcheck", "opcost", "matrix", "mtable", "mpi", "goals"],
    "deep": ["sanitize", "others", "chapter", "normals", "policies", "hostwork", "sweep"],
}
EXPECT = {"unpack": 15, "tests": 90, "perf64": 60, "perf1024": 65, "floor": 30, "opcost": 20, "trace": 15, "goals": 3,
          "mcheck": 50, "matrix": 180, "mtable": 3,
          "sanitize": 110, "others": 60, "mpi": 12, "chapter": 20, "normals": 15, "policies": 25, "hostwork": 25,
          "sweep": 30}
BOUND = {"unpack": 90, "tests": 150, "perf64": 110, "perf1024": 120, "floor": 60, "opcost": 45, "trace": 40, "goals": 20,
         "mcheck": 90, "matrix": 240, "mtable": 20,
         "sanitize": 160, "others": 120, "mpi": 60, "chapter": 60, "normals": 45, "policies": 60, "hostwork": 60,
         "sweep": 75}


def what(cfg):
    """Each step in words, as --plan and the step's header print it."""
    return {
        "unpack": f"unpack {cfg['ARCHIVE']}; the commit it was built from; nvidia-smi, nvcc, cuBLAS/cuRAND, PyTorch, NCCL, mpirun",
        "tests": f"the CUDA-touching test executables ({cfg['BUILD']}/cuda_tests.txt, listed by pack.sh), one after another",
        "perf64": f"{cfg['ROUNDS']} rounds at batch 64 (300 batches): train_mlp batch, none, graph batch/none, graph none TF32 "
                  "| torch_mlp.py whole-step graph, FP32 and TF32",
        "perf1024": "the same at batch 1024 (100 batches)",
        "floor": "bench_cuda_gemm: the eight GEMMs of one step (cuBLAS alone) at 64 and 1024, FP32 and TF32; the forward's "
                 "two GEMMs with beta 0 and 1; the SGD update of the step's parameters, the bias+ReLU pass and the ReLU's "
                 "backward at 1024, each beside a device copy of as many bytes",
        "opcost": "bench_op_cost on cuda0: push, worker per op, round trip, BM_RawLaunch (the bare-loop floor), a recorded "
                  "step against BM_RawCapture",
        "trace": "train_mlp --sync none (and --graph on) at 1024 with --trace, summarised by tools/trace_summary.py",
        "mpi": "mpirun -np 1 train_mlp --distributed mpi --device cuda (bundled OpenMPI, NCCL over MPI) vs one process",
        "goals": "the goals table: both peers, the floor, none/batch, replay share, memory measured/predicted, the step's "
                 "time outside the GEMMs and idle",
        "mcheck": "test_cuda's GEMM, ReLU, one-unit-layer and training cases with each candidate on",
        "matrix": f"{cfg['MATRIX_ROUNDS']} alternated rounds at batch 64 (300 batches) and 1024 (100), FP32 and TF32: "
                  "train_mlp --graph on --sync none, the default and each candidate",
        "mtable": "each candidate's samples/s over the default's per round: median, spread, and whether it won every round",
        "chapter": "examples/chapter.py --device cuda through the carried Python module (where this machine's python3 is "
                   "the one it was built for)",
        "sanitize": "compute-sanitizer on the kernels changed since the last GPU run (the SANITIZE list)",
        "others": "every test executable quick did not pass or reach, 8 at a time",
        "normals": "bench_cuda_random: the device normals beside curandGenerateNormal",
        "policies": "train_mlp --config configs/d2l.ini --device cuda --compare-policies",
        "hostwork": "train_mlp --config configs/d2l.ini --device cuda --compare --host-work match",
        "sweep": "train_mlp --config configs/d2l.ini --device cuda --sweep (the whole trade over h/d), plotted to sweep.png",
    }


# compute-sanitizer runs for `deep`: tool, executable, filter, bound. Kept to
# the kernels changed since the last GPU run, each with a filter that keeps it
# within its bound (memcheck serialises every launch: a whole training suite
# takes minutes). The candidates' kernels first (run with every candidate
# on: SANITIZE_ENV).
SANITIZE = [
    ("memcheck", "test_cuda", "Ops/CudaVsCpu.*/*out_layer*:Ops/CudaVsCpu.*/mul*", 40),  # the GEMV rows, the outer-product masking pass, mul
    ("racecheck", "test_cuda", "Ops/CudaVsCpu.*/*out_layer_grad*", 30),  # the outer-product pass's shared sums and tickets
    ("memcheck", "test_cuda", "Ops/CudaVsCpu.*/*relu*:Ops/CudaVsCpu.*/linear*:CudaTraining.TheMaskPass*", 60),  # the float4 bias+ReLU and ReLU-backward passes
    ("racecheck", "test_cuda", "Ops/CudaVsCpu.*/*row_chunks*:Ops/CudaVsCpu.*/*unbiased_relu*", 40),  # their shared-memory sums and tickets
    ("synccheck", "test_cuda", "Ops/CudaVsCpu.*/*row_chunks*", 30),
    ("memcheck", "test_cuda", "CudaGraph.HeldStepsTrainLikeEagerLaunches", 90),  # step graphs with the new passes
]

# The modes timed at each batch size: tag and train_mlp's options.
# none_malloc: `none` with one cudaMalloc per block (ASYNCMLP_SEGMENTS=0), the
# pool's segments' effect measured beside them; *_lt: cuBLASLt's fused
# epilogues on (ASYNCMLP_LT=1: one GEMM each, the bias, ReLU and their
# gradients in its epilogue), the fusion measured beside the default.
# graph_none_tf32: the best mode with TF32 GEMMs, beside PyTorch's graph with TF32.
# MODES_ONLY (tags, space-separated) runs only those.
MODES = [("batch", "--sync batch"), ("none", "--sync none"), ("graph_batch", "--sync batch --graph on"),
         ("graph_none", "--sync none --graph on"), ("graph_none_tf32", "--sync none --graph on --tf32")]

# The candidates: tag and the environment that turns it on (each off by
# default; docs/gpu.md, "Candidates"). The default is timed beside them in
# every round.
CANDIDATES = [("lt", "ASYNCMLP_LT=1"), ("out_gemv", "ASYNCMLP_CANDIDATES=out_gemv"),
              ("out_grad", "ASYNCMLP_CANDIDATES=out_grad"), ("worker_spin", "ASYNCMLP_CANDIDATES=worker_spin")]
# test_cuda's cases each candidate changes, run with it on.
CANDIDATE_TESTS = "Ops/CudaVsCpu.*linear*:Ops/CudaVsCpu.*relu*:Ops/CudaVsCpu.*out_layer*:CudaTraining.*"

STDOUT = subprocess.STDOUT
CAPTURE = "capture"  # Kit.x's out: the output returned with the status

# The environment a GPU command's line in dry.txt names when it is set.
SHOWN_ENV = ("ASYNCMLP_SEGMENTS", "ASYNCMLP_LT", "ASYNCMLP_CANDIDATES")

TORCH_VERSION = ('import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,\n'
                 '"nccl", ".".join(map(str, torch.cuda.nccl.version())))')
NCCL_DIR = 'import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], "lib"))'

# The device track's spans by name, from a --trace file (run by the machine's
# python3 under the step's timeout: a trace can be large).
SPANS = """import collections, json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
tracks = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
dev = {t for t, n in tracks.items() if n.startswith("device")}
c = collections.Counter(e["name"] for e in ev if e.get("ph") == "X" and e.get("tid") in dev)
print("device track spans:", ", ".join(f"{n} {k}" for n, k in c.most_common(12)))
"""


def config(env):
    """The kit's settings from the environment (the defaults in the module's docstring)."""
    logs = env.get("LOGS") or os.path.join(ROOT, "out", "gpu")
    return {
        "BUILD": env.get("BUILD") or "build-gpu",
        "ARCHIVE": env.get("ARCHIVE") or "build-gpu.tar.xz",
        "LOGS": logs,
        "OUT": env.get("OUT") or os.path.join(logs, "back"),
        "ROUNDS": env.get("ROUNDS") or "2",
        "MATRIX_ROUNDS": env.get("MATRIX_ROUNDS") or "3",
        "DRY": (env.get("ASYNCMLP_KIT_DRY") or "0") == "1",
        "BUDGET": int(env.get("KIT_BUDGET") or 300),
        "MODES_ONLY": (env.get("MODES_ONLY") or "").split(),
        "TORCH_CAPTURE": env.get("TORCH_CAPTURE") or "graph",
        "TESTS_ONLY": (env.get("TESTS_ONLY") or "").split(),
        "SANITIZE_ENV": env.get("SANITIZE_ENV") or "ASYNCMLP_CANDIDATES=all",
    }


def plan(cfg, out=sys.stdout):
    """Every step of the three commands, its expected time and its timeout."""
    archive = cfg["ARCHIVE"]
    if os.path.isfile(archive):
        print(f"carried: {archive}, {os.path.getsize(archive) / 1048576:.1f} MiB (limit 64 MiB)", file=out)
    else:
        print(f"carried: {archive} not packed yet (bench/gpu/pack.sh {cfg['BUILD']})", file=out)
    words = what(cfg)
    for cmd, steps in COMMANDS.items():
        print(file=out)
        print(f"bench/gpu/gpu_kit.py {cmd}: <= {cfg['BUDGET']} s, about {sum(EXPECT[s] for s in steps)} s expected; "
              f"brings back $OUT/{cmd}.tar.xz", file=out)
        for s in steps:
            print(f"  {s:<9} about {EXPECT[s]:3d} s, timeout {BOUND[s]:3d} s (or what is left)  {words[s]}", file=out)
    print(file=out)
    print("the lease: 15 min of device time, the machine's start included: quick, then matrix on the warm machine", file=out)
    print(f'(run tool: carry=["{archive}"], timeout_s 330 each), then give the machine back; deep in another lease',
          file=out)


def read(path, default=""):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def lines_matching(path, pattern, flags=0):
    return [line for line in read(path).splitlines() if re.search(pattern, line, flags)]


def squeezed(lines):
    """The lines on one line, each run of spaces and line ends one space."""
    return re.sub(r"[ \n]+", " ", "".join(line + "\n" for line in lines))


def final_loss(path):
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        d = d[0] if isinstance(d, list) else d
        return str(d["final_loss"])
    except (OSError, ValueError, LookupError, TypeError):
        return ""


def normals_ratios(path):
    """bench_cuda_random's device normals over curandGenerateNormal, per size."""
    with open(path, encoding="utf-8") as f:
        b = {x["name"].split("/")[0] + "/" + x["name"].split("/")[1]: x["real_time"] for x in json.load(f)["benchmarks"]}
    return (" ".join(f"n={k.split('/')[1]}: {v / b['BM_CurandGenerateNormal/' + k.split('/')[1]]:.2f}x"
                     for k, v in b.items() if k.startswith("BM_DeviceNormal/")) + " (time / cuRAND's; target <= 1.10)")


def run(argv, timeout, stdout=None, stderr=None, env=None, stdin_text=None):
    """argv in its own process group, stopped (TERM, then KILL 5 s later) at
    timeout seconds: its exit status, 124 when stopped by TERM, 137 when it
    had to be killed, 127 when there is no such program."""
    try:
        p = subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=env, start_new_session=True,
                             stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL)
    except OSError as e:
        target = stderr if hasattr(stderr, "write") else stdout if hasattr(stdout, "write") else sys.stderr.buffer
        target.write(f"{argv[0]}: {e.strerror}\n".encode())
        target.flush()
        return 127
    if stdin_text is not None:
        try:
            p.stdin.write(stdin_text.encode())
            p.stdin.close()
        except OSError:
            pass
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(p, signal.SIGTERM)
        try:
            p.wait(timeout=5)
            return 124
        except subprocess.TimeoutExpired:
            stop(p, signal.SIGKILL)
            p.wait()
            return 137
    return 128 - rc if rc < 0 else rc


def stop(p, sig):
    try:
        os.killpg(p.pid, sig)
    except OSError:
        pass


class Kit:
    """One command's run: its steps under one budget, the results, the logs."""

    def __init__(self, cmd, cfg):
        self.cmd, self.cfg = cmd, cfg
        self.build, self.dry = cfg["BUILD"], cfg["DRY"]
        self.budget = cfg["BUDGET"]
        self.dir = os.path.join(cfg["LOGS"], cmd)
        self.results = os.path.join(self.dir, "results.txt")
        self.status = 0
        self.t0 = time.monotonic()
        self.skipped = 0  # a dry run's clock: the expected times of the steps it walked
        self.step_end = 0

    # --- the clock, the records, the logs -------------------------------------------------------

    def now(self):
        """Whole seconds since the start: a dry run counts only its steps' expected times."""
        return self.skipped if self.dry else int(time.monotonic() - self.t0)

    def cap(self, bound):
        """A timeout of at most bound seconds, never past the step's end."""
        return min(bound, max(self.step_end - self.now(), 1))

    def say(self, text):
        print(f"== {text}")

    def record(self, kind, name, detail=""):
        """PASS|FAIL|NOTE name detail (a dry run passes nothing: it ran no GPU command)."""
        if self.dry and kind == "PASS":
            kind, detail = "NOTE", "dry run: GPU commands printed, not run"
        line = f"{kind} {name} {detail}"
        print(line)
        self.append(self.results, line)
        if kind == "FAIL":
            self.status = 1

    def append(self, path, line):
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def log(self, name):
        return os.path.join(self.dir, name)

    def pack(self):
        """The command's logs into $OUT/COMMAND.tar.xz (written aside, then moved in place)."""
        archive = os.path.join(self.cfg["OUT"], f"{self.cmd}.tar.xz")
        try:
            with tarfile.open(archive + ".part", "w:xz") as t:
                t.add(self.dir, arcname=self.cmd)
            os.replace(archive + ".part", archive)
        except (OSError, tarfile.TarError) as e:
            print(f"could not pack {self.dir}: {e}", file=sys.stderr)

    # --- running commands -----------------------------------------------------------------------

    def x(self, timeout, argv, out=None, err=STDOUT, env=None, stdin_text=None):
        """Runs argv under timeout; in a dry run prints it to dry.txt instead,
        with the ASYNCMLP_ settings it would see, and returns 0. out: a file
        for its output (made in a dry run too), CAPTURE (then the status and
        the output are returned) or None (this program's); err: a file, STDOUT
        (with its output) or None (this program's). env: variables set for
        this command alone."""
        full = dict(os.environ, **(env or {}))
        with contextlib.ExitStack() as files:
            fo = (files.enter_context(tempfile.TemporaryFile()) if out is CAPTURE
                  else files.enter_context(open(out, "wb")) if out else None)
            fe = files.enter_context(open(err, "wb")) if isinstance(err, str) else err if fo else None
            if self.dry:
                shown = "".join(f"{k}={full[k]} " for k in SHOWN_ENV if full.get(k))
                self.append(self.log("dry.txt"), f"   dry: {shown}timeout {timeout} {' '.join(argv)}")
                return (0, "") if out is CAPTURE else 0
            rc = run(argv, timeout, fo, fe, full, stdin_text)
            if out is not CAPTURE:
                return rc
            fo.seek(0)
            return rc, fo.read().decode("utf-8", "replace")

    def bin(self, name):
        return f"{self.build}/bin/{name}"

    def train(self, tag, args, env=None):
        """One train_mlp run into TAG.{json,log}: its exit status."""
        e = dict(env or {})
        e["ASYNCMLP_SEGMENTS"] = e.get("ASYNCMLP_SEGMENTS") or os.environ.get("ASYNCMLP_SEGMENTS") or "1"
        e["CUDA_MODULE_LOADING"] = "EAGER"
        return self.x(self.cap(40), [self.bin("train_mlp"), "--device", "cuda", "--quiet", *args,
                                     "--summary-json", self.log(f"{tag}.json")], out=self.log(f"{tag}.log"), env=e)

    def test_verdict(self, name, rc, log):
        """PASS unless it failed or skipped every CUDA test for want of a GPU."""
        summary = squeezed(lines_matching(log, r"^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test"))
        skipped = sorted({line.split()[3] for line in lines_matching(log, r"^\[  SKIPPED \] [A-Za-z]")})
        skipped = "".join(s + " " for s in skipped)
        if self.dry:
            self.record("NOTE", name, "dry run: not run")
        elif rc != 0:
            self.record("FAIL", name, f"rc={rc} {summary}")
        elif lines_matching(log, r"no CUDA GPU visible|(has|built) without the CUDA backend|has no CUDA backend"):
            self.record("FAIL", name, f"{summary}: CUDA tests skipped for want of a GPU on a GPU machine")
        else:
            self.record("PASS", name, summary + (f"(skipped, not failures: {skipped})" if skipped else ""))

    def setup_env(self):
        """NCCL from PyTorch's environment (the nvidia-nccl package); the bundled
        OpenMPI (bundle_mpi.sh) relocated with OPAL_PREFIX."""
        nccl_file = os.path.join(self.cfg["LOGS"], "nccl_dir")
        nccl = read(nccl_file).rstrip("\n")
        if not nccl and not self.dry:
            _, text = self.quiet(["python3", "-c", NCCL_DIR], 60)
            nccl = text.rstrip("\n")
        if nccl:
            with open(nccl_file, "w", encoding="utf-8") as f:
                f.write(nccl + "\n")
        env = os.environ
        build = os.path.join(ROOT, self.build)
        old = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = ":".join([f"{build}/rt", "/usr/local/cuda/lib64"] + ([nccl] if nccl else [])
                                          + ([old] if old else []))
        env.update(ASYNCMLP_BLOCKING="0", ASYNCMLP_SOURCE_DIR=ROOT, ASYNCMLP_BIN_DIR=f"{build}/bin")
        if os.access(f"{build}/mpi/bin/mpirun", os.X_OK):
            env.update(OPAL_PREFIX=f"{build}/mpi", PATH=f"{build}/mpi/bin:{env.get('PATH', '')}",
                       PMIX_MCA_mca_base_component_path=f"{build}/mpi/pmix",
                       OMPI_MCA_mca_base_component_show_load_errors="0")
        # One node: shared memory between ranks, no fabric libraries probed.
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_pml="ob1",
                   OMPI_MCA_btl="self,vader", PMIX_MCA_pcompress_base_silence_warning="1")

    def quiet(self, argv, timeout):
        """A command that needs no GPU, run in a dry run too: (status, its output; errors dropped)."""
        with tempfile.TemporaryFile() as f:
            rc = run(argv, timeout, f, subprocess.DEVNULL)
            f.seek(0)
            return rc, f.read().decode("utf-8", "replace")

    # --- running steps --------------------------------------------------------------------------

    def run_steps(self, steps):
        """The command's steps in order, each under what is left of the budget."""
        for s in steps:
            left = self.budget - 10 - self.now()  # 10 s kept for the last pack
            if left < EXPECT[s]:
                self.record("FAIL", s, f"not started: {left} s left of {self.budget}, it takes about {EXPECT[s]} s")
                continue
            self.step_end = self.now() + min(left, BOUND[s])
            t0 = self.now()
            self.say(f"{s} (timeout {self.step_end - self.now()} s): {what(self.cfg)[s]}")
            if self.dry:
                self.append(self.log("dry.txt"), f"-- {s}: timeout {self.step_end - self.now()} s")
            getattr(self, f"step_{s}")()
            if self.dry:
                self.skipped += EXPECT[s]
            line = f"   {s} took {self.now() - t0} s"
            print(line)
            self.append(self.log("steps.txt"), line)
            self.pack()

    # --- quick ----------------------------------------------------------------------------------

    def step_unpack(self):
        # Only the build: the kit's own scripts and configs are this tree's (the
        # archive's copies would overwrite the program running now).
        archive, build = self.cfg["ARCHIVE"], self.build
        if os.path.isfile(archive) and run(["tar", "-xJf", archive, build], self.cap(60)) == 0:
            count = [len([n for n in os.listdir(d) if not n.startswith(".")]) if os.path.isdir(d) else 0
                     for d in (f"{build}/bin", f"{build}/rt")]
            self.record("PASS", "unpack", f"{count[0]} executables, {count[1]} libraries")
        elif os.path.isdir(f"{build}/bin"):
            self.record("NOTE", "unpack", f"no {archive}: using the {build} already here")
        else:
            self.record("FAIL", "unpack", f"no {archive} and no {build}/bin (bench/gpu/pack.sh makes it)")
            return
        commit = read(f"{build}/COMMIT", None)
        self.record("NOTE", "commit", "built from " + (commit.rstrip("\n") if commit is not None
                                                       else "an unknown commit (no COMMIT in the archive)"))
        self.setup_env()
        machine = []
        _, text = self.x(self.cap(20), ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                                         "power.limit", "--format=csv"], out=CAPTURE)
        machine += text.splitlines()
        _, text = self.x(20, ["nvcc", "--version"], out=CAPTURE)
        machine += text.splitlines()[-2:]
        libs = os.listdir("/usr/local/cuda/lib64") if os.path.isdir("/usr/local/cuda/lib64") else []
        machine.append("".join(n + " " for n in sorted(n for n in libs if re.match(r"^lib(cublas|curand)\.so\.[0-9]+$", n))))
        _, text = self.x(60, ["python3", "-c", TORCH_VERSION], out=CAPTURE)
        machine += text.splitlines()
        nccl = read(os.path.join(self.cfg["LOGS"], "nccl_dir"), None)
        machine.append(f"NCCL library: {nccl.rstrip(chr(10)) if nccl is not None else 'not found'}")
        _, text = self.x(20, ["mpirun", "--version"], out=CAPTURE)
        machine.append(f"mpirun: {shutil.which('mpirun') or 'none'} {(text.splitlines() or [''])[0]}")
        machine.append(f"cores: {len(os.sched_getaffinity(0))}")
        for line in machine:
            print(line)
        with open(self.log("machine.txt"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in machine))

    def step_tests(self):
        listed = f"{self.build}/cuda_tests.txt"
        if not os.path.isfile(listed):
            self.record("FAIL", "tests", f"no {listed} (pack.sh writes it)")
            return
        for name in self.cfg["TESTS_ONLY"] or read(listed).split():
            t = self.bin(name)
            if not (os.path.isfile(t) and os.access(t, os.X_OK)):
                self.record("FAIL", name, "not in the archive")
                continue
            if self.cap(1000) < 15:
                self.record("FAIL", name, "not run: the step's time was spent")
                continue
            log = self.log(f"{name}.log")
            rc = self.x(self.cap(90), [t, f"--gtest_output=json:{self.dir}/{name}.json"], out=log)
            self.test_verdict(name, rc, log)

    def perf(self, batch, steps):
        rounds = int(self.cfg["ROUNDS"])
        os.makedirs(self.log(f"perf{batch}"), exist_ok=True)
        size = ["--batches", str(steps), "--batch-size", str(batch)]
        # A warm-up run first, not counted: the first timed mode would otherwise
        # pay the GPU's and the libraries' first use (a slow first `batch`).
        if self.train(f"perf{batch}/warmup", ["--sync", "batch", "--batches", "50", "--batch-size", str(batch)]):
            self.record("FAIL", f"train_mlp warm-up, batch {batch}", f"see perf{batch}/warmup.log")
        for r in range(1, rounds + 1):
            if r > 1 and self.cap(1000) < 40:
                self.record("FAIL", f"perf{batch} round {r}", "not started: under 40 s left of the step")
                break
            for tag, opts in MODES:
                if self.cfg["MODES_ONLY"] and tag not in self.cfg["MODES_ONLY"]:
                    continue
                env = {"ASYNCMLP_SEGMENTS": "0" if tag == "none_malloc" else "1",
                       "ASYNCMLP_LT": "1" if tag.endswith("_lt") else "0"}
                if self.train(f"perf{batch}/train_{tag}_{r}", opts.split() + size, env):
                    self.record("FAIL", f"train_mlp {opts}, batch {batch} #{r}", f"see perf{batch}/train_{tag}_{r}.log")
            for tf32, name, bound, capture in ((False, "torch", 60, self.cfg["TORCH_CAPTURE"]),
                                               (True, "torch_tf32", 40, "graph")):
                if self.x(self.cap(bound), ["python3", "bench/gpu/torch_mlp.py", *(["--tf32"] if tf32 else []),
                                            "--sync", "batch,none", "--capture", capture, *size, "--repeats", "2",
                                            "--json", self.log(f"perf{batch}/{name}_{r}.json")],
                          out=self.log(f"perf{batch}/{name}_{r}.log")):
                    self.record("FAIL", f"torch_mlp.py {'--tf32 ' if tf32 else ''}batch {batch} #{r}",
                                f"see perf{batch}/{name}_{r}.log")
        if not lines_matching(self.results, f"FAIL.*batch {batch}"):
            self.record("PASS", f"perf{batch}",
                        f"{self.cfg['ROUNDS']} rounds x {len(MODES)} modes + PyTorch's graph, FP32 and TF32")

    def step_perf64(self):
        self.perf(64, 300)

    def step_perf1024(self):
        self.perf(1024, 100)

    def step_floor(self):
        if self.x(self.cap(80), [self.bin("bench_cuda_gemm"),
                                 "--benchmark_filter=Floor/tf32:[01]/batch:(64|1024)/|CudaMlpGemm/gemm:[01]/|SgdUpdate|Relu"
                                 "|DeviceCopy", "--benchmark_min_time=0.04", "--benchmark_repetitions=3",
                                 "--benchmark_report_aggregates_only=true", f"--benchmark_out={self.dir}/gemm_floor.json",
                                 "--benchmark_out_format=json"], out=self.log("gemm_floor.log")) == 0:
            self.record("PASS", "floor", f"{self.dir}/gemm_floor.json")
        else:
            self.record("FAIL", "floor", "see gemm_floor.log")

    def step_trace(self):
        for g in ("off", "on"):
            trace = self.log(f"trace_{g}.trace.json")
            summary = self.log(f"trace_{g}.txt")
            if (self.train(f"trace_{g}", ["--sync", "none", "--graph", g, "--batch-size", "1024", "--batches", "50",
                                          "--trace", trace]) == 0
                    and self.x(self.cap(30), ["python3", "tools/trace_summary.py", trace], out=summary) == 0):
                self.record("PASS", f"trace --graph {g}", squeezed(lines_matching(summary, "busy|device", re.I)[:3]))
                # The device track's spans by name: with --graph on, each op of a replayed step has its own.
                spans = self.log(f"trace_{g}_spans.txt")
                self.x(self.cap(20), ["python3", "-", trace], out=spans, stdin_text=SPANS)
                with open(spans, "rb") as f:
                    head = f.read(400).decode("utf-8", "replace")
                self.record("NOTE", f"trace --graph {g} spans", head.rstrip("\n"))
            else:
                self.record("FAIL", f"trace --graph {g}", f"see trace_{g}.log / trace_{g}.txt")

    # --- matrix ---------------------------------------------------------------------------------

    def step_mcheck(self):
        for tag, envs in CANDIDATES:
            log = self.log(f"test_cuda_{tag}.log")
            rc = self.x(self.cap(40), ["env", *envs.split(), self.bin("test_cuda"), f"--gtest_filter={CANDIDATE_TESTS}"],
                        out=log)
            self.test_verdict(f"test_cuda's cases with {envs}", rc, log)

    def step_opcost(self):
        if self.x(self.cap(45), [self.bin("bench_op_cost"), "--benchmark_filter=cuda0", "--benchmark_min_time=0.1",
                                 "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true",
                                 f"--benchmark_out={self.dir}/op_cost.json", "--benchmark_out_format=json"],
                  out=self.log("op_cost.log")) == 0:
            medians = [(line.split() + ["", "", ""])[:3] for line in lines_matching(self.log("op_cost.log"), "_median")]
            self.record("PASS", "opcost", "".join(" ".join(m) + ";" for m in medians))
        else:
            self.record("FAIL", "opcost", "see op_cost.log")

    def step_matrix(self):
        rounds = int(self.cfg["MATRIX_ROUNDS"])
        os.makedirs(self.log("matrix"), exist_ok=True)
        for r in range(1, rounds + 1):
            if r > 1 and self.cap(1000) < 60:
                self.record("NOTE", "matrix", f"stopped after {r - 1} rounds: the step's time was spent")
                break
            for batch in (64, 1024):
                steps = 300 if batch == 64 else 100
                for prec in ("fp32", "tf32"):
                    for tag, var in [("default", "")] + CANDIDATES:
                        name = f"matrix/{tag}_{batch}_{prec}_{r}"
                        env = dict([var.split("=", 1)]) if var else {}
                        if self.train(name, ["--sync", "none", "--graph", "on", *(["--tf32"] if prec == "tf32" else []),
                                             "--batches", str(steps), "--batch-size", str(batch)], env):
                            self.record("FAIL", f"matrix {tag}, batch {batch} {prec} #{r}", f"see {name}.log")
        if not lines_matching(self.results, "FAIL matrix"):
            self.record("PASS", "matrix",
                        f"{self.cfg['MATRIX_ROUNDS']} rounds x {len(CANDIDATES)} candidates + the default")

    def step_mtable(self):
        rc = self.tee(self.cap(20), ["python3", "bench/gpu/matrix_table.py", self.log("matrix")], self.log("matrix.txt"))
        if rc:
            self.record("FAIL", "mtable", "matrix_table.py failed")
        if self.dry:
            self.record("NOTE", "mtable", "dry run: not run")

    def tee(self, timeout, argv, path):
        """x, its output (errors aside) printed and written to path: its status."""
        rc, text = self.x(timeout, argv, out=CAPTURE, err=None)
        sys.stdout.write(text)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return rc

    def step_mpi(self):
        if not shutil.which("mpirun") and not self.dry:
            self.record("FAIL", "mpi", f"no mpirun (the archive's {self.build}/mpi is missing)")
            return
        if self.train("mpi_single", ["--sync", "batch", "--batches", "20", "--batch-size", "1024"]):
            self.record("FAIL", "mpi", "the one-process run failed: see mpi_single.log")
        if self.x(self.cap(60), ["mpirun", "--oversubscribe", "-np", "1", self.bin("train_mlp"), "--distributed", "mpi",
                                 "--device", "cuda", "--quiet", "--sync", "batch", "--batches", "20", "--batch-size",
                                 "1024", "--summary-json", self.log("mpi1.json")], out=self.log("mpi1.log")):
            self.record("FAIL", "mpi", "mpirun -np 1 train_mlp --distributed mpi failed: see mpi1.log")
            return
        if self.dry:
            self.record("NOTE", "mpi", "dry run: not run")
            return
        one, two = final_loss(self.log("mpi_single.json")), final_loss(self.log("mpi1.json"))
        if one and one == two:
            self.record("PASS", "mpi", f"mpirun -np 1 --distributed mpi: final loss {two}, the one-process run's {one}")
        else:
            self.record("FAIL", "mpi", f"final loss {two or '?'} under mpirun, {one or '?'} in one process")

    def step_goals(self):
        argv = ["python3", "bench/gpu/table.py", os.path.join(self.cfg["LOGS"], "quick"), self.dir]
        if self.dry:
            self.x(self.cap(20), argv)
            self.record("NOTE", "goals", "dry run: not run")
            return
        rc = self.tee(self.cap(20), argv, self.log("goals.txt"))
        if rc:
            self.record("FAIL", "goals", "table.py failed")

    # --- deep -----------------------------------------------------------------------------------

    def step_sanitize(self):
        for tool, t, filt, bound in SANITIZE:
            log = self.log(f"{tool}.{t}.log")
            rc = self.x(self.cap(bound), ["env", *self.cfg["SANITIZE_ENV"].split(), "compute-sanitizer", "--tool", tool,
                                          "--error-exitcode", "99", self.bin(t), f"--gtest_filter={filt}"], out=log)
            if self.dry:
                self.record("NOTE", f"{tool} {t}", "dry run: not run")
                continue
            line = (lines_matching(log, r"(ERROR|RACECHECK|SYNCCHECK) SUMMARY") or [""])[-1]
            tests = "\n".join(re.sub(" +", " ", x) for x in lines_matching(log, r"^\[  PASSED  \] [0-9]+ test"))
            if rc == 0:
                self.record("PASS", f"{tool} {t}", f"{tests} {line}")
            else:
                self.record("FAIL", f"{tool} {t}", f"rc={rc} {line}")

    def step_others(self):
        quick = read(os.path.join(self.cfg["LOGS"], "quick", "results.txt"))
        names = [os.path.basename(t) for t in sorted(glob.glob(f"{self.build}/bin/test_*"))]
        names = [n for n in names if not any(line.startswith(f"PASS {n} ") for line in quick.splitlines())]
        each = self.cap(110)

        def one(name):
            log = open(self.log(f"{name}.log"), "wb")
            with log:
                rc = run([self.bin(name), f"--gtest_output=json:{self.dir}/{name}.json"], each, log, subprocess.STDOUT)
            with open(self.log(f"{name}.rc"), "w", encoding="utf-8") as f:
                f.write(f"{rc}\n")
            return rc

        if self.dry:
            for name in names:
                self.append(self.log("dry.txt"), f"   dry: timeout {each} {self.bin(name)}")
            rcs = {}
        else:
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                rcs = dict(zip(names, pool.map(one, names)))
        for name in names:
            self.test_verdict(name, rcs.get(name, 124), self.log(f"{name}.log"))

    def step_chapter(self):
        found = sorted(glob.glob(f"{self.build}/python/asyncmlp/_asyncmlp.cpython-*.so"))
        if not found and not self.dry:
            self.record("NOTE", "chapter", "no Python module in the archive (built without pybind11)")
            return
        path = {"PYTHONPATH": f"{self.build}/python"}
        if not self.dry:
            with open(self.log("chapter_import.log"), "wb") as f:
                rc = run(["python3", "-c", "import asyncmlp"], 30, f, subprocess.STDOUT, dict(os.environ, **path))
            if rc:
                last = (read(self.log("chapter_import.log")).splitlines() or [""])[-1]
                self.record("NOTE", "chapter", f"python3 here cannot load {os.path.basename(found[0])}: {last}")
                return
        if self.x(self.cap(60), ["python3", "examples/chapter.py", "--device", "cuda", "--json"],
                  out=self.log("chapter_cuda.json"), err=self.log("chapter_cuda.txt"), env=path) == 0:
            if self.dry:
                return
            self.record("PASS", "chapter", "\n".join(re.sub(" +", " ", line) for line in
                                                     lines_matching(self.log("chapter_cuda.txt"), "none / batch")))
            with open(self.log("chapter_cuda.json"), "rb") as src, open(self.log("chapter_cuda.md"), "wb") as md:
                subprocess.run(["python3", "examples/chapter.py", "--markdown"], stdin=src, stdout=md,
                               stderr=subprocess.STDOUT)
        else:
            self.record("FAIL", "chapter", "see chapter_cuda.txt")

    def step_normals(self):
        if self.x(self.cap(45), [self.bin("bench_cuda_random"), "--benchmark_min_time=0.1",
                                 f"--benchmark_out={self.dir}/normals.json", "--benchmark_out_format=json"],
                  out=self.log("normals.log")) == 0:
            if self.dry:
                return
            try:
                ratios = normals_ratios(self.log("normals.json"))
            except (OSError, ValueError, LookupError, ZeroDivisionError) as e:
                print(f"normals.json: {e!r}", file=sys.stderr)
                ratios = ""
            self.record("PASS", "normals vs curandGenerateNormal", ratios)
        else:
            self.record("FAIL", "bench_cuda_random", "see normals.log")

    def compare_run(self, tag, args):
        log = self.log(f"{tag}.log")
        if self.x(self.cap(60), [self.bin("train_mlp"), "--config", "configs/d2l.ini", "--device", "cuda", "--quiet",
                                 *args, "--summary-json", self.log(f"{tag}.json")], out=log) == 0:
            self.record("PASS", f"train_mlp {' '.join(args)}", squeezed(lines_matching(log, "samples/s|x batch")[:8]))
        else:
            self.record("FAIL", f"train_mlp {' '.join(args)}", f"see {tag}.log")

    def step_policies(self):
        self.compare_run("policies", ["--compare-policies"])

    def step_hostwork(self):
        self.compare_run("hostwork", ["--compare", "--host-work", "match"])

    def step_sweep(self):
        log = self.log("sweep.log")
        if self.x(self.cap(75), [self.bin("train_mlp"), "--config", "configs/d2l.ini", "--device", "cuda", "--sweep",
                                 "--summary-json", self.log("sweep.json")], out=log) == 0:
            self.record("PASS", "train_mlp --sweep", squeezed(lines_matching(log, "^off by|^  ")[-4:]))
            if not self.dry:  # the plot, where matplotlib is installed (the table is in sweep.log either way)
                with open(log, "ab") as f:
                    rc = subprocess.run(["python3", "tools/plot_sweep.py", self.log("sweep.json"), "-o",
                                         self.log("sweep.png")], stdout=f, stderr=subprocess.STDOUT).returncode
                if rc:
                    self.record("NOTE", "plot_sweep", "no plot (see sweep.log)")
        else:
            self.record("FAIL", "train_mlp --sweep", "see sweep.log")

    # --- the command ----------------------------------------------------------------------------

    def main(self, steps):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir, exist_ok=True)
        os.makedirs(self.cfg["OUT"], exist_ok=True)
        open(self.results, "w").close()
        self.t0 = time.monotonic()
        if self.dry:
            self.say(f"dry run: GPU commands are printed to {self.dir}/dry.txt with their timeouts, not run")
        if self.cmd != "quick":
            if not os.path.isdir(f"{self.build}/bin") and not self.dry:
                print(f"no {self.build}/bin: run quick first (it unpacks {self.cfg['ARCHIVE']})", file=sys.stderr)
                return 2
            self.setup_env()
        self.run_steps(steps)
        self.say(f"{self.cmd}: {self.now()} s of {self.budget}")
        if self.dry:
            sys.stdout.write(read(self.log("dry.txt")))
        self.say(f"results ({self.cmd})")
        sys.stdout.write(read(self.results))
        if self.cmd == "matrix" and os.path.isfile(self.log("goals.txt")):
            self.say("goals")
            sys.stdout.write(read(self.log("goals.txt")))
        self.pack()
        return self.status


def usage():
    print(f"usage: {sys.argv[0]} --plan | quick | matrix | deep | table QUICK_DIR [MATRIX_DIR]", file=sys.stderr)
    return 2


def main(argv):
    os.chdir(ROOT)
    try:
        cfg = config(os.environ)
    except ValueError:
        print(f"KIT_BUDGET={os.environ.get('KIT_BUDGET')}: not a number of seconds", file=sys.stderr)
        return 2
    if not argv:
        return usage()
    if argv[0] == "--plan":
        plan(cfg)
        return 0
    if argv[0] == "table":
        if not 2 <= len(argv) <= 3:
            return usage()
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import table
        table.main(argv[1], argv[2:])
        return 0
    if argv[0] not in COMMANDS:
        return usage()
    cmd, asked = argv[0], argv[1:]
    if any(s not in EXPECT for s in asked):
        return usage()
    steps = [s for s in COMMANDS[cmd] if not asked or s in asked]
    return Kit(cmd, cfg).main(steps)


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(main(sys.argv[1:]))
