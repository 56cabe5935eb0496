#!/usr/bin/env python3
"""What `loopscope watch` costs for a fleet of sessions (issue 31): memory
per session once they are all read, the time to read them, and what the
fleet costs while nothing changes — wakeups (context switches of every
thread) and CPU time over an idle window, counted, not timed.

    python3 benches/e2e/watch_fleet.py [--sessions 10000] [--idle 10] [--bin target/release/loopscope]

The sessions are copies of six agents' samples from sample-logs/ (Claude
Code, Codex, gemini-cli, and loopscope's own logs with tool loops and a
content chant), dated a day back so they are idle at once. Resident memory
is read from /proc (VmRSS once caught up, VmHWM the peak); the per-session
figure subtracts the resident size of `watch` over one session.
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLES = [
    "formats/claude-code-session.jsonl",
    "formats/codex-rollout-errors.jsonl",
    "formats/gemini-cli-session.jsonl",
    "identical-tool-calls.jsonl",
    "three-step-cycle.jsonl",
    "chanting-content-en.jsonl",
]


def make_fleet(folder, n):
    day_ago = time.time() - 86400
    blobs = [(pathlib.Path(s).name, (ROOT / "sample-logs" / s).read_bytes()) for s in SAMPLES]
    for i in range(n):
        name, data = blobs[i % len(blobs)]
        path = folder / f"s{i:05d}-{name}"
        path.write_bytes(data)
        os.utime(path, (day_ago, day_ago))


def status(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def switches(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        for line in open(f"/proc/{pid}/task/{task}/status"):
            if "ctxt_switches" in line:
                total += int(line.split()[1])
    return total


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def watch(binary, folder, n, idle):
    env = dict(os.environ, XDG_CONFIG_HOME="/nonexistent")
    env.pop("LOOPSCOPE_CONFIG", None)
    start = time.monotonic()
    child = subprocess.Popen(
        [binary, "watch", "--no-tui", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    for line in child.stderr:
        if "watching" in line:
            break
    caught_up = time.monotonic() - start
    time.sleep(1)
    rss, hwm = status(child.pid, "VmRSS"), status(child.pid, "VmHWM")
    s0, c0 = switches(child.pid), cpu_ticks(child.pid)
    time.sleep(idle)
    s1, c1 = switches(child.pid), cpu_ticks(child.pid)
    child.terminate()
    child.wait()
    return {"caught_up_s": caught_up, "rss_kb": rss, "hwm_kb": hwm, "wakeups": s1 - s0, "cpu_ticks": c1 - c0}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=10000)
    ap.add_argument("--idle", type=float, default=10, help="seconds of the idle window")
    ap.add_argument("--bin", default=str(ROOT / "target/release/loopscope"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as many:
        make_fleet(pathlib.Path(one), 1)
        make_fleet(pathlib.Path(many), args.sessions)
        base = watch(args.bin, one, 1, 1)
        fleet = watch(args.bin, many, args.sessions, args.idle)
    per = (fleet["rss_kb"] - base["rss_kb"]) * 1024 / args.sessions
    print(f"{args.sessions} sessions: read in {fleet['caught_up_s']:.1f} s; "
          f"resident {fleet['rss_kb'] / 1024:.1f} MB (peak {fleet['hwm_kb'] / 1024:.1f} MB, "
          f"one session {base['rss_kb'] / 1024:.1f} MB): {per / 1024:.1f} KB per session")
    print(f"idle {args.idle:.0f} s: {fleet['wakeups']} wakeups, {fleet['cpu_ticks']} CPU ticks "
          f"({os.sysconf('SC_CLK_TCK')} a second)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
