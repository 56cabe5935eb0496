// opencode's doom_loop check (opencode-ai@1.18.33, SessionProcessor's
// `case "tool-call"`), transcribed faithfully to plain JavaScript: the
// original sits in a Bun single-file binary, bound to opencode's session
// storage, so it cannot be imported. The transcription keeps what the check
// does per call — the message's parts, `slice(-3)`, `every` with
// `JSON.stringify` of each input — and leaves out what it costs besides
// (reading the parts back from SQLite at every call), so the comparison
// flatters opencode. The spec's mapping (shared/design/opencode.md §4) turns
// loopscope native events into parts.
//
// usage: node opencode_doom_loop.mjs FILE.jsonl [--repeat N]
// prints @@{event} per ask, then @@{"elapsed_ms": ...} (parsing excluded).
import { readFileSync } from "node:fs";

const [file, ...rest] = process.argv.slice(2);
const repeat = rest[0] === "--repeat" ? Number(rest[1]) : 1;
const events = readFileSync(file, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
const DOOM_LOOP_THRESHOLD = 3;
const isRecord = (v) => typeof v === "object" && v !== null && !Array.isArray(v);

function run(ask) {
  let parts = [];
  let prev = null;
  events.forEach((e, index) => {
    const last = prev;
    prev = e.type;
    switch (e.type) {
      case "prompt":
      case "request":
        parts = [{ type: "step-start" }];
        break;
      case "reasoning":
        if (last !== "reasoning") parts.push({ type: "reasoning", text: e.text });
        break;
      case "content":
        if (last !== "content") parts.push({ type: "text", text: e.text });
        break;
      case "tool_call": {
        const input = isRecord(e.args) ? e.args : { value: e.args };
        parts.push({ type: "tool", tool: e.name, callID: e.id, state: { status: "running", input } });
        const lastThree = parts.slice(-DOOM_LOOP_THRESHOLD);
        if (
          lastThree.length === DOOM_LOOP_THRESHOLD &&
          lastThree.every(
            (p) =>
              p.type === "tool" &&
              p.tool === e.name &&
              p.state.status !== "pending" &&
              JSON.stringify(p.state.input) === JSON.stringify(input),
          )
        ) {
          ask({ event: index, permission: "doom_loop", patterns: [e.name] });
        }
        break;
      }
      default:
        prev = last; // results and notes add no part
    }
  });
}

let out = [];
const t0 = process.hrtime.bigint();
for (let i = 0; i < repeat; i++) {
  out = [];
  run((d) => out.push(d));
}
const elapsed = Number(process.hrtime.bigint() - t0) / 1e6 / repeat;
for (const d of out) console.log("@@" + JSON.stringify(d));
console.log("@@" + JSON.stringify({ elapsed_ms: elapsed, events: events.length }));
