"""loopscope inside Hugging Face ``generate()``: stop each row of a batch the
moment it loops.

    from loopscope.transformers import LoopStoppingCriteria
    stop = LoopStoppingCriteria(tokenizer, profile="extended")
    out = model.generate(**inputs, stopping_criteria=[stop], max_new_tokens=4000)
    for row, found in enumerate(stop.detections):
        if found:
            print(row, found.reason)          # the first detection of that row

Three forms, one engine:

- :class:`LoopStoppingCriteria` — ``stopping_criteria=[…]``: one
  :class:`loopscope.Detector` per batch row; a row that loops is finished
  (transformers pads it) while the others go on.
- :class:`LoopStreamer` — ``streamer=…``: the text as it is decoded, per
  channel, to your callback; pass ``stopping_criteria=streamer.stopping_criteria``
  too and it stops the generation it watches.
- :class:`LoopLogitsProcessor` — ``logits_processor=[…]``: for pipelines that
  take only logits processors; a row that looped gets only its EOS token
  allowed, so it ends at the next step.

Each new token is decoded incrementally from a table made once from the
fast tokenizer's decoder (byte-level BPE, SentencePiece with byte
fallback; any other decoder through a short window of tokens), so a token
costs a look-up, not a ``tokenizer.decode`` of the sequence. Text between
``<think>`` and ``</think>`` goes to the reasoning channel, the rest to
content; a prompt that ends inside ``<think>`` (a chat template that opens
the block) starts the row in reasoning. Special tokens are skipped.

Make one per ``generate()`` call, or call ``reset()`` between calls (a
call whose sequences are shorter than the last one's resets by itself).
Greedy and sampling decoding are supported; beam search reorders rows and
is not.

The profile defaults to ``extended``, as everywhere in the Python package
(the CLI's default is ``seed``).
"""

import torch
from transformers import LogitsProcessor, StoppingCriteria, StoppingCriteriaList
from transformers.generation.streamers import BaseStreamer

from ._loopscope import Detector
from ._tokens import TokenText

__all__ = ["LoopLogitsProcessor", "LoopStoppingCriteria", "LoopStreamer"]


class _Row:
    """One batch row: its decoder, its <think> state, its Detector."""

    __slots__ = ("index", "stream", "detector", "reasoning", "carry", "done", "detection", "tokens", "stopped_at")

    def __init__(self, index, stream, detector, reasoning):
        self.index = index
        self.stream = stream
        self.detector = detector
        self.reasoning = reasoning
        self.carry = ""
        self.done = False
        self.detection = None
        self.tokens = 0
        self.stopped_at = None


