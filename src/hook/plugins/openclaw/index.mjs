// loopscope's loop guard for OpenClaw, written by `loopscope hook install
// openclaw`; `loopscope hook uninstall openclaw` removes it. Each tool call
// is shown to `loopscope hook` before it runs (with its result after it
// ran); a call that would make a loop detector fire is blocked, and the
// model reads why. If loopscope cannot be run, the call is allowed.
import { spawnSync } from "node:child_process";

const COMMAND = __LOOPSCOPE_COMMAND__;

function ask(message) {
  const r = spawnSync(COMMAND[0], COMMAND.slice(1), {
    input: JSON.stringify(message) + "\n",
    encoding: "utf8",
    timeout: 10000,
  });
  if (r.error || r.status !== 0) return undefined;
  try {
    return JSON.parse((r.stdout || "").trim() || "null");
  } catch {
    return undefined;
  }
}

export default {
  id: "loopscope",
  name: "loopscope loop guard",
  description: "Refuses a tool call that would make one of loopscope's loop detectors fire.",
  register(api) {
    api.on("before_tool_call", (event, ctx) => {
      const verdict = ask({
        event: "before",
        session: ctx?.sessionId ?? ctx?.sessionKey,
        id: event.toolCallId,
        tool: event.toolName,
        args: event.params,
      });
      if (verdict && verdict.decision === "deny") return { block: true, blockReason: verdict.reason };
      return undefined;
    });
    api.on("after_tool_call", (event, ctx) => {
      ask({
        event: "after",
        session: ctx?.sessionId ?? ctx?.sessionKey,
        id: event.toolCallId,
        tool: event.toolName,
        args: event.params,
        ok: !event.error,
        output: event.error ? String(event.error) : event.result,
      });
    });
  },
};
