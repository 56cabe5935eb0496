#!/usr/bin/env python3
"""Writes the sample streams in sample-logs/ (deterministic: same output every run).

    python3 sample-logs/make_samples.py

Each sample is an agent session that reads like a real one — reasoning in
small deltas at a natural pace, tool calls with results — built to show one
thing: a detector firing, a false positive a reviewer would ask about, or a
blind spot. The expected detections live in sample-logs/expected.json and
are checked by tests/samples.rs; after changing a sample, update both.
"""
import json
import os
import random
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class Stream:
    def __init__(self, seed, title, model="example-model"):
        self.r = random.Random(seed)
        self.t = 0.0
        self.ev = [{"type": "meta", "format": "loopscope", "version": 1, "model": model,
                    "source": "loopscope sample", "title": title}]
        self.calls = 0

    def add(self, kind, **fields):
        e = {"type": kind, **fields, "ts": round(self.t, 3)}
        self.ev.append(e)

    def wait(self, lo, hi):
        self.t += self.r.uniform(lo, hi)

    def prompt(self, text):
        self.wait(0.5, 1.5)
        self.add("prompt", text=text)

    def request(self):
        self.wait(0.2, 0.6)
        self.add("request")

    def stream(self, kind, text, cps=280):
        """Text as the model streams it: a few tokens per delta."""
        cjk = any("\u4e00" <= c <= "\u9fff" for c in text)
        i = 0
        while i < len(text):
            n = self.r.randint(2, 7) if cjk else self.r.randint(6, 22)
            piece = text[i:i + n]
            i += n
            self.t += len(piece) / cps * self.r.uniform(0.7, 1.4)
            self.add(kind, text=piece)

    def think(self, text, cps=280):
        self.stream("reasoning", text, cps)

    def say(self, text, cps=320):
        self.stream("content", text, cps)

    def call(self, name, args, ok=True, output="", took=(0.3, 1.5)):
        self.calls += 1
        cid = f"call_{self.calls}"
        self.wait(0.1, 0.3)
        self.add("tool_call", id=cid, name=name, args=args)
        self.wait(*took)
        self.add("tool_result", id=cid, ok=ok, output=output)

    def note(self, text):
        self.wait(0.5, 1.0)
        self.add("note", text=text)

    def write(self, name):
        path = os.path.join(HERE, name)
        with open(path, "w", encoding="utf-8") as f:
            for e in self.ev:
                f.write(dumps(e) + "\n")


# ---------------------------------------------------------------- prose

EN_SUBJECTS = ["The parser", "This test", "The cache layer", "The retry loop", "The config loader",
               "The migration", "The request handler", "The tokenizer", "The scheduler", "The lock file",
               "The serializer", "The CLI wrapper", "The fixture", "The error path", "The worker pool",
               "The date formatter", "The HTTP client", "The build script", "The index", "The session store"]
EN_VERBS = ["returns early when", "only fails if", "skips the check when", "breaks as soon as",
            "assumes that", "retries forever if", "logs a warning when", "drops the last byte when",
            "caches the wrong key if", "times out because", "panics on the path where", "works again once"]
EN_CLAUSES = ["the input is empty", "the file is missing", "two workers race for the same entry",
              "the locale differs on CI", "the buffer ends without a newline", "the token has expired",
              "the path contains a space", "the clock jumps backwards", "the list is not sorted",
              "the response is gzip-compressed", "the schema is one version behind", "the queue is full",
              "the user id is zero", "the timezone is not UTC", "the fixture was generated on Windows"]
EN_TAILS = [", so I should check that first.", ", which would explain the failure.", ", but only in the slow path.",
            ". Let me look at the code around it.", ", and the test does not cover it.", ", if I read this correctly.",
            ". That matches the stack trace.", ", which is what the issue describes.", ". I need to confirm that."]
EN_OPENERS = ["", "", "", "Hmm, ", "Wait, ", "OK, ", "So ", "Actually, ", "I think "]

ZH_SUBJECTS = ["解析器", "这个测试", "缓存层", "重试逻辑", "配置加载器", "数据库迁移", "请求处理函数", "分词器",
               "调度器", "锁文件", "序列化代码", "命令行封装", "测试夹具", "错误处理分支", "线程池", "日期格式化",
               "HTTP 客户端", "构建脚本", "索引结构", "会话存储"]
ZH_PREDICATES = ["在输入为空时提前返回", "只在并发时失败", "忽略了超时参数", "没有处理末尾的换行符", "缓存了错误的键",
                 "假设列表总是有序的", "在慢路径里重复写入", "把时区当成了 UTC", "丢掉了最后一个字节", "在 CI 上读到了旧的配置",
                 "对中文路径做了两次转义", "在重试时没有重置计数器", "把空字符串当成了缺省值"]
ZH_TAILS = ["，所以我需要先确认这一点。", "，这可以解释之前的失败。", "，让我再看一下代码。", "，可能和 CI 的环境有关。",
            "，而且测试没有覆盖到。", "，文档里也是这么写的。", "，这和报错信息对得上。", "，不过只在特定平台上出现。"]


def en_prose(r, n, seen=None):
    seen = seen if seen is not None else set()
    out = ""
    while len(out) < n:
        s = (r.choice(EN_OPENERS) + r.choice(EN_SUBJECTS) + " " + r.choice(EN_VERBS) + " " +
             r.choice(EN_CLAUSES) + r.choice(EN_TAILS))
        s = s[0].upper() + s[1:]
        if s in seen:
            continue
        seen.add(s)
        out += s + (" " if r.random() < 0.8 else "\n")
    return out


def zh_prose(r, n, seen=None):
    seen = seen if seen is not None else set()
    out = ""
    while len(out) < n:
        s = r.choice(ZH_SUBJECTS) + r.choice(ZH_PREDICATES) + r.choice(ZH_TAILS)
        if s in seen:
            continue
        seen.add(s)
        out += s + ("" if r.random() < 0.75 else "\n")
    return out


