#!/usr/bin/env python3
"""End-to-end speed of `loopscope scan` on generated logs of three mixes —
reasoning-heavy, content-heavy, tool-heavy — in MB per CPU second (user +
system time of the process), for every profile and for the shared read
path alone (`extended` with only `max-turns`). The peer profiles' CPU is
also printed as a ratio to extended's (issue 42: at most 1.0 on every mix).

    python3 benches/e2e/scan_mixes.py [--mib 100] [--rounds 3] [--bin target/release/loopscope]

The logs are native JSONL written to a temporary folder (deterministic:
the same bytes every run), made of pseudo-words from a large vocabulary so
no detector latches by chance and the whole input is worked through. The
best of `--rounds` runs is printed; read ratios, not absolutes, on a busy
machine.
"""

import argparse
import json
import os
import pathlib
import random
import resource
import subprocess
import sys
import tempfile

PROFILES = ["seed", "gemini-cli", "extended", "qwen-code", "openhands", "roo-code", "cline", "roo-fork", "openhands-v0", "vllm",
            "openclaw", "opencode"]
# Issue 42's bar: each peer profile no slower than extended per MB on every mix.
PEERS = ["openclaw", "vllm", "openhands", "opencode"]
SYLLABLES = "ka lo mi ne ru ta shi po ve da zu fe gi ho ja ku ly mo ni pa qu ri so tu vi wa xe yo ze".split()


def vocabulary(rng, n=3000):
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randrange(1, 4))))
    return sorted(words)


def write_mix(path, mix, size):
    rng = random.Random(42)
    vocab = vocabulary(rng)

    def words(n):
        return " ".join(rng.choice(vocab) for _ in range(n)) + " "

    t = 0.0
    call = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"type":"prompt","text":"fix the failing test"}\n')
        written = 0
        while written < size:
            t += 0.05
            if mix in ("reasoning", "content"):
                if rng.randrange(300) == 0:
                    line = '{"type":"request"}'
                else:
                    line = json.dumps({"type": mix, "text": words(4), "ts": round(t, 2)})
            else:
                call += 1
                name = ("read_file", "shell", "grep")[rng.randrange(3)]
                args = {"path": f"src/f{rng.randrange(500)}.rs", "pattern": words(3)}
                ok = rng.randrange(10) != 0
                line = (
                    json.dumps({"type": "tool_call", "id": f"c{call}", "name": name, "args": args, "ts": round(t, 2)})
                    + "\n"
                    + json.dumps({"type": "tool_result", "id": f"c{call}", "ok": ok, "output": words(30)})
                )
                if rng.randrange(20) == 0:
                    line = '{"type":"request"}\n' + line
            f.write(line + "\n")
            written += len(line) + 1


def cpu_of(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    root = pathlib.Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin", default=str(root / "target" / "release" / "loopscope"))
    ap.add_argument("--profiles", default=",".join(PROFILES))
    ap.add_argument("--mixes", default="reasoning,content,tools")
    args = ap.parse_args()
    size = args.mib << 20
    runs = [(p, None) for p in args.profiles.split(",")] + [("extended", "max-turns")]
    with tempfile.TemporaryDirectory() as tmp:
        logs = {}
        for mix in args.mixes.split(","):
            logs[mix] = pathlib.Path(tmp) / f"{mix}.jsonl"
            write_mix(logs[mix], mix, size)
        mb = {m: p.stat().st_size / 1e6 for m, p in logs.items()}
        print(f"MB per CPU second, {args.mib} MiB logs, best of {args.rounds} (on {os.cpu_count()} cores)")
        print("| run | " + " | ".join(f"{m}-heavy" for m in logs) + " |")
        print("| --- |" + " --- |" * len(logs))
        cpus = {}
        for profile, only in runs:
            cells = []
            for mix, path in logs.items():
                cmd = [args.bin, "scan", "--profile", profile, str(path)]
                if only:
                    cmd[2:2] = ["--detectors", only]
                cpu = min(cpu_of(cmd) for _ in range(args.rounds))
                cpus[(profile, only, mix)] = cpu
                cells.append(f"{mb[mix] / cpu:.0f}")
            label = f"{profile} (only {only}: the read path)" if only else profile
            print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
        # Issue 29's bar: extended at most 1.3 times seed's CPU on every mix.
        if all((p, None, m) in cpus for p in ("seed", "extended") for m in logs):
            ratios = [cpus[("extended", None, m)] / cpus[("seed", None, m)] for m in logs]
            print("| extended ÷ seed, CPU | " + " | ".join(f"{r:.2f}×" for r in ratios) + " |")
        for peer in PEERS:
            if all((p, None, m) in cpus for p in (peer, "extended") for m in logs):
                ratios = [cpus[(peer, None, m)] / cpus[("extended", None, m)] for m in logs]
                print(f"| {peer} ÷ extended, CPU | " + " | ".join(f"{r:.2f}×" for r in ratios) + " |")


if __name__ == "__main__":
    main()
