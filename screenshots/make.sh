#!/bin/sh
# Regenerates every picture in screenshots/ from sample-logs/, with the real
# TUI drawn off-screen (`loopscope screenshot`). Run from the project root:
#
#     sh screenshots/make.sh
#
# tests/screenshots.rs runs each `loopscope screenshot` line below and fails
# when a committed picture differs from what it draws now, so after a change
# to the TUI run this and review the pictures.
set -eu
cargo build --quiet --release
loopscope() { target/release/loopscope "$@"; }

# The demo at its fired block-cycle: the two sentences, their repeats, the checkpoint.
loopscope screenshot sample-logs/demo.jsonl --at 278 --select block-cycle -o screenshots/demo-block-cycle.svg
# A numbered plan in Chinese whose numbers grow: list-cycle's lines, numbering ignored.
loopscope screenshot sample-logs/list-loop-zh.jsonl --at 666 --select list-cycle -o screenshots/list-cycle-zh.svg
# Chanting in the answer: chunk-chant's positions of the repeated 50-char chunk.
loopscope screenshot sample-logs/chanting-content-en.jsonl --at 66 --select chunk-chant -o screenshots/chunk-chant.svg
# The key bindings (the `?` overlay).
loopscope screenshot sample-logs/demo.jsonl --keys '?' -o screenshots/help.svg
# `loopscope tail` following an agent that reads the same file again and again.
loopscope screenshot sample-logs/identical-tool-calls.jsonl --live --select tool-repeat --size 120x44 -o screenshots/tail.svg
# Debugging a false positive: identical lines of code trip block-cycle (and list-cycle).
loopscope screenshot sample-logs/fp-code-block.jsonl --at 220 --select block-cycle --size 120x44 -o screenshots/fp-code-block.svg
# At 80x24 the detail of a detection comes first; PgDn scrolls it, z zooms it.
loopscope screenshot sample-logs/demo.jsonl --at 278 --select block-cycle --size 80x24 -o screenshots/demo-80x24.svg
# The inspector on the failed call: pretty arguments, the error and its full output.
loopscope screenshot sample-logs/demo.jsonl --keys 'ffailed<Enter><Tab><Tab>jo' -o screenshots/inspector.svg
# Every detection of a stream (d), Enter goes to one.
loopscope screenshot sample-logs/identical-tool-calls.jsonl --keys d --size 120x30 -o screenshots/detections-list.svg
# The light theme, with a caption for a report: reason and parameters under the picture.
loopscope screenshot sample-logs/fp-code-block.jsonl --at 220 --select list-cycle --theme light --caption -o screenshots/fp-code-block-light.svg
# Three profiles compared on one stream: each profile's detections in its colour, and what each would have saved.
loopscope screenshot sample-logs/identical-tool-calls.jsonl --profile seed,gemini-cli,extended --size 140x40 -o screenshots/compare.svg
# `loopscope record --guard extended` stopped a looping response: the session it wrote while
# the agent streamed (a scripted Anthropic stream of sentence-loop-en.jsonl's thinking, sent
# through the proxy), text-loop's detection, and the guard's note as the last event.
loopscope screenshot tests/fixtures/record/guarded-loop.jsonl --profile extended --select text-loop -o screenshots/record-guard.svg
# `loopscope hook claude-code` refused the third identical Read: the transcript Claude Code
# 2.1.197 wrote (tests/hook_agents.rs, kept with LOOPSCOPE_KEEP_RUNS), the refused call in the
# inspector with the reason the model read.
loopscope screenshot tests/fixtures/hook/claude-code-refused.jsonl --at 16 --profile extended --size 140x32 --keys '<Tab><Tab>o' -o screenshots/hook-refused.svg
# `loopscope watch`: every agent's sessions in a made-up home, newest first,
# a sub-agent under its parent, fired / streaming / idle.
home=$(mktemp -d)
p="$home/.claude/projects/-home-dev-shop"
mkdir -p "$p/5f0c1d2e/subagents" "$home/.codex/sessions/2026/11/20" "$home/.gemini/tmp/shop/chats"
cp sample-logs/formats/claude-code-session.jsonl "$p/5f0c1d2e.jsonl"
cp sample-logs/formats/claude-code-session.jsonl "$p/5f0c1d2e/subagents/agent-a1b2c3.jsonl"
head -n 4 sample-logs/formats/claude-code-session.jsonl > "$p/0b1c2d3e.jsonl"
cp sample-logs/formats/codex-rollout-errors.jsonl "$home/.codex/sessions/2026/11/20/rollout-2026-11-20T10-00-00-0199.jsonl"
head -n 6 sample-logs/formats/gemini-cli-session.jsonl > "$home/.gemini/tmp/shop/chats/session-2026-11-20T10-00-9e8d7c6b.jsonl"
touch -d '40 minutes ago' "$p/5f0c1d2e.jsonl"
touch -d '38 minutes ago' "$p/5f0c1d2e/subagents/agent-a1b2c3.jsonl"
touch -d '3 hours ago' "$home/.codex/sessions/2026/11/20/rollout-2026-11-20T10-00-00-0199.jsonl"
touch -d '2 days ago' "$home/.gemini/tmp/shop/chats/session-2026-11-20T10-00-9e8d7c6b.jsonl"
HOME="$home" XDG_CONFIG_HOME="$home/.config" target/release/loopscope watch --snapshot screenshots/watch.svg --size 120x14
rm -rf "$home"