def fit(text, n):
    """Cut at the last sentence end before n chars (the rest comes next)."""
    cut = max(text.rfind(c, 0, n) for c in ".。\n")
    return text[:cut + 1] if cut > 0 else text[:n]


# ---------------------------------------------------------------- detector samples

def stutter_zh():
    s = Stream(1, "模型在思考时结巴：\"然后然后然后…\"")
    s.prompt("修复 test_parse_empty 在 CI 上失败的问题")
    s.request()
    s.think(fit(zh_prose(s.r, 1900), 1880))
    s.think("我再确认一下输入的来源，然后" + "然后" * 90)
    s.note("用户停止了生成")
    s.write("stutter-zh.jsonl")


def sentence_loop_en():
    s = Stream(2, "The reasoning repeats two sentences until the 3000 checkpoint")
    s.prompt("The nightly build fails at the migration step. Find out why.")
    s.request()
    s.think(fit(en_prose(s.r, 2400), 2350))
    loop = "Let me check whether the migration ran before the tests. The schema version in the log looks one behind. "
    s.think(loop * 9)
    s.note("user pressed stop")
    s.write("sentence-loop-en.jsonl")


def list_loop_zh():
    s = Stream(3, "编号不断增长、内容却在循环的计划列表")
    s.prompt("把配置文件迁移到新的格式")
    s.request()
    s.think(fit(zh_prose(s.r, 2150), 2100) + "\n我先列一个计划：\n")
    items = ["检查旧配置文件是否存在", "运行迁移脚本并记录输出", "对比迁移前后的字段"]
    plan = "".join(f"{i + 1}. {items[i % 3]}\n" for i in range(75))
    s.think(plan)
    s.write("list-loop-zh.jsonl")


def chanting_content_en():
    s = Stream(4, "The answer chants the same sentence (gemini-cli's content loop)")
    s.prompt("Summarize what changed in the last release.")
    s.request()
    s.think("The user wants a summary of the release notes. I have them from the previous tool call.")
    s.say("The last release changed three things. The CLI now accepts a config file, "
          "the cache is invalidated on schema changes, and the retry loop backs off exponentially. ")
    s.say("I will now run the tests again to confirm that the fix works. " * 14)
    s.write("chanting-content-en.jsonl")


def identical_tool_calls():
    s = Stream(5, "The agent reads the same file over and over")
    s.prompt("Why does the server start on port 8080 instead of 3000?")
    thoughts = ["The port must come from the config. Let me read it.",
                "The config says 3000. Let me read it again to be sure.",
                "It still says 3000. Maybe I missed an override; reading the file once more.",
                "Same content. I will read it again and look for an environment override.",
                "Nothing new in the file. Let me read it one more time.",
                "I keep getting the same file. Reading it again."]
    for t in thoughts:
        s.request()
        s.think(t)
        s.call("read_file", {"path": "config/server.toml"}, output="[server]\nport = 3000\nhost = \"0.0.0.0\"\n")
    s.write("identical-tool-calls.jsonl")


def ab_tool_cycle():
    s = Stream(6, "Edit, test, edit, test: the same patch and the same failure (an A-B cycle)")
    s.prompt("Make the date formatter test pass.")
    patch = {"path": "src/date.rs", "old": "format!(\"{y}-{m}-{d}\")", "new": "format!(\"{y}-{m:02}-{d:02}\")"}
    for i in range(5):
        s.request()
        s.think("The month needs zero padding. I will apply the padding fix." if i == 0 else
                "The test still fails. The padding fix must not have been applied; applying it again.")
        s.call("edit_file", patch, output="applied 1 edit")
        s.request()
        s.think("Running the date tests.")
        s.call("run_tests", {"filter": "date"}, ok=False,
               output="test date::formats_iso ... FAILED\n  left: \"2024-3-7\"\n right: \"2024-03-07\"")
    s.write("ab-tool-cycle.jsonl")


def error_streak():
    s = Stream(7, "Five different install commands, five failures in a row")
    s.prompt("Install the dependencies and run the benchmarks.")
    attempts = [("pip install fastbench", "ERROR: Could not find a version that satisfies the requirement fastbench"),
                ("pip3 install fastbench", "ERROR: No matching distribution found for fastbench"),
                ("python -m pip install fastbench", "ERROR: No matching distribution found for fastbench"),
                ("pip install --user fastbench", "ERROR: No matching distribution found for fastbench"),
                ("pip install fastbench==0.3", "ERROR: No matching distribution found for fastbench==0.3")]
    for i, (cmd, err) in enumerate(attempts):
        s.request()
        s.think("Installing the benchmark package first." if i == 0 else
                "That failed. Maybe a different pip invocation works.")
        s.call("run_command", {"command": cmd}, ok=False, output=err)
    s.write("error-streak.jsonl")


def error_total_zh():
    s = Stream(8, "测试时好时坏：失败累计超过 10 次，但从未连续 5 次")
    s.prompt("修复不稳定的集成测试")
    names = ["订单", "库存", "支付", "通知", "用户", "搜索", "报表", "缓存", "日志", "权限", "导出", "导入", "同步"]
    fails = 0
    for i, name in enumerate(names * 2):
        s.request()
        s.think(f"运行{name}模块的集成测试，看看这次是否稳定。")
        fail = i % 2 == 0 and fails < 11
        fails += fail
        s.call("run_tests", {"suite": f"integration::{i}"}, ok=not fail,
               output="1 failed: timeout after 30s" if fail else "all passed")
        if fails == 11:
            break
    s.write("error-total-zh.jsonl")


def max_turns():
    s = Stream(9, "An agent that explores the repository for more than 100 turns")
    s.prompt("Find every place where we parse dates and list them.")
    dirs = ["api", "billing", "cli", "core", "db", "events", "export", "import", "jobs", "mail", "reports", "search"]
    for i in range(101):
        s.request()
        path = f"src/{dirs[i % len(dirs)]}/{'mod' if i < 12 else f'part_{i}'}.rs"
        s.think(f"Next I will look at {path}.")
        s.call("read_file", {"path": path}, output="// no date parsing here", took=(0.1, 0.3))
    s.write("max-turns.jsonl")


