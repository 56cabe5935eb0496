"""loopscope.transformers inside a real `generate()`: a one-layer GPT-2 built
from a config and tokenizers trained here (tests/tiny_lm.py), on CPU, with
a scripted logits processor choosing each row's tokens, so the test knows
where each row loops. Needs torch and transformers: skipped without them,
except under CI (.ci/run runs this file in a venv that has them)."""

import os
import random

import pytest


def engine(name):
    if os.environ.get("CI"):
        return __import__(name)
    return pytest.importorskip(name)


torch = engine("torch")
engine("transformers")
from transformers import LogitsProcessorList, StoppingCriteriaList  # noqa: E402

import loopscope  # noqa: E402
from loopscope._tokens import TokenText  # noqa: E402
from loopscope.transformers import LoopLogitsProcessor, LoopStoppingCriteria, LoopStreamer  # noqa: E402
from tiny_lm import Script, byte_level_tokenizer, clean_text, sentencepiece_tokenizer, tiny_model  # noqa: E402

LOOP = "I will check the file again to see whether the test passes. "
CJK_LOOP = "我再检查一下这个文件，看看测试是否通过。🤔 "


@pytest.fixture(scope="module")
def tok():
    return byte_level_tokenizer()


@pytest.fixture(scope="module")
def sp_tok():
    return sentencepiece_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    return tiny_model(tok)


TEXTS = [
    "Hello world, the test passes.",
    "我再检查一下这个文件，看看测试是否通过。",
    "関数はループした行のリストを返します。 and back to ASCII",
    "Done! 🎉 The build is green ✅ 👩‍💻 and the report is ready 📄.",
    "<think>Let me think.</think> The answer is 42.",
    "  leading spaces, tabs\tand\nnewlines  ",
]


@pytest.mark.parametrize("which", ["byte_level", "sentencepiece"])
def test_incremental_decoding_equals_the_tokenizers_decode(which, tok, sp_tok):
    t = tok if which == "byte_level" else sp_tok
    table = TokenText(t)
    assert table.table is not None  # the fast path, not the window
    for text in TEXTS:
        ids = t.encode(text, add_special_tokens=False)
        stream = table.stream()
        got = "".join(stream.step(i) for i in ids) + stream.flush()
        assert got == t.decode(ids, skip_special_tokens=True), text
    # Multi-byte chars split over tokens: byte tokens really happen here.
    unseen = "鳥が空を飛ぶ"
    assert len(t.encode(unseen, add_special_tokens=False)) > len(unseen)
    stream = table.stream()
    ids = t.encode(unseen, add_special_tokens=False)
    assert "".join(stream.step(i) for i in ids) == unseen


def test_random_ids_decode_as_the_tokenizer_does(tok):
    table = TokenText(tok)
    rng = random.Random(7)
    for _ in range(50):
        ids = [rng.randrange(len(tok)) for _ in range(rng.randint(1, 40))]
        stream = table.stream()
        got = "".join(stream.step(i) for i in ids) + stream.flush()
        assert got == tok.decode(ids, skip_special_tokens=True), ids


def test_any_other_decoder_goes_through_a_window_of_tokens(tok):
    table = TokenText(tok)
    table.table = None  # as for a decoder the table cannot express (WordPiece, CTC…)
    for text in TEXTS:
        ids = tok.encode(text, add_special_tokens=False)
        stream = table.stream()
        assert "".join(stream.step(i) for i in ids) == tok.decode(ids, skip_special_tokens=True), text


def reference_stop(tok, ids, channel="content"):
    """Where a Detector fed the text of `tokenizer.decode` after each token
    (the slow, obvious way) fires: (token count, detection)."""
    d = loopscope.Detector()
    d.push_request()
    shown = ""
    for k in range(1, len(ids) + 1):
        # A char whose bytes are not all here yet decodes as U+FFFD (with
        # SentencePiece's byte fallback, the whole run of byte tokens): wait.
        text = tok.decode(ids[:k], skip_special_tokens=True).rstrip("\ufffd")
        if not text.startswith(shown) or len(text) == len(shown):
            continue
        delta, shown = text[len(shown) :], text
        found = d.push_reasoning(delta) if channel == "reasoning" else d.push_content(delta)
        if found:
            return k, found[0]
    return None, None


def generate(model, tok, scripts, max_new_tokens, prompt="User: go on.", **kwargs):
    enc = tok([prompt] * len(scripts), return_tensors="pt")
    prompt_length = enc["input_ids"].shape[1]
    processors = [Script(scripts, prompt_length, tok.eos_token_id)] + kwargs.pop("logits_processor", [])
    out = model.generate(
        **enc,
        max_new_tokens=max_new_tokens,
        do_sample=False,
        logits_processor=LogitsProcessorList(processors),
        pad_token_id=tok.pad_token_id,
        **kwargs,
    )
    return out[:, prompt_length:].tolist()


def test_each_row_stops_at_its_own_loop_and_the_others_go_on(model, tok):
    looping = tok.encode(LOOP * 30, add_special_tokens=False)
    cjk = tok.encode(CJK_LOOP * 30, add_special_tokens=False)
    clean = tok.encode(clean_text(400), add_special_tokens=False)
    n = 300
    stop = LoopStoppingCriteria(tok, profile="extended")
    out = generate(model, tok, [looping, clean, cjk], n, stopping_criteria=StoppingCriteriaList([stop]))
    for row, ids in ((0, looping), (2, cjk)):
        k, want = reference_stop(tok, ids[:n])
        assert k is not None and k < 250, row
        assert stop.stopped_at[row] == k
        got = stop.detections[row]
        assert got.to_dict() == want.to_dict() and got.detector == "text-loop" and got.channel == "content"
        # Stopped there: the rest of the row is padding.
        assert out[row][:k] == ids[:k] and set(out[row][k:]) <= {tok.pad_token_id}
    assert stop.detections[1] is None and stop.stopped_at[1] is None
    assert out[1][:n] == clean[:n]  # the clean row ran to max_new_tokens
    assert stop.detectors[1].events > 100 and stop.detectors[1].detections == []


