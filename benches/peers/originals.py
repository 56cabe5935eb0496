"""The original detectors of profiles `vllm` and `openhands`, for speed
comparisons only (benches/peers/bench.py), transcribed with their logic
unchanged:

- vLLM 0.33.0 (Apache-2.0), `vllm/v1/core/sched/utils.py`:
  `_has_repeating_pattern` and `check_sequence_repetition`, called after
  every appended token as `check_stop` does;
- openhands-sdk 1.58.2 (MIT), `openhands/sdk/conversation/stuck_detector.py`:
  `StuckDetector` with `get_action_error_nudge` and `is_stuck`, called
  before every LLM call as `LocalConversation._check_stuck_or_nudge` does.
  A STAND-IN, used by bench.py only where the real SDK is not installed
  (it needs CPython >= 3.12; benches/peers/openhands_sdk.py runs the real
  one): the SDK's events are pydantic models, here they are slotted classes
  with the same equality (type, then the fields `_event_eq` compares), and
  the SDK's debug-log f-strings are left out, so this stand-in is several
  times faster than the SDK itself. The state's `active_branch(limit=20)`
  is the last 20 of a list.
"""

# ------------------------------------------------------------------ vLLM


def _has_repeating_pattern(token_ids, pattern_len, repetition_min_count):
    for n in range(1, pattern_len + 1):
        target_token = token_ids[-n]
        for m in range(1, repetition_min_count):
            if token_ids[-(pattern_len * m + n)] != target_token:
                return False
    return True


def check_sequence_repetition(token_ids, max_pattern_size, min_pattern_size, min_count):
    if min_pattern_size <= 0:
        min_pattern_size = 1
    if max_pattern_size <= 0 or min_count < 2 or min_pattern_size > max_pattern_size:
        return False
    for pattern_len in range(min_pattern_size, max_pattern_size + 1):
        if pattern_len * min_count > len(token_ids):
            return False
        if _has_repeating_pattern(token_ids, pattern_len, min_count):
            return True
    return False


def vllm_run(requests, max_pattern_size, min_pattern_size, min_count):
    """Each request's tokens appended one at a time, checked after each; the
    request ends at a hit. Returns (request index, output length) per hit."""
    hits = []
    for r, tokens in enumerate(requests):
        out = []
        for t in tokens:
            out.append(t)
            if check_sequence_repetition(out, max_pattern_size, min_pattern_size, min_count):
                hits.append((r, len(out)))
                break
    return hits


# ------------------------------------------------------------ OpenHands SDK

MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION = 20


class Event:
    __slots__ = ("id", "source")

    def __init__(self, id, source):
        self.id = id
        self.source = source


class MessageEvent(Event):
    __slots__ = ("llm_message",)

    def __init__(self, id, source, llm_message):
        super().__init__(id, source)
        self.llm_message = llm_message


class ActionEvent(Event):
    __slots__ = ("thought", "action", "tool_name")

    def __init__(self, id, thought, action, tool_name):
        super().__init__(id, "agent")
        self.thought, self.action, self.tool_name = thought, action, tool_name


class ObservationBaseEvent(Event):
    __slots__ = ()


class ObservationEvent(ObservationBaseEvent):
    __slots__ = ("observation", "tool_name")

    def __init__(self, id, observation, tool_name):
        super().__init__(id, "environment")
        self.observation, self.tool_name = observation, tool_name


class AgentErrorEvent(ObservationBaseEvent):
    __slots__ = ("error",)

    def __init__(self, id, error):
        super().__init__(id, "agent")
        self.error = error


class CondensationSummaryEvent(Event):
    __slots__ = ()


class Condensation(Event):
    """What the SDK's log holds for a condensation (spec §6): not a message,
    so it ends a monologue; it takes a window slot."""
    __slots__ = ()


