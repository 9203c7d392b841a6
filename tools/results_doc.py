#!/usr/bin/env python3
"""docs/results.md from train_mlp's summaries: markdown tables, the machine named.

    bash tools/run.sh                                     # writes out/summary.json, out/host_work.json, out/sweep.json
    python3 tools/results_doc.py -o docs/results.md       # reads those three (the last two if present)
    python3 tools/results_doc.py out/summary.json out/d2l.json="The book's size" --note "Idle." -o docs/results.md

Inputs: summaries written by `train_mlp --summary-json` (one object per run, or a
list of them, as with --compare; with --sweep an object whose "sweep" rows get
a table of their own), each given as FILE or FILE=TITLE. With none,
out/summary.json and, when they exist, out/host_work.json and out/sweep.json.
For each file: a memory table (increase measured against the memory model's
prediction, with each run's ops and bytes per batch), for `--compare-policies`
a table of the working sets and the data ahead, and a throughput table (h, d
and the throughput model's wall time); for a sweep, one table of every (h/d,
mode) measured beside both models, headed by the bytes per batch.
tools/check_doc_figures.py checks the figures a run determines against one. The header names the machine
this script runs on (cores, CPU model, memory, kernel, OPENBLAS_CORETYPE, GPUs):
run it where train_mlp ran. Python 3 standard library only; bad input: one line
on stderr, exit status 2.
"""
import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_figures  # noqa: E402

DEFAULTS = [("out/summary.json", "The comparison (`bash tools/run.sh`)"),
            ("out/host_work.json", "The throughput side: `--host-work match`"),
            ("out/sweep.json", "The whole trade: `--sweep`")]


def fail(msg):
    print(f"results_doc.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def read_runs(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read '{path}': {e}")
    sweep = None
    if isinstance(data, dict) and isinstance(data.get("runs"), list):  # --sweep
        sweep = data
        data = data["runs"]
    runs = data if isinstance(data, list) else [data]
    if not runs or not all(isinstance(r, dict) and "mode" in r for r in runs):
        fail(f"'{path}' is not a train_mlp summary (objects with a 'mode')")
    return runs, sweep


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(next(l for l in f if l.startswith("MemTotal")).split()[1])
        mem = f", {kib / 2**20:.0f} GiB memory"
    except (OSError, StopIteration, ValueError):
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    gpus = "none visible"
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout
            names = [l.split(":", 1)[1].split("(")[0].strip() for l in out.splitlines() if l.startswith("GPU")]
            gpus = ", ".join(names) or gpus
        except (OSError, subprocess.SubprocessError):
            pass
    coretype = os.environ.get("OPENBLAS_CORETYPE") or "unset"
    return (f"{cores} cores ({model}){mem}, Linux {platform.release()}, "
            f"`OPENBLAS_CORETYPE` {coretype}, GPU: {gpus}")


def num(v, spec, scale=1.0):
    """v * scale formatted, or "" where the summary has no number (a failed run's loss)."""
    return f"{v * scale:{spec}}" if isinstance(v, (int, float)) else ""


def mb(b):
    return num(b, ".1f", 1e-6)


def bytes_per_batch(b):
    """The memory model's unit, exact and in MB: "bytes per batch 3153920 (3.15 MB)"."""
    return f"bytes per batch {b} ({b * 1e-6:.2f} MB)" if isinstance(b, int) else "bytes per batch unknown"


def ratio(a, b, digits=3):
    ok = all(isinstance(v, (int, float)) and v for v in (a, b))
    return f"{a / b:.{digits}f}" if ok else ""


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def sweep_section(title, path, runs, sweep):
    first = runs[0]
    model = sweep.get("sweep_model", {})
    out = [f"## {title}", "",
           f"`{path}`: {first.get('device', '?')}, {first.get('batches', '?')} batches of "
           f"{first.get('batch_size', '?')}; d = {num(model.get('device_s'), '.3f', 1e3)} ms per batch "
           f"(synchronized), h with no host work {num(model.get('queue_host_s'), '.3f', 1e3)} ms, "
           f"{bytes_per_batch(model.get('bytes_per_batch'))}. "
           "Each pair is measured, then predicted; m/p is measured / predicted."]
    rows, misses = [], []
    for r in sweep["sweep"]:
        tput = ratio(r.get("samples_per_s"), r.get("predicted_samples_per_s"), 2)
        mem = ratio(r.get("mem_increase_bytes"), r.get("predicted_increase_bytes"), 2)
        rows.append([num(r.get("fraction"), "g"), f"`{r['mode']}`", num(r.get("x"), ".2f"),
                     num(r.get("samples_per_s"), ".0f"), num(r.get("predicted_samples_per_s"), ".0f"), tput,
                     num(r.get("speedup"), ".2f"), num(r.get("predicted_speedup"), ".2f"),
                     r.get("peak_backlog", ""), r.get("predicted_backlog", ""),
                     mb(r.get("mem_increase_bytes")), mb(r.get("predicted_increase_bytes")), mem])
        for what, v in (("samples/s", tput), ("memory", mem)):
            if v and abs(float(v) - 1) > 0.1:
                misses.append(f"`{r['mode']}` at h/d {r.get('fraction')}: {what} {v}")
    out += ["", table(["h/d", "mode", "h/d measured", "samples/s", "predicted", "m/p", "speed-up", "predicted",
                       "peak backlog", "predicted", "mem incr MB", "predicted MB", "m/p"], rows)]
    out += ["", "More than 10% off: " + ("; ".join(misses) if misses else "none") + "."]
    return "\n".join(out)


