"""Token ids pushed by a caller that has them (issue 46, item 2): profile
vllm compares the ids as vLLM's repetition check does, the text detectors
read the text when it comes with them."""

import loopscope

PATTERN = list(range(100, 116))  # 16 tokens: vLLM's smallest pattern by default
IDS = list(range(1, 40)) + PATTERN * 4


def fired_at(push):
    d = loopscope.Detector(profile="vllm")
    d.push_prompt("count for me")
    d.push_request()
    for k, token in enumerate(IDS):
        found = push(d, token)
        if found:
            assert found[0].detector == "vllm-repetition", found[0]
            return k
    return None


def test_push_tokens_stops_at_the_token_vllm_stops_at():
    # The output ends in 4 copies of a 16-token pattern only at its last token.
    assert fired_at(lambda d, t: d.push_tokens([t])) == len(IDS) - 1
    # The same ids through push_content's token_ids, with text, agree.
    assert fired_at(lambda d, t: d.push_content(f"<{t}>", token_ids=[t])) == len(IDS) - 1


def test_ids_in_one_push_and_no_stop_without_the_fourth_copy():
    d = loopscope.Detector(profile="vllm")
    d.push_request()
    assert d.push_tokens(IDS[:-1]) == []
    found = d.push_tokens(IDS[-1:])
    assert [f.detector for f in found] == ["vllm-repetition"]


def test_text_given_with_ids_reaches_the_text_detectors():
    d = loopscope.Detector(profile="extended")
    d.push_request()
    unit = "Let me check whether the cache was cleared before the run. "
    found = []
    for k in range(4):
        found += d.push_tokens([7, 8, 9], text=unit, reasoning=True)
    assert [f.detector for f in found] == ["text-loop"]
    # Ids alone give the text detectors nothing to read.
    quiet = loopscope.Detector(profile="extended")
    quiet.push_request()
    assert all(quiet.push_tokens([7, 8, 9]) == [] for _ in range(50))