def three_step_cycle():
    s = Stream(10, "Edit, build, test, five times over: a cycle of three calls")
    s.prompt("The release build is broken. Fix it.")
    for i in range(5):
        s.request()
        s.think("Bumping the version in Cargo.toml." if i == 0 else "Bumping the version again.")
        s.call("edit_file", {"path": "Cargo.toml", "old": "version = \"1.4.0\"", "new": "version = \"1.4.1\""}, output="applied")
        s.request()
        s.call("run_command", {"command": "cargo build --release"}, output="Finished release profile")
        s.request()
        s.call("run_command", {"command": "cargo test --release"}, ok=False, output="error: version mismatch in lockfile")
    s.write("three-step-cycle.jsonl")


# ---------------------------------------------------------------- false positives

def fp_code_block():
    s = Stream(11, "Repeated lines in a code block: seed's cycle detectors fire, gemini-cli does not look at reasoning")
    s.prompt("Write a helper that pads a frame to 8-byte alignment.")
    s.request()
    header = "\nThe simplest version writes the padding explicitly:\n```rust\nfn pad(buf: &mut Vec<u8>) {\n"
    code = header + "    buf.push(0);\n" * 14 + "}\n```\n"
    # The repeated lines must be the last complete ones when the buffer reaches 3000.
    s.think(fit(en_prose(s.r, 2900), 2830 - len(header)) + code + en_prose(s.r, 500))
    s.say("Here is the helper:\n")
    s.say("```rust\nfn pad(buf: &mut Vec<u8>) {\n" + "    buf.push(0);\n" * 9 + "}\n```\n")
    s.say("It writes up to seven zero bytes so the frame length is a multiple of eight.")
    s.write("fp-code-block.jsonl")


def fp_markdown_table():
    s = Stream(12, "Identical table rows: seed's line cycle fires on reasoning; content tables reset chunk-chant")
    s.prompt("Give me the status of every migration.")
    s.request()
    header = "\nDraft of the table:\n| migration | state | applied at |\n|---|---|---|\n"
    rows = "| 0017_add_index | pending | - |\n" * 12
    s.think(fit(en_prose(s.r, 2900), 2760 - len(header)) + header + rows + en_prose(s.r, 400))
    s.say("| migration | state | applied at |\n|---|---|---|\n")
    for i in range(14):
        s.say(f"| 00{17 + i}_step | pending | - |\n")
    s.write("fp-markdown-table.jsonl")


def fp_batch_edits():
    s = Stream(13, "A finite batch: the same edit across 24 files is work, not a loop")
    s.prompt("Add the Apache license header to every source file.")
    files = [f"src/{d}/{f}.rs" for d in ["api", "core", "db", "cli"] for f in ["mod", "types", "errors", "util", "tests", "config"]]
    header = "// SPDX-License-Identifier: Apache-2.0\n"
    for i, f in enumerate(files):
        s.request()
        s.think(f"Adding the header to {f} ({i + 1} of {len(files)}).")
        s.call("edit_file", {"path": f, "insert_at": 0, "text": header}, output="applied")
    s.request()
    s.say(f"Done: the header is now in all {len(files)} source files.")
    s.write("fp-batch-edits.jsonl")


def fp_user_repeats():
    s = Stream(14, "The user asks for the same thing eight times: every prompt starts the detectors over")
    for i in range(8):
        s.prompt("Run the tests again." if i else "Run the tests.")
        s.request()
        s.think("Running the full test suite.")
        s.call("run_tests", {"filter": ""}, ok=False, output="1 failed: flaky::network_timeout")
        s.request()
        s.say("One test failed again: flaky::network_timeout.")
    s.write("fp-user-repeats.jsonl")


def fp_haha_zh():
    s = Stream(15, "笑声\"哈哈哈\"：short-repeat 不管单字重复，chunk-chant 会触发")
    s.prompt("给我讲个程序员的笑话")
    s.request()
    s.think(fit(zh_prose(s.r, 1880), 1850) + "用户想听笑话，哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈哈。"
            + zh_prose(s.r, 300))
    s.say("程序员为什么总是分不清万圣节和圣诞节？因为 Oct 31 == Dec 25。")
    s.say("哈" * 70)
    s.write("fp-haha-zh.jsonl")


def fp_dividers():
    s = Stream(16, "Dividers and a dotted progress bar: gemini-cli treats them as dividers, seed does not")
    s.prompt("Show the build progress.")
    s.request()
    s.say("Build report\n")
    for _ in range(3):
        s.say("─" * 40)
        s.say("\n")
    s.say("Waiting for the build")
    for _ in range(90):
        s.t += 0.05
        s.add("content", text=".")
    s.say("\nDone.")
    s.write("fp-dividers.jsonl")


# ---------------------------------------------------------------- misses

def miss_loop_after_5000():
    s = Stream(17, "Blind spot: a loop that starts after the last checkpoint (5000)")
    s.prompt("Explain why the cache hit rate dropped.")
    s.request()
    s.think(fit(en_prose(s.r, 5300), 5250))
    s.think("I should look at the eviction policy again. The hit rate graph drops at midnight. " * 30)
    s.note("user pressed stop after 8000 characters of repetition")
    s.write("miss-loop-after-5000.jsonl")


def miss_stutter_after_2000_zh():
    s = Stream(18, "盲区：2000 字之后才开始的结巴")
    s.prompt("解释一下这个函数为什么慢")
    s.request()
    s.think(fit(zh_prose(s.r, 2250), 2200))
    s.think("让我" + "思考" * 300)
    s.write("miss-stutter-after-2000-zh.jsonl")