def section(title, path, runs):
    first = runs[0]
    devices = ", ".join(d["device"] for d in first.get("devices", [])) or first.get("device", "?")
    out = [f"## {title}", "",
           f"`{path}`: {devices}, {first.get('batches', '?')} batches of {first.get('batch_size', '?')}."]
    hw = first.get("host_work_s") or 0
    if hw:
        out[-1] += f" Host work {hw * 1e3:.3f} ms per batch ({first.get('host_work_kind', 'wait')})."
    unfinished = [r for r in runs if r.get("status", "completed") != "completed"]
    for r in unfinished:
        out.append(f"\n`{r.get('label', r['mode'])}` {r['status']} after {r.get('batches_done', '?')} "
                   f"batches: {r.get('error') or ''}")
    rows = []
    for r in runs:
        pred = r.get("predicted_increase_bytes")
        rows.append([f"`{r.get('label', r['mode'])}`", num(r.get("wall_s"), ".3f"), num(r.get("samples_per_s"), ".0f"),
                     mb(r.get("mem_increase_bytes")), mb(r.get("rss_increase_bytes")),
                     r.get("peak_backlog_batches", ""), r.get("peak_queue_depth", ""),
                     num(r.get("ops_per_batch"), "g"), num(r.get("bytes_per_batch"), ".2f", 1e-6), mb(pred),
                     ratio(r.get("mem_increase_bytes"), pred), num(r.get("final_loss"), ".6g"),
                     num(r.get("minor_faults_steady_per_batch"), ".0f")])
    out += ["", table(["mode", "wall s", "samples/s", "mem incr MB", "RSS incr MB", "peak backlog", "peak depth",
                       "ops/batch", "MB/batch", "predicted MB", "meas/pred", "final loss", "faults/batch"], rows)]
    # The allocation policies (--compare-policies): what the memory model predicts under --alloc run.
    if any(r.get("alloc_policy") == "run" for r in runs):
        rows = [[f"`{r.get('label', r['mode'])}`", r.get("alloc_policy", ""), "yes" if r.get("data_queue") else "no",
                 mb(r.get("working_set_bytes")), num(r.get("data_bytes_per_batch"), ".2f", 1e-6),
                 num(r.get("peak_data_lead_batches"), "g"), mb(r.get("peak_data_ahead_bytes")),
                 mb(r.get("mem_increase_bytes")), mb(r.get("predicted_increase_bytes"))] for r in runs]
        out += ["", "The policies: under `--alloc run` the prediction is the working set, plus with the data "
                "queue the data generated ahead (data MB per batch × the peak data lead in batches).", "",
                table(["policy", "alloc", "data queue", "working set MB", "data MB/batch", "peak data lead",
                       "data ahead MB", "mem incr MB", "predicted MB"], rows)]
    base = next((r for r in runs if r["mode"] == "batch"), None)
    rows = []
    for r in runs:
        if "predicted_wall_s" not in r:
            continue
        rows.append([f"`{r.get('label', r['mode'])}`", num(r.get("samples_per_s"), ".0f"),
                     ratio(r.get("samples_per_s"), base and base.get("samples_per_s"), 2),
                     num(r.get("host_s_per_batch"), ".3f", 1e3), num(r.get("device_s_per_batch"), ".3f", 1e3),
                     num(r["predicted_wall_s"], ".3f"), ratio(r.get("wall_s"), r["predicted_wall_s"])])
    if rows:
        out += ["", table(["mode", "samples/s", "vs batch", "h ms", "d ms", "predicted s", "meas/pred"], rows)]
    multi = [r for r in runs if len(r.get("devices", [])) > 1]
    if multi:
        rows = [[f"`{r.get('label', r['mode'])}`", d["device"], d.get("rows_per_batch", ""),
                 mb(d.get("mem_increase_bytes")), mb(d.get("predicted_increase_bytes")),
                 ratio(d.get("mem_increase_bytes"), d.get("predicted_increase_bytes")),
                 d.get("peak_backlog_batches", "")] for r in multi for d in r["devices"]]
        out += ["", "Per device:", "",
                table(["mode", "device", "rows", "mem incr MB", "predicted MB", "meas/pred", "peak backlog"], rows)]
    return "\n".join(out)