class StuckDetector:
    def __init__(self, events, action_observation=4, action_error=3, monologue=3, alternating_pattern=6):
        self.events = events
        self.action_observation_threshold = action_observation
        self.action_error_threshold = action_error
        self.monologue_threshold = monologue
        self.alternating_pattern_threshold = alternating_pattern
        self._last_nudged_error_event_id = None

    def _events_since_last_user_message(self):
        events = self.events[-MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION:]
        last_user_msg_index = next(
            (i for i in reversed(range(len(events)))
             if isinstance(events[i], MessageEvent) and events[i].source == "user"),
            -1,
        )
        if last_user_msg_index != -1:
            events = events[last_user_msg_index + 1:]
        return events

    def _collect_actions_and_observations(self, events, max_needed):
        last_actions, last_observations = [], []
        for event in reversed(events):
            if isinstance(event, ActionEvent) and len(last_actions) < max_needed:
                last_actions.append(event)
            elif isinstance(event, ObservationBaseEvent) and len(last_observations) < max_needed:
                last_observations.append(event)
            if len(last_actions) >= max_needed and len(last_observations) >= max_needed:
                break
        return last_actions, last_observations

    def is_stuck(self):
        events = self._events_since_last_user_message()
        min_threshold = min(self.action_observation_threshold, self.action_error_threshold, self.monologue_threshold)
        if len(events) < min_threshold:
            return False
        max_needed = max(self.action_observation_threshold, self.action_error_threshold + 1)
        last_actions, last_observations = self._collect_actions_and_observations(events, max_needed)
        if self._is_stuck_repeating_action_observation(last_actions, last_observations):
            return True
        if self._action_error_streak(last_actions, last_observations) > self.action_error_threshold:
            return True
        if self._is_stuck_monologue(events):
            return True
        if len(events) >= self.alternating_pattern_threshold:
            if self._is_stuck_alternating_action_observation(events):
                return True
        return False

    def _is_stuck_repeating_action_observation(self, last_actions, last_observations):
        threshold = self.action_observation_threshold
        if len(last_actions) >= threshold and len(last_observations) >= threshold:
            actions_equal = all(self._event_eq(last_actions[0], a) for a in last_actions[:threshold])
            observations_equal = all(self._event_eq(last_observations[0], o) for o in last_observations[:threshold])
            if actions_equal and observations_equal:
                return True
        return False

    def _action_error_streak(self, last_actions, last_observations):
        if not last_actions or not last_observations:
            return 0
        reference = last_actions[0]
        streak = 0
        for action, observation in zip(last_actions, last_observations):
            if not self._event_eq(reference, action):
                break
            if not isinstance(observation, AgentErrorEvent):
                break
            streak += 1
        return streak

    def get_action_error_nudge(self):
        events = self._events_since_last_user_message()
        threshold = self.action_error_threshold
        last_actions, last_observations = self._collect_actions_and_observations(events, threshold + 1)
        if self._action_error_streak(last_actions, last_observations) != threshold:
            return None
        action, error = last_actions[0], last_observations[0]
        if error.id == self._last_nudged_error_event_id:
            return None
        self._last_nudged_error_event_id = error.id
        return (f"You've called `{action.tool_name}` with the same arguments {threshold} times in a row "
                f"and gotten the same error each time: {error.error}. Repeating the exact same call again "
                "will not work — review the error message and either correct the arguments or try a "
                "different approach.")

    def _is_stuck_monologue(self, events):
        threshold = self.monologue_threshold
        if len(events) < threshold:
            return False
        agent_message_count = 0
        for event in reversed(events):
            if isinstance(event, MessageEvent):
                if event.source == "agent":
                    agent_message_count += 1
                elif event.source == "user":
                    break
            elif isinstance(event, CondensationSummaryEvent):
                continue
            else:
                break
        return agent_message_count >= threshold

    def _is_stuck_alternating_action_observation(self, events):
        threshold = self.alternating_pattern_threshold
        last_actions, last_observations = [], []
        for event in reversed(events):
            if isinstance(event, ActionEvent) and len(last_actions) < threshold:
                last_actions.append(event)
            elif isinstance(event, (ObservationEvent, AgentErrorEvent)) and len(last_observations) < threshold:
                last_observations.append(event)
            if len(last_actions) == threshold and len(last_observations) == threshold:
                break
        if len(last_actions) == threshold and len(last_observations) == threshold:
            actions_equal = all(self._event_eq(last_actions[i], last_actions[i + 2]) for i in range(threshold - 2))
            observations_equal = all(
                self._event_eq(last_observations[i], last_observations[i + 2]) for i in range(threshold - 2))
            if actions_equal and observations_equal:
                return True
        return False

    def _event_eq(self, event1, event2):
        if type(event1) is not type(event2):
            return False
        if isinstance(event1, ActionEvent):
            return (event1.source == event2.source and event1.thought == event2.thought
                    and event1.action == event2.action and event1.tool_name == event2.tool_name)
        if isinstance(event1, ObservationEvent):
            return (event1.source == event2.source and event1.observation == event2.observation
                    and event1.tool_name == event2.tool_name)
        if isinstance(event1, AgentErrorEvent):
            return event1.source == event2.source and event1.error == event2.error
        if isinstance(event1, MessageEvent):
            return event1.source == event2.source and event1.llm_message == event2.llm_message
        return event1 == event2


def openhands_run(native_events):
    """The SDK's run loop over a native stream (spec §6): a check before every
    request and at the end. Returns [(event index, 'nudge' | 'stuck')]."""
    log, found = [], []
    detector = StuckDetector(log)
    stuck = False
    response = None  # [text, calls]
    pending = {}
    seq = [0]

    def new_id():
        seq[0] += 1
        return seq[0]

    def close():
        if response is not None and response[1] == 0 and response[0]:
            log.append(MessageEvent(new_id(), "agent", response[0]))

    def check(i):
        nonlocal stuck
        if stuck:
            return
        nudge = detector.get_action_error_nudge()
        if nudge is not None:
            log.append(MessageEvent(new_id(), "environment", nudge))
            found.append((i, "nudge"))
            return
        if detector.is_stuck():
            stuck = True
            found.append((i, "stuck"))

    for i, e in enumerate(native_events):
        t = e.get("type")
        if t == "prompt":
            log.append(MessageEvent(new_id(), "user", e.get("text")))
            stuck, response = False, None
        elif t == "request":
            close()
            check(i)
            response = ["", 0]
        elif t == "content" and response is not None:
            response[0] += e.get("text", "")
        elif t == "note" and e.get("kind") in ("compaction", "condensation"):
            log.append(Condensation(new_id(), "agent"))
        elif t == "tool_call":
            thought = ""
            if response is not None:
                response[1] += 1
                thought = response[0] if response[1] == 1 else ""
            log.append(ActionEvent(new_id(), thought, e.get("args"), e.get("name")))
            pending[e.get("id")] = e.get("name")
        elif t == "tool_result":
            name = pending.pop(e.get("id"), "")
            if e.get("ok", True):
                log.append(ObservationEvent(new_id(), e.get("output"), name))
            else:
                log.append(AgentErrorEvent(new_id(), e.get("output")))
    close()
    check(len(native_events))
    return found