def miss_paraphrase_loop_en():
    s = Stream(31, "Blind spot: the model re-says two sentences in other words, never exactly")
    s.prompt("The staging deploy hangs at the health check. Find out why.")
    s.request()
    s.think(fit(en_prose(s.r, 1600), 1550))
    copies = [
        "I should check the health check timeout before anything else. Then I will rerun the staging deploy. ",
        "I should check the health check timeout configuration before anything else. Then I'll rerun the staging deploy. ",
        "I should check the health check timeout before doing anything else. Then I will rerun the staging deploy now. ",
        "So I should check the health check timeout before anything else. Then I will rerun that staging deploy. ",
        "I should really check the health check timeout before anything else. Then I will rerun the staging deploy. ",
        "I should check the health check timeout before anything else here. Then I'll rerun the staging deploy again. ",
    ]
    s.think("".join(copies * 2))
    s.note("user pressed stop")
    s.write("miss-paraphrase-loop-en.jsonl")


def miss_long_paragraph_en():
    s = Stream(32, "Blind spot: a 600-char paragraph repeated in the answer (chunk-chant allows 250 chars apart)")
    s.prompt("Summarize the incident for the status page.")
    s.request()
    s.say(fit(en_prose(s.r, 900), 880) + "\n\n")
    para = fit(en_prose(s.r, 640), 600) + "\n\n"
    s.say(para * 4)
    s.write("miss-long-paragraph-en.jsonl")


# ---------------------------------------------------------------- clean

def long_clean_session():
    s = Stream(19, "A long session that never loops")
    seen = set()
    tasks = [("Add pagination to the /orders endpoint.", ["src/api/orders.rs", "src/db/orders.rs", "tests/orders.rs"]),
             ("Now make the page size configurable.", ["src/config.rs", "src/api/orders.rs", "docs/config.md"]),
             ("Write a changelog entry for both changes.", ["CHANGELOG.md"])]
    for task, files in tasks:
        s.prompt(task)
        for f in files:
            s.request()
            s.think(en_prose(s.r, s.r.randint(700, 1500), seen))
            s.call("read_file", {"path": f}, output=f"// contents of {f}")
            s.request()
            s.think(en_prose(s.r, s.r.randint(300, 900), seen))
            s.call("edit_file", {"path": f, "patch": f"@@ {f} @@"}, output="applied")
        s.request()
        s.call("run_tests", {"filter": ""}, output="all 213 tests passed")
        s.request()
        s.say("Done. " + en_prose(s.r, 400, seen))
    s.write("long-clean-session.jsonl")


# ---------------------------------------------------------------- other input formats

def oh_polling_build_log():
    s = Stream(30, "Waiting for a build by polling its log: the output changes every time")
    s.prompt("Start the release build and tell me when it is done.")
    s.request()
    s.think("The build takes a few minutes. I will start it in the background and watch the log.")
    s.call("execute_bash", {"command": "make release > build.log 2>&1 &"}, output="[1] 48211")
    progress = ["[ 12%] Building C object src/CMakeFiles/core.dir/alloc.c.o",
                "[ 37%] Building C object src/CMakeFiles/core.dir/parser.c.o",
                "[ 64%] Linking C static library libcore.a",
                "[ 88%] Building C object tools/CMakeFiles/cli.dir/main.c.o",
                "[100%] Built target cli"]
    for line in progress:
        s.request()
        s.think("Still building. Let me look at the end of the log again.")
        s.call("execute_bash", {"command": "tail -n 1 build.log"}, output=line, took=(4.0, 8.0))
    s.request()
    s.say("The release build finished: every target is built.")
    s.write("oh-polling-build-log.jsonl")


def roo_fourth_read():
    s = Stream(31, "Four reads of the same file in a row: Roo blocks the fourth")
    s.prompt("Add a timeout option to the HTTP client.")
    s.request()
    s.think("First I need to see how the client is configured.")
    for t in ["Reading the client module.", "I lost track of the constructor; reading it again.",
              "Let me read it once more to copy the exact signature.", "One more look at the file."]:
        s.think(" " + t)
        s.call("read_file", {"path": "src/http/client.rs"}, output="pub struct Client {\n    base: Url,\n}\n")
    s.request()
    s.say("I will add the option now.")
    s.write("roo-fourth-read.jsonl")


def cline_nested_args():
    s = Stream(32, "Different queries to one MCP tool: Cline sees identical calls (nested keys are dropped)")
    s.prompt("Find the customers who ordered twice last month.")
    queries = ["SELECT id FROM customers LIMIT 5",
               "SELECT customer_id, count(*) FROM orders GROUP BY customer_id",
               "SELECT customer_id FROM orders WHERE created_at > now() - interval '1 month'",
               "SELECT customer_id, count(*) c FROM orders WHERE created_at > now() - interval '1 month' GROUP BY 1",
               "SELECT customer_id FROM orders WHERE created_at > now() - interval '1 month' GROUP BY 1 HAVING count(*) = 2"]
    for q in queries:
        s.request()
        s.think("Let me refine the query.")
        s.call("use_mcp_tool", {"server_name": "postgres", "tool_name": "query", "arguments": {"sql": q}},
               output='[{"customer_id": 17}]')
    s.request()
    s.say("Customers 17 and 42 ordered exactly twice last month.")
    s.write("cline-nested-args.jsonl")


def fork_stutter_at_1000_zh():
    s = Stream(33, "思考在 1000 字前开始结巴，2000 字前就结束了请求")
    s.prompt("检查为什么导出的 CSV 少了一列")
    s.request()
    s.think(fit(zh_prose(s.r, 1000), 950))
    s.think("我先看看导出函数，然后" + "然后" * 40)
    s.request()
    s.say("导出函数漏掉了最后一列，我来修复。")
    s.write("fork-stutter-1000-zh.jsonl")


