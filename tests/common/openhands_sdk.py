"""The OpenHands SDK run as its own hello-world example runs it
(OpenHands/software-agent-sdk examples/01_standalone_sdk/01_hello_world.py):
an `Agent` with the terminal and file-editor tools, one `Conversation` in
the work folder, one message, `run()`. The conversation is persisted under
PERSIST (the SDK writes `<id>/base_state.json` and `<id>/events/`), which
is what loopscope reads. The model is the project's scripted one (litellm's
OpenAI route to URL); nothing else is reached.

usage: python openhands_sdk.py URL WORK PERSIST PROMPT
(run by tests/common/real_agent.rs with the interpreter of the venv that
.ci/install-agents makes for tests/agent_pins.tsv's `openhands` row)
"""
import os
import sys

# litellm fetches its model price list from the network unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from openhands.sdk import LLM, Agent, Conversation, Tool  # noqa: E402
from openhands.tools.file_editor import FileEditorTool  # noqa: E402
from openhands.tools.terminal import TerminalTool  # noqa: E402

url, work, persist, prompt = sys.argv[1:5]
llm = LLM(model="openai/scripted", api_key="sk-scripted", base_url=url, usage_id="agent")
agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)])
conversation = Conversation(agent=agent, workspace=work, persistence_dir=persist)
conversation.send_message(prompt)
conversation.run()
print("execution status:", conversation.state.execution_status.value)
