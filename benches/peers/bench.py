#!/usr/bin/env python3
"""Profiles `vllm` and `openhands` against their originals (benches/peers/originals.py:
vLLM 0.33.0's repetition check and the OpenHands SDK 1.58.2's stuck detector,
both under CPython), on the same events.

    python3 benches/peers/bench.py speed [--tokens 1000000] [--steps 200000] [--bin target/release/loopscope]
    python3 benches/peers/bench.py check [--cases 300] [--bin target/release/loopscope]

`speed` writes one long native log per profile (deterministic), times the
original over its events (CPU time of this process, the parse of the log not
counted) and `loopscope scan --json --profile P` over the file (CPU time of
the child, reading and parsing included), and prints both and the ratio.
`check` runs random small streams through both and compares where they fire
(the same kinds of sequence the public cases hold: short alphabets so
repetition is common, random parameters; tool loops with errors, thoughts,
parallel calls, prompts, monologues).
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
    found, ls = scan(args.bin, path, "vllm", sets)
    same = sorted(d["event"] for d in found) == vllm_hits_to_events(events, hits)
    n = sum(len(t) for t in toks)
    print(f"vllm: {n:,} tokens in {len(toks):,} requests ({size / 1e6:.1f} MB), 16..1024 x4: "
          f"vLLM's check (CPython) {py:.2f} s, loopscope scan {ls:.3f} s (whole file), "
          f"{py / ls:.0f}x; same stops: {same} ({len(hits)})")
    return same


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
    for c in range(args.cases):
        events = openhands_stream(rng, rng.randrange(1, 40))
        th = {"action_observation": 4, "action_error": 3, "monologue": 3, "alternating_pattern": 6}
        if rng.random() < 0.3:
            th = {k: rng.randrange(1, 7) for k in th}
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
    print(f"openhands check: {args.cases - bad}/{args.cases} agree with the SDK's detector")
    return bad == 0


def openhands_speed(args, tmp):
    rng = random.Random(5)
    events = openhands_stream(rng, args.steps)
    path = os.path.join(tmp, "openhands.jsonl")
    write(path, events)
    size = os.path.getsize(path)
    t0 = time.process_time()
    found_py = originals.openhands_run(events)
    py = time.process_time() - t0
    found, ls = scan(args.bin, path, "openhands", [])
    same = sorted(d["event"] for d in found) == sorted(i for i, _ in found_py)
    print(f"openhands: {len(events):,} events ({size / 1e6:.1f} MB): the SDK's detector (CPython) {py:.2f} s, "
          f"loopscope scan {ls:.3f} s (whole file), {py / ls:.0f}x; same detections: {same} ({len(found_py)})")
    return same


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["speed", "check"])
    ap.add_argument("--bin", default="target/release/loopscope")
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--cases", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        if args.mode == "speed":
            ok = vllm_speed(args, tmp) & openhands_speed(args, tmp)
        else:
            ok = vllm_check(args, tmp) & openhands_check(args, tmp)
    sys.exit(0 if ok else 1)


main()