def qwen_tour():
    s = Stream(34, "qwen-code's nine loop types, one per prompt (its service latches until the next prompt)")
    # 1. Whitespace-only reasoning deltas: three in a row are "repetitive thoughts" (a qwen-only false positive).
    s.prompt("Rename the config option.")
    s.request()
    s.think("I will rename it in the loader first.")
    for piece in ["\n\n", "\n", " "]:
        s.add("reasoning", text=piece)
    s.call("edit", {"path": "src/config.rs", "old": "timeout", "new": "deadline"})
    # 2. Five identical calls in a row.
    s.prompt("Why is the cache cold after a restart?")
    for _ in range(5):
        s.request()
        s.think("Checking the cache directory again.")
        s.call("list_directory", {"path": "/var/cache/app"}, output="(empty)")
    # 3. Eight git inspections in a row.
    s.prompt("Commit the fix.")
    for cmd in ["git status", "git diff", "git status -s", "git diff --stat", "git status",
                "git --no-pager diff", "git status", "git diff HEAD"]:
        s.request()
        s.call("run_shell_command", {"command": cmd}, output="M src/cache.rs")
    # 4. A list whose items share a long prefix chants (gemini-cli's periods check would not fire).
    s.prompt("List the endpoints that need the new header.")
    s.request()
    words = ["users", "orders", "carts", "items", "notes", "files", "teams", "roles", "hooks", "plans", "quota", "audit"]
    s.say("".join(f"The endpoint that needs the new authentication header is /{w}; " for w in words))
    # 5. Reads only, after a first edit.
    s.prompt("Find where the retry limit is set.")
    s.request()
    s.call("edit", {"path": "notes.md", "old": "", "new": "retry?"})
    for i, path in enumerate(["src/a.rs", "src/b.rs", "src/c.rs", "src/d.rs", "src/e.rs", "src/f.rs", "src/g.rs", "src/h.rs"]):
        s.request()
        s.call("read_file" if i % 2 == 0 else "list_directory", {"path": path}, output="...")
    # 6. One tool eight times with different arguments.
    s.prompt("Fix the failing tests.")
    for i in range(8):
        s.request()
        s.call("run_tests", {"filter": f"parser::case_{i}"}, ok=False, output="1 failed")
    # 7. One call six times with others between.
    s.prompt("Update the changelog.")
    for i in range(6):
        s.request()
        s.call("grep_search", {"pattern": "## Unreleased"}, output="CHANGELOG.md:3")
        s.call("write_file", {"path": "CHANGELOG.md", "content": f"draft {i}"})
    # 8. Two calls alternating.
    s.prompt("Make the build green.")
    for i in range(3):
        s.request()
        s.call("edit", {"path": "build.rs", "old": "a", "new": "b"})
        s.call("run_shell_command", {"command": "cargo build"}, ok=False, output="error[E0308]")
    # 9. The turn cap: more than 10 x 100 different calls in one prompt.
    s.prompt("Index every file of the monorepo.")
    s.request()
    tools = ["index_file", "hash_file", "stat_file", "tag_file", "scan_file", "map_file", "note_file"]
    for i in range(1001):
        s.add("tool_call", id=f"t{i}", name=tools[i % len(tools)], args={"path": f"pkg/{i}.ts"})
    s.write("qwen-tour.jsonl")


def openclaw_tour():
    s = Stream(36, "OpenClaw's tool-loop guard, every rule: warnings, blocks, the breaker and the post-compaction guard")
    s.prompt("Why does the server start on port 8080? 请检查配置 🔍")
    for i in range(31):  # warn at the 11th, block from the 21st, the global breaker at the 31st
        s.request()
        s.call("read", {"path": "config/server.toml"}, output="[server]\nport = 3000 # 端口\n")
    s.prompt("Wait for the build to finish.")
    for i in range(21):  # a poll that never changes: warn at 11, block at 21
        s.request()
        s.call("process", {"action": "poll", "sessionId": "build-1"},
               output={"content": [{"type": "text", "text": "still building…"}], "details": {"status": "running"}})
    s.prompt("Fix the date test.")
    for i in range(20):  # an A/B alternation with stable results: warn at 10, block at 20
        s.request()
        if i % 2 == 0:
            s.call("edit", {"path": "src/date.rs", "old": "{m}", "new": "{m:02}"}, output="applied 1 edit")
        else:
            s.call("exec", {"command": "cargo test date"}, ok=False, output="test date::iso ... FAILED")
    s.prompt("Write the notice file.")
    for path in "aaabbbccca":  # the same unchanged write over rotating arguments: churn at the 11th
        s.request()
        s.call("write", {"path": f"NOTICE-{path}.md", "content": "© 2026"},
               output={"content": [{"type": "text", "text": "unchanged"}], "details": {"changed": False}})
    s.request()
    s.call("write", {"path": "NOTICE-a.md", "content": "© 2026"},
           output={"content": [{"type": "text", "text": "unchanged"}], "details": {"changed": False}})
    s.prompt("Fetch the release notes.")
    for i in range(11):  # a tool that does not exist, 10 times: the 11th is blocked
        s.request()
        s.call("web_fetch", {"url": f"https://example.com/notes/{i}"}, ok=False, output="Unknown tool: web_fetch")
    s.prompt("Check the config once more.")
    s.wait(0.5, 1.0)
    s.ev.append({"type": "note", "text": "context compacted (48000 tokens before)", "kind": "condensation", "ts": round(s.t, 3)})
    for i in range(3):  # right after a compaction, one call with one result 3 times: the run is aborted
        s.request()
        s.call("read", {"path": "config/server.toml"}, output="[server]\nport = 3000 # 端口\n")
    s.write("openclaw-tour.jsonl")


def opencode_parallel_reads():
    s = Stream(37, "opencode's doom_loop: three identical calls in one response ask; the same calls one per response never do")
    s.prompt("What does notes.txt say? 请读一下 🙏")
    for i in range(4):  # one call per response: blind across turns
        s.request()
        s.think("Reading notes.txt again.")
        s.call("read", {"filePath": "notes.txt"}, output="hello 你好")
    s.request()
    s.think("I will read it three times at once.")
    for i in range(3):
        s.calls += 1
        s.add("tool_call", id=f"par_{i}", name="read", args={"filePath": "notes.txt"})
    for i in range(3):
        s.add("tool_result", id=f"par_{i}", ok=True, output="hello 你好")
    s.write("opencode-parallel-reads.jsonl")


