"""Generated OpenClaw event sequences (loopscope native JSONL): a few tools,
few argument variants and few results each, so that OpenClaw's rules fire,
with prompts, batches of calls in one response, missing results and
compactions mixed in. Used by peer_speed.py (big inputs) and by the
differential test against the original module (tests/peer_originals.rs).

usage: gen_openclaw.py SEED CALLS [OUT]   (stdout when OUT is missing)
       gen_openclaw.py --dir DIR FIRST_SEED COUNT CALLS   (DIR/SEED.jsonl each)
"""
import json
import random
import sys


def sequence(seed, calls):
    rnd = random.Random(seed)
    # per sequence: how loopy it is
    n_args = rnd.choice([1, 1, 2, 3])
    n_results = rnd.choice([1, 1, 2, 4])
    tools = rnd.sample(["read", "Bash", "exec", "process", "write", "message", "web_fetch", "command_status", "grep"],
                       rnd.choice([1, 2, 3]))
    p_batch = rnd.choice([0.0, 0.0, 0.2, 0.5])
    p_missing = rnd.choice([0.0, 0.0, 0.1])
    p_prompt = rnd.choice([0.0, 0.01, 0.03])
    p_compact = rnd.choice([0.0, 0.0, 0.05])
    ev = [{"type": "prompt", "text": "go 🙏 请"}]
    n = 0
    while n < calls:
        r = rnd.random()
        if r < p_prompt:
            ev.append({"type": "prompt", "text": "again"})
        if rnd.random() < p_compact:
            ev.append({"type": "note", "kind": "condensation", "text": "context compacted"})
        ev.append({"type": "request"})
        k = 1 + (rnd.randint(1, 3) if rnd.random() < p_batch else 0)
        batch = []
        for _ in range(k):
            n += 1
            tool = rnd.choice(tools)
            a = rnd.randrange(n_args)
            if tool == "process":
                args = {"action": rnd.choice(["poll", "poll", "log", "kill"]), "sessionId": f"s{a}"}
            elif tool == "message":
                args = {"action": rnd.choice(["send", "read"]), "to": f"c{a}", "text": "hi"}
            elif tool in ("Bash", "exec"):
                args = {"command": f"npm test -- {a}"}
            elif tool == "write":
                args = {"path": f"f{a}.txt", "content": "x"}
            else:
                args = {"path": f"src/{a}.rs", "limit": 10} if rnd.random() < 0.5 else {"limit": 10, "path": f"src/{a}.rs"}
            cid = f"c{n}"
            ev.append({"type": "tool_call", "id": cid, "name": tool, "args": args})
            batch.append((cid, tool, args))
        if rnd.random() < 0.3:
            ev.append({"type": "content", "text": "checking 检查"})
        rnd.shuffle(batch) if rnd.random() < 0.2 else None
        for cid, tool, args in batch:
            if rnd.random() < p_missing:
                continue
            v = rnd.randrange(n_results)
            res = {"type": "tool_result", "id": cid, "ok": True}
            if tool == "web_fetch" and rnd.random() < 0.8:
                res.update(ok=False, output=rnd.choice(["Unknown tool: web_fetch", "Tool web_fetch not found", "unknown tool 'web.fetch'"]))
            elif tool in ("Bash", "exec"):
                out = f"FAIL tests/{v}.ts\nDone in {rnd.randint(1, 9)}.{rnd.randint(0, 99):02d}s"
                code = rnd.choice([1, 1, 0, 2])
                res["output"] = {"content": [{"type": "text", "text": out}],
                                 "details": {"status": "completed", "exitCode": code, "aggregated": out}}
            elif tool == "process":
                res["output"] = {"content": [{"type": "text", "text": f"line {v}"}],
                                 "details": {"status": "running", "exitCode": None}}
            elif tool == "write":
                res["output"] = {"content": [{"type": "text", "text": "ok"}], "details": {"changed": v != 0}}
            elif tool == "message":
                res["output"] = {"content": [{"type": "text", "text": f"sent {n}"}],
                                 "details": {"ok": True, "messageId": f"m{n}", "ts": n, "v": v}}
            elif rnd.random() < 0.2:
                res.update(ok=False, output=rnd.choice(["ENOENT 文件", "", {"code": v}]))
            else:
                res["output"] = rnd.choice([f"contents v{v} 🧪", {"lines": v}, [v, "x"]])
            if rnd.random() < 0.05:
                del res["id"]
            ev.append(res)
    return ev


def main():
    if sys.argv[1] == "--dir":
        out, first, count, calls = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        for seed in range(first, first + count):
            with open(f"{out}/{seed}.jsonl", "w", encoding="utf-8") as f:
                f.write("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in sequence(seed, calls)))
        return
    seed, calls = int(sys.argv[1]), int(sys.argv[2])
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in sequence(seed, calls))
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
