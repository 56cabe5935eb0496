"""Token ids to text, one token at a time, for loopscope.transformers: the
fast tokenizer's decoder read once into a table (token id -> bytes), then
each new token is a table look-up and an incremental UTF-8 decode. The
obvious alternative, `tokenizer.decode` of the sequence at every step,
costs tens of µs per token and grows with the sequence.

Decoders the table cannot express (anything but byte-level BPE and
SentencePiece's `▁` with byte fallback) fall back to decoding a short
window of the last tokens with the fast tokenizer itself, as vLLM does.

The text is the tokenizer's `decode(ids, skip_special_tokens=True)`, char
for char (tests/test_transformers.py), with one difference in garbage:
bytes that are not UTF-8 read as U+FFFD per invalid sequence (as Python
and byte-level BPE decode them), where SentencePiece's ByteFallback
writes one per byte.
"""

import codecs
import json
import re

_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _byte_level_alphabet():
    """GPT-2's byte-level BPE alphabet: the char each byte is written as."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars = {}
    extra = 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def _backend(tokenizer):
    """The `tokenizers.Tokenizer` behind a transformers fast tokenizer (or itself)."""
    backend = getattr(tokenizer, "backend_tokenizer", None) or getattr(tokenizer, "_tokenizer", None)
    if backend is None and type(tokenizer).__module__.startswith("tokenizers"):
        backend = tokenizer
    if backend is None or not hasattr(backend, "to_str"):
        raise TypeError(
            "loopscope.transformers needs a fast tokenizer (AutoTokenizer.from_pretrained(..., use_fast=True)),"
            f" not {type(tokenizer).__name__}"
        )
    return backend


def _decoder_steps(spec):
    """The decoder's steps' types, a Sequence flattened."""
    if not spec:
        return []
    if spec.get("type") == "Sequence":
        return [step for part in spec.get("decoders", []) for step in _decoder_steps(part)]
    return [spec]


class TokenText:
    """What each token id reads as, for one tokenizer (built once; shared by rows)."""

    def __init__(self, tokenizer, skip_special_tokens=True):
        self.backend = _backend(tokenizer)
        self.skip_special_tokens = skip_special_tokens
        spec = json.loads(self.backend.to_str())
        steps = _decoder_steps(spec.get("decoder"))
        kinds = [s.get("type") for s in steps]
        vocab = self.backend.get_vocab(with_added_tokens=True)
        added = {t["id"]: t for t in spec.get("added_tokens", [])}
        self.special = {i for i, t in added.items() if t.get("special")}
        special_ids = getattr(tokenizer, "all_special_ids", None)
        if special_ids:
            self.special.update(int(i) for i in special_ids)
        self.strip_first_space = False
        if kinds == ["ByteLevel"]:
            alphabet = _byte_level_alphabet()

            def raw(token):
                try:
                    return bytes(alphabet[c] for c in token)
                except KeyError:
                    return token.encode("utf-8")

        elif self._sentencepiece(steps):
            byte_fallback = "ByteFallback" in kinds

            def raw(token):
                m = _BYTE_TOKEN.fullmatch(token) if byte_fallback else None
                if m:
                    return bytes([int(m.group(1), 16)])
                return token.replace("\u2581", " ").encode("utf-8")

        else:
            self.table = None
            return
        size = max(vocab.values(), default=-1) + 1
        table = [b""] * size
        for token, i in vocab.items():
            if i in added and not (self.skip_special_tokens and i in self.special):
                table[i] = added[i]["content"].encode("utf-8")  # added tokens bypass the decoder
            elif skip_special_tokens and i in self.special:
                table[i] = b""
            else:
                table[i] = raw(token)
        self.table = table
        # Each token's text when it is whole UTF-8 on its own: the fast path.
        self.text = [_whole(b) for b in table]

    def _sentencepiece(self, steps):
        """SentencePiece-style (`▁` for a space, `<0xNN>` byte tokens): Metaspace, or
        Replace + ByteFallback + Fuse + Strip as Llama's tokenizers have it."""
        kinds = [s.get("type") for s in steps]
        known = {"Metaspace", "Replace", "ByteFallback", "Fuse", "Strip"}
        if not kinds or not set(kinds) <= known:
            return False
        for s in steps:
            if s.get("type") == "Replace":
                pattern = s.get("pattern", {})
                if pattern.get("String") != "\u2581" or s.get("content") != " ":
                    return False
            if s.get("type") == "Strip" and (s.get("start", 0) > 1 or s.get("stop", 0) > 0):
                return False
            if s.get("type") == "Strip" and s.get("start", 0) == 1:
                self.strip_first_space = True
            if s.get("type") == "Metaspace" and s.get("prepend_scheme", "always") != "never":
                if s.get("add_prefix_space", True):
                    self.strip_first_space = True
        return "Metaspace" in kinds or "Replace" in kinds

    def stream(self):
        """A new row's decoder: `step(id) -> str` gives the text that token completes."""
        if self.table is None:
            return _WindowStream(self.backend, self.skip_special_tokens)
        return _TableStream(self)


def _whole(b):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


class _TableStream:
    __slots__ = ("table", "text", "utf8", "pending", "first")

    def __init__(self, token_text):
        self.table = token_text.table
        self.text = token_text.text
        self.utf8 = None
        self.pending = False
        self.first = token_text.strip_first_space

    def step(self, token_id):
        if 0 <= token_id < len(self.text) and not self.pending:
            out = self.text[token_id]
            if out is None:
                out = self._partial(self.table[token_id])
        else:
            b = self.table[token_id] if 0 <= token_id < len(self.table) else b""
            out = self._partial(b)
        if self.first and out:
            self.first = False
            if out[0] == " ":
                out = out[1:]
        return out

    def _partial(self, b):
        if self.utf8 is None:
            self.utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        out = self.utf8.decode(b)
        self.pending = bool(self.utf8.getstate()[0])
        return out

    def flush(self):
        """Bytes of a char the stream ended inside of, as U+FFFD."""
        if self.utf8 is None or not self.pending:
            return ""
        self.pending = False
        return self.utf8.decode(b"", final=True)


class _WindowStream:
    """Decodes the last few tokens with the tokenizer itself and gives what
    the new token added (vLLM's prefix/read offsets): right for any decoder,
    at a tokenizer call or two per token."""

    __slots__ = ("backend", "skip", "ids", "prefix", "read")

    def __init__(self, backend, skip):
        self.backend = backend
        self.skip = skip
        self.ids = []
        self.prefix = 0
        self.read = 0

    def step(self, token_id):
        self.ids.append(token_id)
        decode = self.backend.decode
        before = decode(self.ids[self.prefix : self.read], skip_special_tokens=self.skip)
        now = decode(self.ids[self.prefix :], skip_special_tokens=self.skip)
        if len(now) <= len(before) or now.endswith("\ufffd"):
            return ""
        out = now[len(before) :]
        # Keep a few tokens of context (a decoder's spacing depends on them).
        self.prefix = self.read
        self.read = len(self.ids)
        if self.prefix > 8:
            self.ids = self.ids[self.prefix :]
            self.read -= self.prefix
            self.prefix = 0
        return out

    def flush(self):
        return ""