class _Rows:
    """What the three forms share: per-row detectors fed with the tokens
    each call adds to ``input_ids``."""

    def __init__(self, tokenizer, profile, params, detectors, reasoning, think_tags, skip_special_tokens, on_text):
        Detector(profile=profile, params=params, detectors=detectors)  # a bad setup fails here, not mid-generation
        self._setup = dict(profile=profile, params=params, detectors=detectors)
        self._text = TokenText(tokenizer, skip_special_tokens=skip_special_tokens)
        self._reasoning = reasoning
        self._open, self._close = think_tags
        eos = getattr(tokenizer, "eos_token_id", None)
        self.eos_ids = {eos} if isinstance(eos, int) else set(eos or ())
        self._on_text = on_text
        self.reset()

    def reset(self):
        """Forget the rows: the next call starts a new generation."""
        self.rows = []
        self.length = None  # tokens per row already read (prompt included)
        self._done = None

    # -- the rows

    def start(self, input_ids, prompt_length):
        """A new generation over `input_ids` whose first `prompt_length` tokens are the prompt."""
        self.rows = []
        for r in range(input_ids.shape[0]):
            reasoning = self._reasoning
            if reasoning is None:
                reasoning = self._prompt_opens_think(input_ids[r, :prompt_length])
            d = Detector(**self._setup)
            d.push_request()
            self.rows.append(_Row(r, self._text.stream(), d, bool(reasoning)))
        self.length = prompt_length
        self._done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    def _prompt_opens_think(self, prompt):
        """Whether the prompt's end is inside a <think> block (the template opened it)."""
        tail = self._text.backend.decode(prompt[-16:].tolist(), skip_special_tokens=False)
        return tail.rfind(self._open) > tail.rfind(self._close)

    def advance(self, input_ids):
        """Reads the tokens added since the last call; returns True when a row fired now."""
        batch, width = input_ids.shape
        if self.length is None or batch != len(self.rows) or width <= self.length:
            self.start(input_ids, width - 1)
        fired = False
        if width == self.length + 1:
            # One token per step (greedy, sampling): one tensor op for the batch.
            self.length = width
            for row, token in zip(self.rows, input_ids[:, -1].tolist()):
                if not row.done and self._token(row, token):
                    fired = True
            return fired
        new = input_ids[:, self.length :].tolist()
        self.length = width
        for row, ids in zip(self.rows, new):
            if row.done:
                continue
            for token in ids:
                if self._token(row, token):
                    fired = True
                    break
        return fired

    def tokens(self, ids_per_row):
        """The streamer's form: each row's new ids as ints."""
        fired = False
        for row, ids in zip(self.rows, ids_per_row):
            if not row.done:
                for token in ids:
                    if self._token(row, token):
                        fired = True
                        break
        return fired

    def _token(self, row, token):
        row.tokens += 1
        if token in self.eos_ids:
            row.done = True
            return False
        text = row.stream.step(token)
        return bool(text) and self._text_of(row, text)

    def _text_of(self, row, text):
        """Routes text to reasoning or content at the <think> tags; True when the row fired."""
        if row.carry:
            text = row.carry + text
            row.carry = ""
        while True:
            tag = self._close if row.reasoning else self._open
            if "<" not in text:
                return self._push(row, text)
            i = text.find(tag)
            if i < 0:
                # Hold back a tail that may be the tag's beginning, split across tokens.
                j = text.rfind("<")
                if tag.startswith(text[j:]):
                    row.carry = text[j:]
                    text = text[:j]
                return self._push(row, text)
            if self._push(row, text[:i]):
                return True
            text = text[i + len(tag) :]
            row.reasoning = not row.reasoning

    def _push(self, row, text):
        if not text:
            return False
        if self._on_text is not None:
            self._on_text(text, "reasoning" if row.reasoning else "content", row.index)
        found = row.detector.push_reasoning(text) if row.reasoning else row.detector.push_content(text)
        if found:
            row.done = True
            row.detection = found[0]
            row.stopped_at = row.tokens
            self._done[row.index] = True
            return True
        return False

    def finish(self):
        """The end of the generation: text held back (a partial tag, a partial char) is pushed."""
        for row in self.rows:
            if not row.done:
                rest = row.carry + row.stream.flush()
                row.carry = ""
                if rest:
                    self._push(row, rest)

    # -- what the caller reads

    @property
    def detections(self):
        return [row.detection for row in self.rows]

    @property
    def detectors(self):
        return [row.detector for row in self.rows]

    @property
    def stopped_at(self):
        return [row.stopped_at for row in self.rows]


class _Common:
    """The readable results every form has."""

    _rows: _Rows

    @property
    def detections(self):
        """Per batch row: its first detection (a :class:`loopscope.Detection`), or None."""
        return self._rows.detections

    @property
    def detectors(self):
        """Per batch row: its :class:`loopscope.Detector` (every detection, ``states()``)."""
        return self._rows.detectors

    @property
    def stopped_at(self):
        """Per batch row: the generated token (1-based count) at which it looped, or None."""
        return self._rows.stopped_at

    def reset(self):
        """Forget the last generation (done by itself when sequences get shorter)."""
        self._rows.reset()


def _rows(tokenizer, profile, params, detectors, reasoning, think_tags, skip_special_tokens, on_text=None):
    return _Rows(tokenizer, profile, params, detectors, reasoning, think_tags, skip_special_tokens, on_text)


