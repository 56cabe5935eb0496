"""Real clients for tests/record_sdk.rs: the `openai` and `anthropic` Python
SDKs talking to `loopscope record`. Reads a JSON list of jobs on stdin,
prints a JSON list of results: for each job the raw bytes of the streamed
body (`raw`), or what the SDK made of the answer (`sdk` streamed through the
SDK's own stream helpers, `whole` not streamed; `tools`: a tool loop run as
an agent runs it, and how many calls it ran), or the error it raised."""

import json
import sys

import anthropic
import openai

SYSTEM = "Be brief."


def chat(client, job):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": job["prompt"]}]
    args = dict(model="gpt-test", messages=messages)
    if job["mode"] == "raw":
        with client.chat.completions.with_streaming_response.create(stream=True, **args) as r:
            return {"raw": b"".join(r.iter_bytes()).hex()}
    if job["mode"] == "whole":
        c = client.chat.completions.create(**args)
        m = c.choices[0].message
        calls = [{"name": t.function.name, "args": json.loads(t.function.arguments)} for t in m.tool_calls or []]
        return {"text": m.content or "", "finish": c.choices[0].finish_reason, "tool_calls": calls}
    text, reasoning, finish, calls = "", "", None, {}
    for chunk in client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **args):
        for ch in chunk.choices:
            d = ch.delta
            text += d.content or ""
            reasoning += (d.model_extra or {}).get("reasoning_content") or ""
            for t in d.tool_calls or []:
                call = calls.setdefault(t.index, {"name": "", "args": ""})
                call["name"] += (t.function.name or "") if t.function else ""
                call["args"] += (t.function.arguments or "") if t.function else ""
            if ch.finish_reason:
                finish = ch.finish_reason
    calls = [{"name": c["name"], "args": json.loads(c["args"])} for c in calls.values()]
    return {"text": text, "reasoning": reasoning, "finish": finish, "tool_calls": calls}


def responses(client, job):
    args = dict(model="gpt-5-test", instructions=SYSTEM, input=job["prompt"])
    if job["mode"] == "raw":
        with client.responses.with_streaming_response.create(stream=True, **args) as r:
            return {"raw": b"".join(r.iter_bytes()).hex()}
    if job["mode"] == "whole":
        final = client.responses.create(**args)
    else:
        reasoning = ""
        with client.responses.stream(**args) as s:
            for ev in s:
                if ev.type == "response.reasoning_summary_text.delta":
                    reasoning += ev.delta
            final = s.get_final_response()
    calls = [{"name": o.name, "args": json.loads(o.arguments)} for o in final.output if o.type == "function_call"]
    out = {"text": final.output_text, "finish": final.status, "tool_calls": calls}
    if job["mode"] == "sdk":
        out["reasoning"] = reasoning
    return out


def messages(client, job):
    args = dict(model="claude-test", max_tokens=1024, system=SYSTEM, messages=[{"role": "user", "content": job["prompt"]}])
    if job["mode"] == "raw":
        with client.messages.with_streaming_response.create(stream=True, **args) as r:
            return {"raw": b"".join(r.iter_bytes()).hex()}
    if job["mode"] == "whole":
        final = client.messages.create(**args)
    else:
        with client.messages.stream(**args) as s:
            for _ in s:
                pass
            final = s.get_final_message()
    return {
        "text": "".join(b.text for b in final.content if b.type == "text"),
        "reasoning": "".join(b.thinking for b in final.content if b.type == "thinking"),
        "finish": final.stop_reason,
        "tool_calls": [{"name": b.name, "args": b.input} for b in final.content if b.type == "tool_use"],
    }


RESULT = "fn main() {}"
TURNS = 6


def chat_tools(client, job):
    """A tool loop as an agent runs it: each call answered, up to TURNS
    rounds, until an answer calls no tool; counts the calls it ran."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": job["prompt"]}]
    ran, text, finish = 0, "", None
    for _ in range(TURNS):
        text, finish, calls = "", None, {}
        for chunk in client.chat.completions.create(model="gpt-test", messages=messages, stream=True):
            for ch in chunk.choices:
                d = ch.delta
                text += d.content or ""
                for t in d.tool_calls or []:
                    call = calls.setdefault(t.index, {"id": "", "name": "", "args": ""})
                    call["id"] = call["id"] or t.id or ""
                    call["name"] += (t.function.name or "") if t.function else ""
                    call["args"] += (t.function.arguments or "") if t.function else ""
                if ch.finish_reason:
                    finish = ch.finish_reason
        if not calls:
            break
        messages.append({"role": "assistant", "content": text or None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
            for c in calls.values()]})
        for c in calls.values():
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": RESULT})
            ran += 1
    return {"text": text, "finish": finish, "ran": ran}


def responses_tools(client, job):
    items = [{"role": "user", "content": job["prompt"]}]
    ran, final = 0, None
    for _ in range(TURNS):
        with client.responses.stream(model="gpt-5-test", instructions=SYSTEM, input=items) as s:
            for _ev in s:
                pass
            final = s.get_final_response()
        calls = [o for o in final.output if o.type == "function_call"]
        if not calls:
            break
        for o in calls:
            items.append({"type": "function_call", "call_id": o.call_id, "name": o.name, "arguments": o.arguments})
            items.append({"type": "function_call_output", "call_id": o.call_id, "output": RESULT})
            ran += 1
    return {"text": final.output_text, "finish": final.status, "ran": ran}


def messages_tools(client, job):
    messages = [{"role": "user", "content": job["prompt"]}]
    ran, final = 0, None
    for _ in range(TURNS):
        with client.messages.stream(model="claude-test", max_tokens=1024, system=SYSTEM, messages=messages) as s:
            for _ev in s:
                pass
            final = s.get_final_message()
        uses = [b for b in final.content if b.type == "tool_use"]
        if not uses:
            break
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input} for b in uses]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": RESULT} for b in uses]})
        ran += len(uses)
    text = "".join(b.text for b in final.content if b.type == "text")
    return {"text": text, "finish": final.stop_reason, "ran": ran}


def main():
    jobs = json.load(sys.stdin)
    results = []
    for job in jobs:
        try:
            tools = job["mode"] == "tools"
            if job["api"] == "anthropic":
                client = anthropic.Anthropic(base_url=job["base"], api_key=job["key"], max_retries=0, timeout=60)
                results.append((messages_tools if tools else messages)(client, job))
            else:
                client = openai.OpenAI(base_url=job["base"], api_key=job["key"], max_retries=0, timeout=60)
                if job["api"] == "chat":
                    results.append((chat_tools if tools else chat)(client, job))
                else:
                    results.append((responses_tools if tools else responses)(client, job))
        except (openai.APIStatusError, anthropic.APIStatusError) as e:
            results.append({"error": {"class": type(e).__name__, "status": e.status_code, "message": str(e)}})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