def judge_recorded_verdicts():
    s = Stream(35, "A long session with the LLM judge's verdicts recorded (loop_check events)")
    s.prompt("Make the flaky integration test pass reliably.")
    ideas = ["add a retry around the HTTP call", "increase the timeout", "mock the clock",
             "run the test serially", "seed the random generator", "wait for the port to open"]
    for turn in range(1, 43):
        s.request()
        idea = ideas[turn % len(ideas)]
        s.think(f"Maybe I should {idea}. Let me try that and run the test again.")
        s.call("run_tests", {"filter": "integration::checkout", "variant": idea}, ok=False,
               output="1 failed: timed out")
        if turn == 30:
            s.add("loop_check", detector="llm-judge", model="gemini-2.5-flash", stage=1, confidence=0.55,
                  analysis="The agent keeps trying different fixes; progress is slow but it is not repeating itself yet.")
        if turn == 40:
            s.add("loop_check", detector="llm-judge", model="gemini-2.5-flash", stage=1, confidence=0.93,
                  analysis="The same six ideas come back in a fixed order and the test result never changes.")
            s.add("loop_check", detector="llm-judge", model="gemini-2.5-pro", stage=2, confidence=0.95,
                  analysis="Confirmed: the agent cycles through the same attempts with identical results.")
    s.write("judge-recorded-verdicts.jsonl")


def sse(events):
    return "".join((f"event: {name}\n" if name else "") + f"data: {data if isinstance(data, str) else dumps(data)}\n\n"
                   for name, data in events)


def openai_chat_sse():
    r = random.Random(20)
    text = fit(en_prose(r, 2300), 2250) + "Maybe the retry count is wrong. Let me recount the retries in the log. " * 12
    chunk = lambda delta, fin=None: {"id": "chatcmpl-sample", "object": "chat.completion.chunk", "created": 1760000000,
                                     "model": "deepseek-reasoner", "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]}
    ev = [(None, chunk({"role": "assistant", "content": None, "reasoning_content": ""}))]
    i = 0
    while i < len(text):
        n = r.randint(3, 12)
        ev.append((None, chunk({"content": None, "reasoning_content": text[i:i + n]})))
        i += n
    ev += [(None, chunk({"content": "The retry count is off by one."})), (None, chunk({}, "stop")), (None, "[DONE]")]
    with open(os.path.join(HERE, "formats", "openai-chat-reasoning-loop.sse"), "w") as f:
        f.write(sse(ev))


def openai_responses_sse():
    ev = []
    for i in range(5):
        rid = f"resp_{i}"
        ev.append(("response.created", {"type": "response.created", "response": {"id": rid, "model": "gpt-5"}}))
        for piece in ["**Checking the deploy**\n\n", "The deploy log should show ", "which step failed."]:
            ev.append(("response.reasoning_summary_text.delta", {"type": "response.reasoning_summary_text.delta", "delta": piece}))
        item = {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": "get_deploy_log", "arguments": ""}
        ev.append(("response.output_item.added", {"type": "response.output_item.added", "item": item}))
        for piece in ["{\"env\":", "\"staging\"}"]:
            ev.append(("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta", "item_id": f"fc_{i}", "delta": piece}))
        ev.append(("response.output_item.done", {"type": "response.output_item.done", "item": dict(item, arguments="{\"env\":\"staging\"}")}))
        ev.append(("response.completed", {"type": "response.completed", "response": {"id": rid}}))
    with open(os.path.join(HERE, "formats", "openai-responses-tool-repeat.sse"), "w") as f:
        f.write(sse(ev))


def anthropic_sse():
    r = random.Random(21)
    thinking = fit(zh_prose(r, 1900), 1860) + "我需要再想想然后" + "然后" * 100
    ev = [("message_start", {"type": "message_start", "message": {"id": "msg_sample", "model": "claude-sonnet-4-5", "content": []}}),
          ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})]
    i = 0
    while i < len(thinking):
        n = r.randint(2, 8)
        ev.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": thinking[i:i + n]}}))
        i += n
    ev += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
           ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
           ("message_stop", {"type": "message_stop"})]
    with open(os.path.join(HERE, "formats", "anthropic-thinking-stutter.sse"), "w") as f:
        f.write(sse(ev))


def gemini_sse():
    parts = ["I checked the three services. ", "All of them report healthy. "] + ["I will check the services again to make sure. "] * 12
    lines = []
    for p in parts:
        lines.append("data: " + dumps({"candidates": [{"content": {"role": "model", "parts": [{"text": p}]}, "index": 0}],
                                       "modelVersion": "gemini-2.5-pro", "responseId": "sample-1"}) + "\r\n\r\n")
    with open(os.path.join(HERE, "formats", "gemini-chanting.sse"), "w", newline="") as f:
        f.write("".join(lines))


def claude_code_jsonl():
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/shop", "sessionId": "5a1d9c2e", "version": "2.1.40", "gitBranch": "main"}
    t = [0]
    def ts():
        t[0] += 1.7
        return f"2026-05-06T09:{10 + int(t[0] // 60):02d}:{t[0] % 60:06.3f}Z"
    lines = [dict(base, type="user", uuid="u0", parentUuid=None, timestamp=ts(), message={"role": "user", "content": "The dev server does not start. Please fix it."})]
    for i in range(5):
        rid = f"req_{i}"
        lines.append(dict(base, type="assistant", uuid=f"a{i}", parentUuid="x", timestamp=ts(), requestId=rid,
                          message={"id": f"msg_{i}", "role": "assistant", "content": [{"type": "thinking", "thinking": "Let me try starting it again and read the error.", "signature": "s"}]}))
        lines.append(dict(base, type="assistant", uuid=f"b{i}", parentUuid="x", timestamp=ts(), requestId=rid,
                          message={"id": f"msg_{i}", "role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": "npm run dev", "timeout": 30000}}]}))
        lines.append(dict(base, type="user", uuid=f"c{i}", parentUuid="x", timestamp=ts(),
                          message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "Error: listen EADDRINUSE: address already in use :::3000", "is_error": True}]}))
    with open(os.path.join(HERE, "formats", "claude-code-session.jsonl"), "w") as f:
        f.write("".join(dumps(l) + "\n" for l in lines))