LEGEND = """\
How to read the tables (the README has the long form; the models are in
[memory-model.md](memory-model.md)): `mem incr` is the peak of tracked bytes in
use during the run less the bytes in use at its start, `RSS incr` the same from
the resident set; `peak backlog` the most batches alive at once; `peak depth`
the most ops queued and not yet run; `ops/batch` the ops queued per batch (a
run that reads every loss peaks at one batch's); `MB/batch` the bytes the
frontend allocates per batch; `predicted` the memory model (peak backlog ×
bytes per batch, capped by a bound); `faults/batch` the minor
page faults of the median batch in the run's second half; `h` and `d` the
frontend's and the device's time per batch; `predicted s` the throughput
model. In the sweep, `h/d` is the fraction asked for, then measured; the
speed-up is samples/s over `batch`'s at the same h/d (predicted: batch's
predicted wall time over the mode's); the predicted backlog comes from h and d
alone (K − floor((K−1)·h/d), capped by the bound), the predicted memory from
the measured backlog. Where h ≥ d the predicted backlog is 1 and the measured
peak is often 2: a peak over the whole run, which one batch the device
finishes late (a stall on a shared machine) raises; and that second batch is
mostly done, its earlier buffers freed, so the memory lands under the
prediction (peak backlog × bytes per batch is an upper bound). In the policies
table (`--compare-policies`, unsynchronized), the working set is the most bytes
the queue's pending ops held in blocks that exist, and the data lead how many
batches of data the data queue generated ahead of training. The memory figures
(bytes per batch, a synchronized run's increase, depth and backlog, the working
sets) follow from the shapes, whatever the machine's load;
`tools/check_doc_figures.py` checks them against a run. MB are 10^6 bytes."""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="*", metavar="FILE[=TITLE]", help="train_mlp --summary-json files")
    ap.add_argument("-o", "--output", help="write here instead of stdout")
    ap.add_argument("--note", default="", help="a sentence printed under the machine (e.g. how busy it was)")
    a = ap.parse_args()
    if a.inputs:
        inputs = [(s.split("=", 1) + [""])[:2] for s in a.inputs]
        inputs = [(p, t or os.path.basename(p)) for p, t in inputs]
    else:
        if not os.path.exists(DEFAULTS[0][0]):
            fail(f"no '{DEFAULTS[0][0]}': run 'bash tools/run.sh' first, or name summaries")
        inputs = [d for i, d in enumerate(DEFAULTS) if i == 0 or os.path.exists(d[0])]
    # The command that regenerates the page, less --note (a note is about one set of runs).
    shown = [shlex.quote(x) for x in a.inputs] + (["-o", shlex.quote(a.output)] if a.output else [])
    command = " ".join(["python3 tools/results_doc.py"] + shown)
    # Each section's figures between markers, and beside the page (docs/figures/results.json
    # for docs/results.md) the record of the runs that gave them: tools/doc_figures.py.
    where = f"Machine: {machine()}." + (f" {a.note}" if a.note else "")
    parts = ["# Results", "", "<!-- figures results -->",
             "Generated by `tools/results_doc.py`; these commands regenerate this page "
             "(`tools/run.sh` writes `out/summary.json`, `out/host_work.json` and `out/sweep.json`; "
             "a section from another file names the command that wrote it):", "",
             "```sh", "bash tools/run.sh", command, "```", "", where, "<!-- /figures -->", ""]
    commands = {"results": "bash tools/run.sh; " + command}
    for path, title in inputs:
        runs, sweep = read_runs(path)
        head, _, body = (sweep_section(title, path, runs, sweep) if sweep else section(title, path, runs)).partition("\n")
        name = doc_figures.block_name(title)
        commands[name] = title
        parts.append(f"{head}\n\n<!-- figures {name} -->\n{body.strip()}\n<!-- /figures -->\n")
    parts.append(LEGEND)
    text = "\n".join(parts) + "\n"
    records = {name: {"kind": "machine", "machine": where[len("Machine: "):], "command": commands[name],
                      "figures": figs} for name, figs in doc_figures.figures_of("results.md", text).items()}
    if a.output:
        record = os.path.join(os.path.dirname(os.path.abspath(a.output)), "figures",
                              os.path.splitext(os.path.basename(a.output))[0] + ".json")
        try:
            with open(a.output, "w") as f:
                f.write(text)
            os.makedirs(os.path.dirname(record), exist_ok=True)
            with open(record, "w") as f:
                f.write(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
        except OSError as e:
            print(f"results_doc.py: error: cannot write '{a.output}' and its record: {e}", file=sys.stderr)
            sys.exit(1)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