class LoopStoppingCriteria(_Common, StoppingCriteria):
    """Stops each row of ``generate()`` at its first loop detection.

    `tokenizer` is the model's fast tokenizer. `profile`, `params` and
    `detectors` are :class:`loopscope.Detector`'s. `reasoning`: whether
    rows start inside the reasoning block (None: when the prompt ends
    inside ``<think>``). `think_tags`: the reasoning block's tags.
    Returns a per-row bool tensor (transformers 4.39 and newer finishes
    rows independently); ``detections``, ``detectors`` and ``stopped_at``
    tell what happened to each row.
    """

    def __init__(
        self,
        tokenizer,
        profile="extended",
        params=None,
        detectors=None,
        reasoning=None,
        think_tags=("<think>", "</think>"),
        skip_special_tokens=True,
    ):
        self._rows = _rows(tokenizer, profile, params, detectors, reasoning, think_tags, skip_special_tokens)

    def __call__(self, input_ids, scores=None, **kwargs):
        self._rows.advance(input_ids)
        return self._rows._done


class LoopLogitsProcessor(_Common, LogitsProcessor):
    """The same detection as a logits processor: once a row loops, only its
    EOS token is allowed, so the row ends at the next token.

    `eos_token_id`: the id to force (default: the tokenizer's EOS). The
    other arguments are :class:`LoopStoppingCriteria`'s.
    """

    def __init__(
        self,
        tokenizer,
        profile="extended",
        params=None,
        detectors=None,
        reasoning=None,
        think_tags=("<think>", "</think>"),
        skip_special_tokens=True,
        eos_token_id=None,
    ):
        self._rows = _rows(tokenizer, profile, params, detectors, reasoning, think_tags, skip_special_tokens)
        eos = eos_token_id if eos_token_id is not None else getattr(tokenizer, "eos_token_id", None)
        if eos is None:
            raise ValueError("LoopLogitsProcessor needs an EOS token id to end a looping row (eos_token_id=…)")
        self.eos_token_id = int(eos)

    def __call__(self, input_ids, scores):
        rows = self._rows
        if rows.length is None or input_ids.shape[0] != len(rows.rows) or input_ids.shape[1] < rows.length:
            # The first call sees only the prompt.
            rows.start(input_ids, input_ids.shape[1])
            return scores
        rows.advance(input_ids)
        done = rows._done
        if bool(done.any()):
            scores = scores.clone()
            scores[done] = float("-inf")
            scores[done, self.eos_token_id] = 0.0
        return scores


class LoopStreamer(_Common, BaseStreamer):
    """A ``generate(streamer=…)`` streamer: decodes the new tokens, gives the
    text to ``on_text(text, channel, row)`` (channel ``reasoning`` or
    ``content``) and watches it for loops. Pass
    ``stopping_criteria=streamer.stopping_criteria`` as well and the
    generation stops at the loop (a streamer alone cannot stop it).

    The other arguments are :class:`LoopStoppingCriteria`'s.
    """

    def __init__(
        self,
        tokenizer,
        on_text=None,
        profile="extended",
        params=None,
        detectors=None,
        reasoning=None,
        think_tags=("<think>", "</think>"),
        skip_special_tokens=True,
    ):
        self._rows = _rows(tokenizer, profile, params, detectors, reasoning, think_tags, skip_special_tokens, on_text)
        self._prompt_next = True
        self.stopping_criteria = StoppingCriteriaList([_StreamerStop(self)])

    def put(self, value):
        """transformers calls it with the prompt first, then each step's new tokens."""
        value = value.detach().cpu() if hasattr(value, "detach") else torch.as_tensor(value)
        if self._prompt_next:
            prompt = value if value.dim() == 2 else value.unsqueeze(0)
            self._rows.start(prompt, prompt.shape[1])
            self._prompt_next = False
            return
        ids = value.tolist()
        per_row = [[i] if isinstance(i, int) else i for i in ids] if value.dim() <= 1 else ids
        self._rows.tokens(per_row)

    def end(self):
        """The generation ended: held-back text is pushed; the next put() is a new prompt."""
        self._rows.finish()
        self._prompt_next = True

    @property
    def looped(self):
        """Whether any row has looped."""
        return any(d is not None for d in self._rows.detections)


class _StreamerStop(StoppingCriteria):
    def __init__(self, streamer):
        self.streamer = streamer

    def __call__(self, input_ids, scores=None, **kwargs):
        done = self.streamer._rows._done
        if done is None or done.shape[0] != input_ids.shape[0]:
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        return done.to(input_ids.device)