def codex_rollout():
    lines = [{"timestamp": "2026-05-07T10:00:00.000Z", "type": "session_meta", "payload": {"id": "019a-sample", "cwd": "/work/app", "cli_version": "0.60.0", "originator": "codex_cli_rs"}},
             {"timestamp": "2026-05-07T10:00:00.500Z", "type": "event_msg", "payload": {"type": "user_message", "message": "Set up the database for the tests."}}]
    cmds = ["createdb app_test", "createdb -U postgres app_test", "psql -c 'CREATE DATABASE app_test'", "sudo -u postgres createdb app_test", "pg_ctl start && createdb app_test"]
    for i, cmd in enumerate(cmds):
        s = f"2026-05-07T10:00:{5 + i * 6:02d}.000Z"
        lines += [{"timestamp": s, "type": "turn_context", "payload": {"cwd": "/work/app", "model": "gpt-5-codex", "turn_id": f"t{i}"}},
                  {"timestamp": s, "type": "response_item", "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Creating the test database**" if i == 0 else "**Trying another way to create it**"}], "content": None}},
                  {"timestamp": s, "type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": dumps({"command": ["bash", "-lc", cmd]}), "call_id": f"call_{i}"}},
                  {"timestamp": s, "type": "response_item", "payload": {"type": "function_call_output", "call_id": f"call_{i}", "output": dumps({"output": "could not connect to server: No such file or directory", "metadata": {"exit_code": 1}})}}]
    with open(os.path.join(HERE, "formats", "codex-rollout-errors.jsonl"), "w") as f:
        f.write("".join(dumps(l) + "\n" for l in lines))


def gemini_cli_jsonl():
    lines = [{"sessionId": "a1b2c3", "projectHash": "d4e5f6", "startTime": "2026-05-08T08:00:00.000Z", "lastUpdated": "2026-05-08T08:00:00.000Z", "kind": "main"},
             {"id": "m0", "timestamp": "2026-05-08T08:00:01.000Z", "type": "user", "content": [{"text": "Why is the homepage slow?"}]}]
    for i in range(6):
        lines.append({"id": f"g{i}", "timestamp": f"2026-05-08T08:00:{3 + i * 4:02d}.000Z", "type": "gemini", "content": "",
                      "thoughts": [{"subject": "Profiling", "description": "Fetch the homepage again and time it."}],
                      "toolCalls": [{"id": f"c{i}", "name": "web_fetch", "args": {"url": "http://localhost:3000/"}, "status": "success",
                                     "result": [{"functionResponse": {"id": f"c{i}", "name": "web_fetch", "response": {"output": "200 OK in 4.2s"}}}]}]})
        lines.append({"$set": {"lastUpdated": f"2026-05-08T08:00:{3 + i * 4:02d}.000Z"}})
    with open(os.path.join(HERE, "formats", "gemini-cli-session.jsonl"), "w") as f:
        f.write("".join(dumps(l) + "\n" for l in lines))


