"""The OpenHands SDK's own StuckDetector (openhands-sdk 1.58.2 from PyPI, which
needs CPython >= 3.12), run over native loopscope streams, for bench.py.

This is the real detector: `openhands.sdk.conversation.stuck_detector.StuckDetector`
over the SDK's own pydantic events (`ActionEvent`, `ObservationEvent`,
`AgentErrorEvent`, `MessageEvent`, `CondensationSummaryEvent`), driven as
`LocalConversation._check_stuck_or_nudge` drives it: `get_action_error_nudge()`
then `is_stuck()` before every LLM call and once at the end (the same mapping
as originals.openhands_run, spec §6). Only the conversation state is a
stand-in: `active_branch(limit)` returns the last `limit` events of a Python
list, where the SDK's state walks `parent_id` links through its (file-backed)
event log: a cheaper state, so the detector's time is if anything understated.

What is timed: the run loop alone (appending the prepared events to the list
and the checks), best of `--repeat` passes, each with a fresh detector. Turning
the native JSON into SDK events (pydantic validation, the agent's work in the
SDK, not the detector's) happens before the clock starts.

    target/agents/openhands/venv/bin/python benches/peers/openhands_sdk.py < cases.json

reads `[{"events": [...], "thresholds": {...} | null, "repeat": N}, ...]` and
prints one JSON line per case: `{"found": [[event index, "nudge"|"stuck"]], "ms": best}`.
"""

import json
import sys
import time

from openhands.sdk.conversation.stuck_detector import StuckDetector
from openhands.sdk.conversation.types import StuckDetectionThresholds
from openhands.sdk.event import (
    ActionEvent,
    AgentErrorEvent,
    Condensation,
    MessageEvent,
    ObservationEvent,
)
from openhands.sdk.llm import Message, MessageToolCall, TextContent
from openhands.sdk.mcp.definition import MCPToolAction, MCPToolObservation


class ListState:
    """The one thing StuckDetector asks of ConversationState."""

    def __init__(self):
        self.events = []

    def active_branch(self, limit=None):
        return self.events[-limit:] if limit else list(self.events)


def message(source, role, text):
    return MessageEvent(source=source, llm_message=Message(role=role, content=[TextContent(text=text)]))


def prepare(native):
    """Native events -> [("add", sdk event) | ("check", native index) | ("prompt", sdk event)]."""
    ops = []
    response = None  # [text, calls]
    pending = {}
    n = 0

    def close():
        if response is not None and response[1] == 0 and response[0]:
            ops.append(("add", message("agent", "assistant", response[0])))

    for i, e in enumerate(native):
        t = e.get("type")
        if t == "prompt":
            ops.append(("prompt", message("user", "user", e.get("text") or "")))
            response = None
        elif t == "request":
            close()
            ops.append(("check", i))
            response = ["", 0]
        elif t == "content" and response is not None:
            response[0] += e.get("text", "")
        elif t == "note" and e.get("kind") in ("compaction", "condensation"):
            # The SDK's log holds a Condensation, never a CondensationSummaryEvent (spec §6).
            n += 1
            ops.append(("add", Condensation(forgotten_event_ids=set(), summary=e.get("text") or "",
                                            llm_response_id=f"resp_{n}")))
        elif t == "tool_call":
            thought = ""
            if response is not None:
                response[1] += 1
                thought = response[0] if response[1] == 1 else ""
            n += 1
            name, call_id = e.get("name") or "", f"call_{n}"
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            ops.append(("add", ActionEvent(
                thought=[TextContent(text=thought)] if thought else [],
                action=MCPToolAction(data=args), tool_name=name, tool_call_id=call_id,
                tool_call=MessageToolCall(id=call_id, name=name, arguments=json.dumps(args),
                                          origin="completion"),
                llm_response_id=f"resp_{n}")))
            pending[e.get("id")] = (name, call_id)
        elif t == "tool_result":
            name, call_id = pending.pop(e.get("id"), ("", "call_0"))
            out = e.get("output") or ""
            if e.get("ok", True):
                ops.append(("add", ObservationEvent(
                    observation=MCPToolObservation(tool_name=name, content=[TextContent(text=out)]),
                    action_id=call_id, tool_name=name, tool_call_id=call_id)))
            else:
                ops.append(("add", AgentErrorEvent(error=out, tool_name=name, tool_call_id=call_id)))
    close()
    ops.append(("check", len(native)))
    return ops


def run(ops, thresholds):
    state = ListState()
    detector = StuckDetector(state, thresholds)
    log, found, stuck = state.events, [], False
    for op, x in ops:
        if op == "add":
            log.append(x)
        elif op == "prompt":
            log.append(x)
            stuck = False
        elif not stuck:
            nudge = detector.get_action_error_nudge()
            if nudge is not None:
                log.append(MessageEvent(source="environment",
                                        llm_message=Message(role="user", content=[TextContent(text=nudge)])))
                found.append((x, "nudge"))
            elif detector.is_stuck():
                stuck = True
                found.append((x, "stuck"))
    return found


def main():
    for case in json.load(sys.stdin):
        ops = prepare(case["events"])
        th = StuckDetectionThresholds(**case["thresholds"]) if case.get("thresholds") else None
        best, found = float("inf"), None
        for _ in range(max(1, case.get("repeat", 1))):
            t = time.process_time()
            found = run(ops, th)
            best = min(best, time.process_time() - t)
        print(json.dumps({"found": found, "ms": best * 1000}), flush=True)


if __name__ == "__main__":
    main()