def test_think_text_is_reasoning(model, tok):
    script = tok.encode("<think>" + LOOP * 30, add_special_tokens=False)
    stop = LoopStoppingCriteria(tok)
    generate(model, tok, [script], 200, stopping_criteria=StoppingCriteriaList([stop]))
    found = stop.detections[0]
    assert found is not None and found.channel == "reasoning"
    # The tag is not text: offsets count the reasoning only, as a log's would.
    k, want = reference_stop(tok, tok.encode(LOOP * 30, add_special_tokens=False), channel="reasoning")
    assert found.at_char == want.at_char and stop.stopped_at[0] == k + 1


def test_a_prompt_that_opens_think_starts_in_reasoning(model, tok):
    script = tok.encode(LOOP * 30, add_special_tokens=False)
    stop = LoopStoppingCriteria(tok)
    generate(model, tok, [script], 200, prompt="User: go on.\nAssistant: <think>\n", stopping_criteria=[stop])
    assert stop.detections[0].channel == "reasoning"
    closed = LoopStoppingCriteria(tok)
    generate(model, tok, [script], 200, prompt="<think>hm</think> Assistant:", stopping_criteria=[closed])
    assert closed.detections[0].channel == "content"


def test_a_tag_split_over_tokens_is_still_a_tag(tok):
    stop = LoopStoppingCriteria(tok)
    text = "Let me see. <thi" + "nk>" + LOOP * 20
    ids = tok.encode("<thi", add_special_tokens=False) + tok.encode("nk>" + LOOP * 20, add_special_tokens=False)
    ids = tok.encode("Let me see. ", add_special_tokens=False) + ids
    prompt = torch.tensor([tok.encode("go", add_special_tokens=False)])
    seq = prompt
    for i in ids:
        seq = torch.cat([seq, torch.tensor([[i]])], dim=1)
        if stop(seq, None)[0]:
            break
    assert stop.detections[0].channel == "reasoning", text
    assert stop.detections[0].spans[0][0] == 0  # the reasoning starts after the tag


def test_the_streamer_gives_the_text_and_stops_generate(model, tok):
    looping = tok.encode("<think>Hmm. " + LOOP * 30, add_special_tokens=False)
    seen = []
    streamer = LoopStreamer(tok, on_text=lambda text, channel, row: seen.append((channel, text)))
    out = generate(model, tok, [looping], 300, streamer=streamer, stopping_criteria=streamer.stopping_criteria)
    assert streamer.looped and streamer.detections[0].channel == "reasoning"
    k = streamer.stopped_at[0]
    assert len(out[0]) == k  # generate stopped at the loop (batch of one: no padding)
    reasoning = "".join(t for c, t in seen if c == "reasoning")
    assert reasoning == tok.decode(out[0], skip_special_tokens=True)[len("<think>") :]
    assert all(c == "reasoning" for c, _ in seen)


def test_the_logits_processor_ends_a_looping_row_with_eos(model, tok):
    looping = tok.encode(LOOP * 30, add_special_tokens=False)
    clean = tok.encode(clean_text(300), add_special_tokens=False)
    lp = LoopLogitsProcessor(tok)
    out = generate(model, tok, [looping, clean], 200, logits_processor=[lp])
    k = lp.stopped_at[0]
    assert k is not None and lp.detections[0].detector == "text-loop"
    # The token after the detection is EOS (the scripted one is overruled), then padding.
    assert out[0][:k] == looping[:k] and out[0][k] == tok.eos_token_id
    assert lp.detections[1] is None and out[1] == clean[:200]


def test_one_criteria_serves_several_generations(model, tok):
    looping = tok.encode(LOOP * 30, add_special_tokens=False)
    clean = tok.encode(clean_text(200), add_special_tokens=False)
    stop = LoopStoppingCriteria(tok)
    generate(model, tok, [looping], 150, stopping_criteria=[stop])
    first = stop.stopped_at[0]
    stop.reset()
    generate(model, tok, [clean], 120, stopping_criteria=[stop])
    assert stop.detections == [None]
    stop.reset()
    generate(model, tok, [looping], 150, stopping_criteria=[stop])
    assert stop.stopped_at == [first]


def test_sentencepiece_tokenizer_with_byte_fallback(sp_tok):
    model = tiny_model(sp_tok)
    cjk = sp_tok.encode(CJK_LOOP * 30, add_special_tokens=False)
    assert any(sp_tok.convert_ids_to_tokens(i).startswith("<0x") for i in cjk)
    stop = LoopStoppingCriteria(sp_tok)
    generate(model, sp_tok, [cjk], 400, stopping_criteria=[stop])
    k, want = reference_stop(sp_tok, cjk)
    assert stop.stopped_at[0] == k and stop.detections[0].to_dict() == want.to_dict()


def test_bad_arguments_fail_before_generation(tok):
    with pytest.raises(ValueError, match="unknown profile"):
        LoopStoppingCriteria(tok, profile="nope")
    with pytest.raises(TypeError, match="fast tokenizer"):
        LoopStoppingCriteria(object())