def cline_task():
    d = os.path.join(HERE, "formats", "cline-task")
    os.makedirs(d, exist_ok=True)
    ts = 1760000000000
    msgs = [{"ts": ts, "type": "say", "say": "text", "text": "Fix the failing lint step in CI.", "images": [], "conversationHistoryIndex": -1}]
    # Each request's text holds the result of the call before it (Cline
    # reads it back into the next request), then Cline's environment.
    lint = "[execute_command for 'npm run lint'] Result:\n\nCommand executed.\nOutput:\nerror  Unexpected console statement  no-console"
    env = "\n\n<environment_details>\n# Current Time\n2025/10/9 8:53:%02d AM (UTC)\n</environment_details>"
    for i in range(6):
        ts += 4000
        said = "<task>\nFix the failing lint step in CI.\n</task>" if i == 0 else lint
        msgs.append({"ts": ts, "type": "say", "say": "api_req_started", "text": dumps({"request": said + env % (ts // 1000 % 60), "tokensIn": 1200, "tokensOut": 80, "cost": 0.002}), "conversationHistoryIndex": i})
        if i == 5:
            break
        msgs.append({"ts": ts + 800, "type": "say", "say": "reasoning", "text": "Running the linter again to see the exact error.", "partial": False, "conversationHistoryIndex": i})
        msgs.append({"ts": ts + 1500, "type": "ask", "ask": "command", "text": "npm run lint", "partial": False, "conversationHistoryIndex": i})
        msgs.append({"ts": ts + 2500, "type": "say", "say": "command_output", "text": "error  Unexpected console statement  no-console", "conversationHistoryIndex": i})
    msgs.append({"ts": ts + 1000, "type": "ask", "ask": "mistake_limit_reached", "text": "Cline is having trouble. Would you like to continue the task?", "conversationHistoryIndex": 5})
    with open(os.path.join(d, "ui_messages.json"), "w") as f:
        f.write(dumps(msgs))


def pi_session():
    """pi session (v3 tree): the same pytest run fails five times."""
    t0 = 1778400000000
    iso = lambda ms: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"
    lines = [{"type": "session", "version": 3, "id": "6d1f0c2a-1111-4a2b-9c3d-4e5f60718293", "timestamp": iso(t0), "cwd": "/work/api"},
             {"type": "message", "id": "u1", "parentId": None, "timestamp": iso(t0 + 1000), "message": {"role": "user", "content": [{"type": "text", "text": "The API tests fail after the upgrade. Make them pass."}], "timestamp": t0 + 1000}}]
    parent = "u1"
    for i in range(5):
        t = t0 + 4000 + i * 7000
        lines.append({"type": "message", "id": f"a{i}", "parentId": parent, "timestamp": iso(t), "message": {"role": "assistant", "content": [{"type": "thinking", "thinking": "Run the API tests again and read the failure."}, {"type": "toolCall", "id": f"toolu_{i}", "name": "bash", "arguments": {"command": "pytest tests/test_api.py -x"}}], "model": "claude-sonnet-4-5", "usage": {"output": 31}, "stopReason": "toolUse", "timestamp": t}})
        lines.append({"type": "message", "id": f"r{i}", "parentId": f"a{i}", "timestamp": iso(t + 3000), "message": {"role": "toolResult", "toolCallId": f"toolu_{i}", "toolName": "bash", "content": [{"type": "text", "text": "E   ImportError: cannot import name 'json' from 'flask'"}], "isError": True, "timestamp": t + 3000}})
        parent = f"r{i}"
    with open(os.path.join(HERE, "formats", "pi-session.jsonl"), "w") as f:
        f.write("".join(dumps(l) + "\n" for l in lines))


def opencode_store():
    """opencode's SQLite store: the agent reads the same file six times."""
    import sqlite3
    path = os.path.join(HERE, "formats", "opencode.db")
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    c = sqlite3.connect(path)
    c.executescript(
        "CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL);"
        "CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);"
        "CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);"
        "CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);"
        "CREATE INDEX part_message_id_id_idx ON part (message_id, id);"
        "CREATE INDEX part_session_idx ON part (session_id);")
    t0 = 1778500000000
    sid = "ses_2c9a1b7f3e4dSample0001"
    c.execute("INSERT INTO session VALUES (?, 'prj', NULL, 'calm-heron', '/work/web', 'Why does the build skip the CSS?', '1.18.31', ?, ?)", (sid, t0, t0 + 60000))
    c.execute("INSERT INTO message VALUES ('msg_0001', ?, ?, ?, ?)", (sid, t0 + 1000, t0 + 1000, dumps({"role": "user", "time": {"created": t0 + 1000}})))
    c.execute("INSERT INTO part VALUES ('prt_0001', 'msg_0001', ?, ?, ?, ?)", (sid, t0 + 1000, t0 + 1000, dumps({"type": "text", "text": "Why does the production build skip the CSS?"})))
    c.execute("INSERT INTO message VALUES ('msg_0002', ?, ?, ?, ?)", (sid, t0 + 2000, t0 + 50000, dumps({"role": "assistant", "modelID": "gpt-5", "providerID": "openai", "time": {"created": t0 + 2000, "completed": t0 + 50000}})))
    for i in range(6):
        t = t0 + 3000 + i * 6000
        parts = [{"type": "step-start"},
                 {"type": "reasoning", "text": "Check the bundler config for the CSS loader.", "time": {"start": t, "end": t + 500}},
                 {"type": "tool", "callID": f"call_{i}", "tool": "read", "state": {"status": "completed", "input": {"filePath": "/work/web/vite.config.ts"}, "output": "export default defineConfig({ plugins: [react()] })", "time": {"start": t + 600, "end": t + 700}}},
                 {"type": "step-finish", "reason": "tool-calls", "tokens": {"input": 900, "output": 40, "reasoning": 12, "cache": {"read": 0, "write": 0}}}]
        for k, p in enumerate(parts):
            c.execute("INSERT INTO part VALUES (?, 'msg_0002', ?, ?, ?, ?)", (f"prt_1{i}{k}", sid, t + k, t + k, dumps(p)))
    c.commit()
    c.close()


def copilot_events():
    """Copilot CLI events: the same missing file viewed five times."""
    t0 = 1778600000
    iso = lambda s: time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(s))
    sid = "9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
    ev, n = [], [0]

    def add(kind, data, t):
        n[0] += 1
        ev.append({"type": kind, "data": data, "id": f"e{n[0]:03d}", "timestamp": iso(t), "parentId": f"e{n[0] - 1:03d}" if n[0] > 1 else None})

    add("session.start", {"sessionId": sid, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.42", "context": {"cwd": "/work/cli"}}, t0)
    add("user.message", {"content": "Add a --verbose flag to the CLI."}, t0 + 2)
    for i in range(5):
        t = t0 + 5 + i * 6
        add("assistant.turn_start", {"turnId": str(i), "model": "claude-sonnet-4.5"}, t)
        add("assistant.reasoning", {"reasoningId": f"r{i}", "content": "Look at the argument parser first."}, t + 1)
        add("assistant.message", {"messageId": f"m{i}", "content": "", "outputTokens": 25, "toolRequests": [{"toolCallId": f"call_{i}", "name": "view", "type": "function", "arguments": {"path": "/work/cli/src/args.py"}}]}, t + 2)
        add("tool.execution_start", {"toolCallId": f"call_{i}", "toolName": "view", "arguments": {"path": "/work/cli/src/args.py"}}, t + 3)
        add("tool.execution_complete", {"toolCallId": f"call_{i}", "success": False, "error": {"message": "Path /work/cli/src/args.py does not exist.", "code": "failure"}}, t + 3)
        add("assistant.turn_end", {"turnId": str(i)}, t + 4)
    d = os.path.join(HERE, "formats", "copilot-session")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "events.jsonl"), "w") as f:
        f.write("".join(dumps(l) + "\n" for l in ev))


def main():
    os.makedirs(os.path.join(HERE, "formats"), exist_ok=True)
    for make in [stutter_zh, sentence_loop_en, list_loop_zh, chanting_content_en, identical_tool_calls, ab_tool_cycle,
                 error_streak, error_total_zh, max_turns, three_step_cycle, fp_code_block, fp_markdown_table,
                 fp_batch_edits, fp_user_repeats, fp_haha_zh, fp_dividers, miss_loop_after_5000,
                 miss_stutter_after_2000_zh, miss_paraphrase_loop_en, miss_long_paragraph_en, long_clean_session,
                 oh_polling_build_log, roo_fourth_read, cline_nested_args, fork_stutter_at_1000_zh, qwen_tour,
                 judge_recorded_verdicts, openclaw_tour, opencode_parallel_reads,
                 openai_chat_sse, openai_responses_sse, anthropic_sse,
                 gemini_sse, claude_code_jsonl, codex_rollout, gemini_cli_jsonl, cline_task,
                 pi_session, opencode_store, copilot_events]:
        make()


if __name__ == "__main__":
    main()
