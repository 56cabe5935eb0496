#!/usr/bin/env python3
"""loopscope.transformers' overhead per generated token per batch row.

    python python/benches/bench_transformers.py [--tokens 2000] [--batch 1 8]

Calls `LoopStoppingCriteria` as `generate()` does (the growing `input_ids`
after each step), with no model in between, over prose that does not loop
(so every row runs every step), and prints µs per token per row, less what
the same loop costs with a criteria that does nothing, for:

1. `LoopStoppingCriteria` (table decoding, a Detector per row);
2. the same with the window decoder (any tokenizer the table cannot express);
3. the obvious StoppingCriteria: `tokenizer.decode` of the row each step,
   then the new text pushed;
4. the Detector pushes alone (the engine's share of 1).

Needs torch and transformers (the tokenizer is made here: tests/tiny_lm.py).
Best of several rounds, in CPU time (process_time: on a shared machine,
wall time counts the other processes too).
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import torch  # noqa: E402

import loopscope  # noqa: E402
from loopscope.transformers import LoopStoppingCriteria  # noqa: E402
from tiny_lm import byte_level_tokenizer, clean_text  # noqa: E402


class DecodeEachStep:
    """What people write today: decode the whole row every step."""

    def __init__(self, tok, batch):
        self.tok = tok
        self.detectors = [loopscope.Detector() for _ in range(batch)]
        for d in self.detectors:
            d.push_request()
        self.shown = [""] * batch
        self.prompt = None

    def __call__(self, input_ids, scores=None):
        if self.prompt is None:
            self.prompt = input_ids.shape[1] - 1
        done = []
        for r, d in enumerate(self.detectors):
            text = self.tok.decode(input_ids[r, self.prompt :], skip_special_tokens=True)
            delta, self.shown[r] = text[len(self.shown[r]) :], text
            done.append(bool(delta) and bool(d.push_content(delta)))
        return torch.tensor(done)


class Nothing:
    """A criteria that does nothing: what the loop below costs by itself
    (the slicing and the check stand for generate's own), subtracted."""

    def __init__(self, batch):
        self.done = torch.zeros(batch, dtype=torch.bool)

    def __call__(self, input_ids, scores=None):
        return self.done


def run(make, ids, prompt_length, rounds, harness=0.0):
    """Seconds per token per row, best of `rounds`, less the harness's."""
    batch, total = ids.shape
    best = float("inf")
    for _ in range(rounds):
        criteria = make()
        start = time.process_time()
        for length in range(prompt_length + 1, total + 1):
            done = criteria(ids[:, :length], None)
            if bool(done.any()):
                raise SystemExit("the bench's prose looped: pick other text")
        best = min(best, time.process_time() - start)
    return best / ((total - prompt_length) * batch) - harness


def pushes_alone(tok, ids, prompt_length, rounds):
    texts = []
    for row in ids.tolist():
        stream = loopscope._tokens.TokenText(tok).stream()
        texts.append([stream.step(i) for i in row[prompt_length:]])
    best = float("inf")
    for _ in range(rounds):
        ds = [loopscope.Detector() for _ in texts]
        start = time.process_time()
        for d, row in zip(ds, texts):
            d.push_request()
            for t in row:
                if t:
                    d.push_content(t)
        best = min(best, time.process_time() - start)
    return best / (len(texts) * len(texts[0]))


def main():
    import loopscope._tokens  # noqa: F401

    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tok = byte_level_tokenizer()
    torch.set_num_threads(1)
    for batch in args.batch:
        rows = []
        for r in range(batch):
            ids = tok.encode(clean_text(args.tokens, seed=r + 1), add_special_tokens=False)[: args.tokens]
            rows.append(ids)
        n = min(len(r) for r in rows)
        prompt = tok.encode("User: write.", add_special_tokens=False)
        ids = torch.tensor([prompt + r[:n] for r in rows])
        p = len(prompt)

        def windowed():
            c = LoopStoppingCriteria(tok)
            c._rows._text.table = None
            return c

        harness = run(lambda: Nothing(batch), ids, p, args.rounds * 2)
        figures = [
            ("LoopStoppingCriteria", run(lambda: LoopStoppingCriteria(tok), ids, p, args.rounds, harness)),
            ("  with the window decoder", run(windowed, ids, p, args.rounds, harness)),
            ("tokenizer.decode each step", run(lambda: DecodeEachStep(tok, batch), ids, p, 1, harness)),
            ("Detector pushes alone", pushes_alone(tok, ids, p, args.rounds)),
        ]
        print(f"batch {batch}, {n} tokens per row:")
        for name, seconds in figures:
            print(f"  {name:28} {seconds * 1e6:8.2f} µs per token per row")
        print(f"  (the harness alone, subtracted: {harness * 1e6:.2f} µs per token per row)")


if __name__ == "__main__":
    main()
