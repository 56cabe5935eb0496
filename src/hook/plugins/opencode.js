// loopscope's loop guard for opencode and Kilo CLI, written by
// `loopscope hook install`; `loopscope hook uninstall` removes it.
// Each tool call is shown to `loopscope hook` before it runs (with its
// result after it ran); a call that would make a loop detector fire is
// refused, and the model reads why. If loopscope cannot be run, the call
// is allowed.
import { spawnSync } from "node:child_process"

const COMMAND = __LOOPSCOPE_COMMAND__

function ask(message) {
  const r = spawnSync(COMMAND[0], COMMAND.slice(1), {
    input: JSON.stringify(message) + "\n",
    encoding: "utf8",
    timeout: 10000,
  })
  if (r.error || r.status !== 0) return undefined
  try {
    return JSON.parse((r.stdout || "").trim() || "null")
  } catch {
    return undefined
  }
}

export const LoopscopeGuard = async () => ({
  "tool.execute.before": async (input, output) => {
    const verdict = ask({ event: "before", session: input.sessionID, id: input.callID, tool: input.tool, args: output.args })
    if (verdict && verdict.decision === "deny") throw new Error(verdict.reason)
  },
  "tool.execute.after": async (input, output) => {
    ask({ event: "after", session: input.sessionID, id: input.callID, tool: input.tool, args: input.args, ok: true, output: output && output.output })
  },
})
