"""A tiny language model and tokenizers made here, with no download, for
loopscope.transformers' tests and bench: byte-level BPE (GPT-2's kind) and
SentencePiece-style BPE with byte fallback (Llama's kind), trained on a
few lines of English, Chinese, Japanese and emoji, and a one-layer GPT-2
built from a config. `Script` makes the model say a given token sequence
per row (a logits processor), so a test knows what it generates."""

import random

CORPUS = [
    "I will check the file again to see whether the test passes.",
    "The function returns a list of the rows that looped, with their reasons.",
    "Let me run the tests once more and read the error message carefully.",
    "我再检查一下这个文件，看看测试是否通过。",
    "関数はループした行のリストを返します。",
    "Done! 🎉 The build is green ✅ and the report is ready 📄.",
    "<think>Let me think about this step by step.</think> The answer is 42.",
] * 20

WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec "
    "romeo sierra tango uniform victor whiskey xray yankee zulu river stone cloud maple copper violet ember "
    "harbor lantern meadow orbit pepper quartz saddle timber velvet willow"
).split()


def byte_level_tokenizer():
    """A GPT-2-style fast tokenizer: byte-level BPE, <|endoftext|> as EOS and pad,
    <think> and </think> as added (non-special) tokens, as Qwen3 has them."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.add_tokens(["<think>", "</think>"])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>", clean_up_tokenization_spaces=False
    )


def sentencepiece_tokenizer():
    """A Llama-style fast tokenizer: `▁` for spaces, <0xNN> byte tokens for
    what the vocabulary lacks, and the decoder Llama's tokenizer.json has."""
    import json

    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    base = Tokenizer(models.BPE(unk_token="<unk>"))
    base.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    base.pre_tokenizer = pre_tokenizers.Split("\u2581", behavior="merged_with_next")
    # Chinese, Japanese and emoji left out of the training text: they come back as byte tokens.
    latin = [line for line in CORPUS if line.isascii()]
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"])
    base.train_from_iterator(latin, trainer)
    spec = json.loads(base.to_str())
    vocab = spec["model"]["vocab"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in spec["model"]["merges"]]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True))
    tok.normalizer = base.normalizer
    tok.pre_tokenizer = base.pre_tokenizer
    tok.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="</s>",
        clean_up_tokenization_spaces=False,
    )


def tiny_model(tokenizer):
    """A one-layer GPT-2 with random weights over the tokenizer's vocabulary."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_layer=1,
        n_head=2,
        n_embd=32,
        n_positions=4096,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return GPT2LMHeadModel(config).eval()


def clean_text(n_words, seed=1):
    """Prose-like text that does not loop: random words, varied sentence lengths."""
    rng = random.Random(seed)
    out = []
    while len(out) < n_words:
        sentence = [rng.choice(WORDS) for _ in range(rng.randint(5, 14))]
        out.append(" ".join(sentence).capitalize() + rng.choice([".", "!", "?", ";"]))
    return " ".join(out)


class Script:
    """A logits processor that makes each row say its token ids, one per
    step, then EOS: the model runs for real, its choice is fixed."""

    def __init__(self, rows, prompt_length, eos_token_id):
        self.rows = rows
        self.prompt_length = prompt_length
        self.eos = eos_token_id

    def __call__(self, input_ids, scores):
        step = input_ids.shape[1] - self.prompt_length
        forced = scores.new_full(scores.shape, float("-inf"))
        for r, ids in enumerate(self.rows):
            forced[r, ids[step] if step < len(ids) else self.eos] = 0.0
        return forced
