#!/usr/bin/env python3
"""Profiles `vllm` and `openhands` against their originals, on the same events:

- vllm: vLLM 0.33.0's `check_sequence_repetition` (benches/peers/originals.py,
  the two functions copied unchanged) under CPython, called after every token
  as vLLM's scheduler calls it;
- openhands: the OpenHands SDK 1.58.2's own `StuckDetector` from PyPI, over
  the SDK's own pydantic events (benches/peers/openhands_sdk.py), under the
  CPython >= 3.12 it needs (`--sdk-python`, default the venv .ci/install-agents
  makes for tests/agent_pins.tsv's `openhands` row,
  target/agents/openhands/venv/bin/python). Without it, the plain-class stand-in in
  originals.py is used and every line says "STAND-IN".

    python3 benches/peers/bench.py speed [--tokens 1000000] [--steps 200000] [--bin target/release/loopscope]
    python3 benches/peers/bench.py check [--cases 300] [--bin target/release/loopscope] [--only vllm|openhands] [--stand-in]

`speed` writes one long native log per profile (deterministic) and times:
- the original's detection loop alone (CPU time; the log's parse and, for
  the SDK, building its pydantic events are outside the clock; best of 3 for
  the SDK, one pass for vLLM's check which takes seconds);
- loopscope's detection alone, the same way: `cargo bench --bench peers`
  (benches/peers.rs) parses the log first, then times the profile's engine
  over the parsed events (best of 5 passes, in CPU time like the originals);
- `loopscope scan --json --profile P` over the file (CPU time of the child:
  reading, parsing, detecting and writing the JSON), best of 3.
It prints the three and both ratios, and fails unless all three fire at the
same events.
`check` runs random small streams through both and compares where they fire
(the same kinds of sequence the public cases hold: short alphabets so
repetition is common, random parameters; tool loops with errors, thoughts,
parallel calls, prompts, monologues, condensations).
"""

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import originals  # noqa: E402


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))


def detection_only(path, profile, sets, repeat=5):
    """loopscope's engine alone over the parsed events (benches/peers.rs): (events fired at, best ms)."""
    # LOOPSCOPE_PEERS_BENCH: a built benches/peers.rs binary, to skip cargo.
    cmd = [os.environ["LOOPSCOPE_PEERS_BENCH"]] if os.environ.get("LOOPSCOPE_PEERS_BENCH") else [
        "cargo", "bench", "-q", "--bench", "peers", "--"]
    p = subprocess.run(cmd + [path, profile, str(repeat), *sets], cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"cargo bench --bench peers failed: {p.stderr.strip()[-500:]}")
    doc = json.loads(p.stdout.strip().splitlines()[-1])
    return sorted(doc["detections"]), doc["cpu_ms"]


def best_scan(binary, path, profile, sets, runs=3):
    found, best = None, float("inf")
    for _ in range(runs):
        found, cpu = scan(binary, path, profile, sets)
        best = min(best, cpu)
    return found, best


def sdk_runs(args, cases):
    """The real SDK's detector over each case: [(found, ms)], or None without the SDK."""
    if args.stand_in or not os.path.exists(args.sdk_python):
        return None
    env = dict(os.environ, OPENHANDS_SUPPRESS_BANNER="1")
    p = subprocess.run([args.sdk_python, os.path.join(HERE, "openhands_sdk.py")], input=json.dumps(cases),
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"the SDK's detector failed: {p.stderr.strip()[-800:]}")
    out = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return [([tuple(f) for f in o["found"]], o["ms"]) for o in out]


def scan(binary, path, profile, sets):
    args = [binary, "scan", "--json", "--profile", profile]
    for s in sets:
        args += ["--set", s]
    before = child_cpu()
    p = subprocess.run(args + [path], capture_output=True, text=True)
    cpu = child_cpu() - before
    if p.returncode not in (0, 1):
        raise SystemExit(f"loopscope exited {p.returncode}: {p.stderr.strip()[:300]}")
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()], cpu


def write(path, events):
    with open(path, "w", encoding="utf-8") as f:
        for e in events:
            f.write(json.dumps(e, ensure_ascii=False) + "\n")


# ------------------------------------------------------------------ vLLM

