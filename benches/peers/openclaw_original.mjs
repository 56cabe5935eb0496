// OpenClaw's own tool-loop detection (npm openclaw@2026.9.6, the unmodified
// `dist/tool-loop-detection-*.mjs`) run over loopscope native events, with
// its caller's rules as `dist/agent-tools.before-tool-call-*.mjs` has them
// (admitToolCallBatch, shouldEmitLoopWarning, the veto records) and the
// event mapping of shared/design/openclaw.md §10. The reference for
// benches/peers/peer_speed.py (speed) and tests/peer_originals.rs
// (verdicts on generated sequences).
//
// usage: node openclaw_original.mjs DIST FILE.jsonl... [--repeat N]
// prints one JSON line per detection {file, event, level, detector, count}
// (file: the index of FILE among the arguments; each file is a session of
// its own, with fresh state), then {"elapsed_ms": ...}: the detection work
// alone (parsing excluded), per pass over all the files.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dist, ...rest] = process.argv.slice(2);
const at = rest.indexOf("--repeat");
const repeat = at >= 0 ? Number(rest[at + 1]) : 1;
const files = at >= 0 ? rest.slice(0, at) : rest;
const mod = readdirSync(dist).find((f) => /^tool-loop-detection-[^.]*\.mjs$/.test(f) && !f.includes("config"));
const { t: detectToolCallLoop, r: recordToolCall, i: recordToolCallOutcome, n: hashToolCall } = await import(
  pathToFileURL(join(dist, mod)).href
);

const ALIASES = new Map([["bash", "exec"], ["apply-patch", "apply_patch"], ["cron", "automations"]]);
const norm = (name) => {
  const n = String(name || "tool").trim().toLowerCase();
  return ALIASES.get(n) ?? n;
};
const config = { enabled: true };
const sessions = files.map((file) =>
  readFileSync(file, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l)),
);

function run(events, emit) {
  const state = { toolCallHistory: [], toolLoopWarningBuckets: new Map() };
  let runNo = 0;
  let batch = null; // { calls: [...], projected: state copy }
  const open = []; // calls awaiting results: {id, name, params, blocked, answered}
  const shouldWarn = (key, count) => {
    const bucket = Math.floor(count / 10);
    if (bucket <= (state.toolLoopWarningBuckets.get(key) ?? 0)) return false;
    state.toolLoopWarningBuckets.set(key, bucket);
    while (state.toolLoopWarningBuckets.size > 256) {
      state.toolLoopWarningBuckets.delete(state.toolLoopWarningBuckets.keys().next().value);
    }
    return true;
  };
  const commit = () => {
    if (batch && !batch.vetoed) {
      for (const c of batch.calls) recordToolCall(state, c.name, c.params, c.id, config, { runId: `r${runNo}` });
    }
    batch = null;
  };
  events.forEach((e, index) => {
    const scope = { runId: `r${runNo}` };
    switch (e.type) {
      case "prompt":
        commit();
        runNo += 1;
        break;
      case "request":
        commit();
        break;
      case "tool_call": {
        const name = norm(e.name);
        const params = e.args ?? {};
        const call = { id: e.id, name, params, blocked: false, answered: false };
        open.push(call);
        if (!batch) batch = { calls: [], projected: { ...state, toolCallHistory: [...state.toolCallHistory] }, vetoed: null };
        if (batch.vetoed) {
          call.blocked = true;
          if (hashToolCall(name, params) === batch.vetoed) {
            recordToolCall(state, name, params, e.id, config, { runId: `r${runNo}` });
            state.toolCallHistory.at(-1).outcomeKind = "tool-loop-veto";
          }
          break;
        }
        const r = detectToolCallLoop(batch.projected, name, params, config, scope);
        if (r.stuck && r.level === "critical") {
          emit({ event: index, level: "critical", detector: r.detector, count: r.count });
          const key = hashToolCall(name, params);
          for (const c of [...batch.calls, call]) {
            c.blocked = true;
            if (hashToolCall(c.name, c.params) === key) {
              recordToolCall(state, c.name, c.params, c.id, config, scope);
              state.toolCallHistory.at(-1).outcomeKind = "tool-loop-veto";
            }
          }
          batch.vetoed = key;
          batch.calls = [];
          break;
        }
        if (r.stuck) {
          const key = `${scope.runId}:${r.warningKey ?? `${r.detector}:${name}`}`;
          if (shouldWarn(key, r.count)) emit({ event: index, level: "warning", detector: r.detector, count: r.count });
        }
        const scratch = { toolCallHistory: [] };
        recordToolCall(scratch, name, params, e.id, config, scope);
        scratch.toolCallHistory[0].outcomeKind = "tool-loop-veto";
        batch.projected.toolCallHistory.push(scratch.toolCallHistory[0]);
        batch.calls.push(call);
        break;
      }
      case "tool_result": {
        commit();
        let at = -1;
        for (let i = open.length - 1; i >= 0; i--) {
          if (e.id !== undefined ? open[i].id === e.id : !open[i].answered) {
            at = i;
            break;
          }
        }
        if (at < 0) break;
        const [call] = open.splice(at, 1);
        if (call.blocked) break;
        let result, error;
        if (e.ok === false) {
          const o = e.output;
          error = new Error(o === undefined ? "" : typeof o === "string" ? o : JSON.stringify(o));
        } else if (e.output === undefined) {
          result = undefined;
        } else if (typeof e.output === "string") {
          result = { content: [{ type: "text", text: e.output }], details: {} };
        } else if (e.output && typeof e.output === "object" && !Array.isArray(e.output) && ("content" in e.output || "details" in e.output)) {
          result = e.output;
        } else {
          result = { content: [{ type: "text", text: JSON.stringify(e.output) }], details: {} };
        }
        recordToolCallOutcome(state, { toolName: call.name, toolParams: call.params, toolCallId: call.id, result, error, config, runId: scope.runId });
        break;
      }
      default:
        break;
    }
  });
}

let out = [];
const t0 = process.hrtime.bigint();
for (let i = 0; i < repeat; i++) {
  out = [];
  sessions.forEach((events, file) => run(events, (d) => out.push({ file, ...d })));
}
const elapsed = Number(process.hrtime.bigint() - t0) / 1e6 / repeat;
for (const d of out) console.log("@@" + JSON.stringify(d));
console.log("@@" + JSON.stringify({ elapsed_ms: elapsed, events: sessions.reduce((n, s) => n + s.length, 0) }));
