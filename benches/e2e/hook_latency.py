#!/usr/bin/env python3
"""What `loopscope hook claude-code` costs at each tool call, as Claude Code
runs it: a process per call, JSON on stdin, on a transcript of --mib MiB
(about 1,000 earlier calls with long results) that grows by one call and
its result between two hook calls. Prints the first call (which reads the
whole transcript) and the percentiles of the --calls calls after it (which
read only what was appended), in milliseconds of wall time.

    python3 benches/e2e/hook_latency.py [--mib 10] [--calls 200] [--bin target/release/loopscope]

The hook's state goes to a temporary cache folder. Read it on a quiet
machine: it is wall time, process start included.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time


def call(n, name="Read", args=None, text="hello"):
    args = args or {"file_path": f"/work/src/file{n % 37}.rs"}
    a = {"type": "assistant", "uuid": f"a{n}", "sessionId": "s", "requestId": f"r{n}",
         "message": {"id": f"m{n}", "role": "assistant",
                     "content": [{"type": "tool_use", "id": f"t{n}", "name": name, "input": args}]}}
    r = {"type": "user", "uuid": f"u{n}", "sessionId": "s",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": text}]}}
    return json.dumps(a) + "\n" + json.dumps(r) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=float, default=10)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--bin", default="target/release/loopscope")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    transcript = os.path.join(tmp, "session.jsonl")
    body = "fn main() { println!(\"hello\"); }\n" * 300
    n = 0
    with open(transcript, "w") as f:
        f.write(json.dumps({"type": "user", "uuid": "p", "sessionId": "s",
                            "message": {"role": "user", "content": "Fix the build"}}) + "\n")
        while f.tell() < a.mib * (1 << 20):
            f.write(call(n, text=body))
            n += 1
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    env.pop("LOOPSCOPE_HOOK_LOG", None)

    def hook(k):
        stdin = json.dumps({"session_id": "s", "transcript_path": transcript, "hook_event_name": "PreToolUse",
                            "tool_name": "Read", "tool_input": {"file_path": f"/work/src/file{k % 37}.rs"},
                            "tool_use_id": f"t{k}"})
        t0 = time.perf_counter()
        p = subprocess.run([a.bin, "hook", "claude-code"], input=stdin, capture_output=True, text=True, env=env)
        ms = (time.perf_counter() - t0) * 1000
        assert p.returncode == 0, p.stderr
        return ms

    first = hook(n)
    times = []
    for k in range(n, n + a.calls):
        with open(transcript, "a") as f:
            f.write(call(k, text=body))
        times.append(hook(k + 1))
    times.sort()
    pct = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    size = os.path.getsize(transcript) / (1 << 20)
    print(f"transcript {size:.1f} MiB, {n} calls before the first hook call")
    print(f"first call (reads it all): {first:.1f} ms")
    print(f"next {a.calls} calls: p50 {pct(0.5):.1f} ms, p95 {pct(0.95):.1f} ms, max {times[-1]:.1f} ms, "
          f"mean {statistics.mean(times):.1f} ms")


if __name__ == "__main__":
    main()