def vllm_stream(rng, requests, length, vocab, loop_every=0):
    """Requests of `length` one-token deltas drawn from a Zipf-like vocabulary;
    every `loop_every`-th request ends in a repeated line."""
    events, token_lists = [], []
    weights = [1.0 / (k + 1) for k in range(vocab)]
    for r in range(requests):
        toks = rng.choices(range(vocab), weights=weights, k=length)
        if loop_every and r % loop_every == loop_every - 1:
            line = rng.choices(range(vocab), k=20)
            toks = toks[: length // 2] + line * 6
        events.append({"type": "request"})
        events += [{"type": "content", "text": f"t{t} "} for t in toks]
        token_lists.append(toks)
    return events, token_lists


def vllm_hits_to_events(events, hits):
    """(request, length) → event index, as the profile reports them."""
    starts = [i for i, e in enumerate(events) if e["type"] == "request"]
    return sorted(starts[r] + n for r, n in hits)


def vllm_speed(args, tmp):
    rng = random.Random(7)
    length = 2000
    events, toks = vllm_stream(rng, max(1, args.tokens // length), length, 30000, loop_every=10)
    path = os.path.join(tmp, "vllm.jsonl")
    write(path, events)
    size = os.path.getsize(path)
    params = (1024, 16, 4)
    t0 = time.process_time()
    hits = originals.vllm_run(toks, *params)
    py = time.process_time() - t0
    sets = ["vllm-repetition.max_pattern_size=1024", "vllm-repetition.min_pattern_size=16",
            "vllm-repetition.min_count=4"]
    found, ls = best_scan(args.bin, path, "vllm", sets)
    engine_found, engine_ms = detection_only(path, "vllm", sets)
    want = vllm_hits_to_events(events, hits)
    same = sorted(d["event"] for d in found) == want and engine_found == want
    n = sum(len(t) for t in toks)
    report("vllm", f"{n:,} tokens in {len(toks):,} requests, 16..1024 x4", "vLLM's check (CPython)", size,
           len(want), py * 1000, engine_ms, ls * 1000, same)
    return same


def report(profile, what, original, size, found, orig_ms, engine_ms, scan_ms, same):
    print(f"{profile}: {what} ({size / 1e6:.1f} MB, {found} detections): {original} {orig_ms:.1f} ms; "
          f"loopscope detection alone {engine_ms:.1f} ms ({orig_ms / engine_ms:.0f}x), "
          f"whole scan {scan_ms:.1f} ms CPU ({orig_ms / scan_ms:.0f}x); same verdicts: {same}")


def vllm_check(args, tmp):
    rng = random.Random(11)
    bad = 0
    for c in range(args.cases):
        mx, mn, cnt = rng.randrange(0, 10), rng.randrange(0, 6), rng.randrange(0, 6)
        min_tokens = rng.choice([0, 0, 0, rng.randrange(0, 30)])
        requests = []
        events = []
        for _ in range(rng.randrange(1, 4)):
            alphabet = rng.randrange(1, 4)
            toks = [rng.randrange(alphabet) for _ in range(rng.randrange(0, 60))]
            requests.append(toks)
            events.append({"type": "request"})
            for t in toks:
                kind = rng.choice(["content", "reasoning"])
                events.append({"type": kind, "text": "abc"[t]})
        hits = []
        for r, toks in enumerate(requests):
            out = []
            for t in toks:
                out.append(t)
                if len(out) >= min_tokens and originals.check_sequence_repetition(out, mx, mn, cnt):
                    hits.append((r, len(out)))
                    break
        want = vllm_hits_to_events(events, hits)
        path = os.path.join(tmp, f"v{c}.jsonl")
        write(path, events)
        sets = [f"vllm-repetition.max_pattern_size={mx}", f"vllm-repetition.min_pattern_size={mn}",
                f"vllm-repetition.min_count={cnt}", f"vllm-repetition.min_tokens={min_tokens}"]
        found, _ = scan(args.bin, path, "vllm", sets)
        got = sorted(d["event"] for d in found)
        if got != want:
            bad += 1
            print(f"vllm case {c} ({mx}/{mn}/{cnt}, min_tokens {min_tokens}): want {want}, got {got}")
    print(f"vllm check: {args.cases - bad}/{args.cases} agree with vLLM's functions")
    return bad == 0


# --------------------------------------------------------- OpenHands SDK

def openhands_stream(rng, steps, loopy=True):
    calls = [("terminal", {"command": "pytest -x"}), ("terminal", {"command": "ls"}),
             ("str_replace_editor", {"command": "view", "path": "/w/a.py"}),
             ("read_file", {"path": "a.py", "limit": 50}), ("read_file", {"limit": 50, "path": "a.py"})]
    outputs = ["1 failed", "ok", "def f(): ...", "line1"]
    errors = ["Command not found: pytest", "boom"]
    events = [{"type": "prompt", "text": "fix the tests"}]
    cid = 0
    for _ in range(steps):
        r = rng.random()
        if r < 0.03:
            events.append({"type": "prompt", "text": "go on"})
            continue
        if r < 0.05:
            events.append({"type": "note", "kind": "condensation", "text": "context condensed"})
            continue
        events.append({"type": "request"})
        if rng.random() < 0.3:
            events.append({"type": "content", "text": rng.choice(["Checking.", "Attempt again.", "Done?"])})
        if rng.random() < 0.15:
            continue  # a response without a call
        for _ in range(1 if rng.random() < 0.8 else 2):
            cid += 1
            name, a = calls[rng.randrange(len(calls) if loopy else len(calls))]
            events.append({"type": "tool_call", "id": f"c{cid}", "name": name, "args": a})
            ok = rng.random() < 0.7
            out = rng.choice(outputs) if ok else rng.choice(errors)
            events.append({"type": "tool_result", "id": f"c{cid}", "ok": ok, "output": out})
    if rng.random() < 0.5:
        events.append({"type": "request"})
    return events


def openhands_check(args, tmp):
    rng = random.Random(13)
    bad = 0
    cases = []
    for c in range(args.cases):
        events = openhands_stream(rng, rng.randrange(1, 40))
        th = {"action_observation": 4, "action_error": 3, "monologue": 3, "alternating_pattern": 6}
        if rng.random() < 0.3:
            th = {k: rng.randrange(1, 7) for k in th}
        cases.append((events, th))
    sdk = sdk_runs(args, [{"events": e, "thresholds": t} for e, t in cases])
    label = "the SDK 1.58.2's detector" if sdk else "the STAND-IN for the SDK's detector (originals.py)"
    for c, (events, th) in enumerate(cases):
        if sdk:
            want = sorted(i for i, _ in sdk[c][0])
        else:
            orig = originals.StuckDetector  # thresholds per case
            originals.StuckDetector = lambda log, _t=th: orig(log, **_t)
            try:
                want = sorted(i for i, _ in originals.openhands_run(events))
            finally:
                originals.StuckDetector = orig
        path = os.path.join(tmp, f"o{c}.jsonl")
        write(path, events)
        found, _ = scan(args.bin, path, "openhands", [f"openhands-sdk-stuck.{k}={v}" for k, v in th.items()])
        got = sorted(d["event"] for d in found)
        if got != want:
            bad += 1
            print(f"openhands case {c} {th}: want {want}, got {got}")
    print(f"openhands check: {args.cases - bad}/{args.cases} agree with {label}")
    return bad == 0


def openhands_speed(args, tmp):
    rng = random.Random(5)
    events = openhands_stream(rng, args.steps)
    path = os.path.join(tmp, "openhands.jsonl")
    write(path, events)
    size = os.path.getsize(path)
    sdk = sdk_runs(args, [{"events": events, "thresholds": None, "repeat": 3}])
    if sdk:
        found_py, py_ms = sdk[0]
        label = "the SDK 1.58.2's StuckDetector (CPython 3.12, pydantic events)"
    else:
        t0 = time.process_time()
        found_py = originals.openhands_run(events)
        py_ms = (time.process_time() - t0) * 1000
        label = "the STAND-IN for the SDK's detector (plain classes; no Python 3.12 SDK here)"
    found, ls = best_scan(args.bin, path, "openhands", [])
    engine_found, engine_ms = detection_only(path, "openhands", [])
    want = sorted(i for i, _ in found_py)
    same = sorted(d["event"] for d in found) == want and engine_found == want
    report("openhands", f"{len(events):,} events", label, size, len(want), py_ms, engine_ms, ls * 1000, same)
    return same


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["speed", "check"])
    ap.add_argument("--bin", default="target/release/loopscope")
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--only", choices=["vllm", "openhands"])
    ap.add_argument("--stand-in", action="store_true", help="the plain-class stand-in even where the SDK is installed")
    ap.add_argument("--sdk-python", default=os.environ.get("LOOPSCOPE_SDK_PYTHON",
                                                          os.path.join(ROOT, "target", "agents", "openhands", "venv", "bin",
                                                                       "python")))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        runs = {"speed": {"vllm": vllm_speed, "openhands": openhands_speed},
                "check": {"vllm": vllm_check, "openhands": openhands_check}}[args.mode]
        ok = True
        for name, f in runs.items():
            if args.only in (None, name):
                ok &= f(args, tmp)
    sys.exit(0 if ok else 1)


main()
