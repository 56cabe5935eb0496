// loopscope's loop guard for pi, written by `loopscope hook install pi`;
// `loopscope hook uninstall pi` removes it. Each tool call is shown to
// `loopscope hook` before it runs (with its result after it ran); a call
// that would make a loop detector fire is blocked, and the model reads
// why. If loopscope cannot be run, the call is allowed.
import { spawnSync } from "node:child_process";

const COMMAND: string[] = __LOOPSCOPE_COMMAND__;

function ask(message: unknown): any {
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

export default function (pi: any) {
  pi.on("tool_call", async (event: any, ctx: any) => {
    const verdict = ask({
      event: "before",
      session: ctx?.sessionManager?.getSessionId?.(),
      id: event.toolCallId,
      tool: event.toolName,
      args: event.input,
    });
    if (verdict && verdict.decision === "deny") return { block: true, reason: verdict.reason };
    return undefined;
  });
  pi.on("tool_result", async (event: any, ctx: any) => {
    ask({
      event: "after",
      session: ctx?.sessionManager?.getSessionId?.(),
      id: event.toolCallId,
      tool: event.toolName,
      args: event.input,
      ok: !event.isError,
      output: event.content,
    });
    return undefined;
  });
}
