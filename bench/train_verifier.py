"""Could a cross-encoder trained here decide ``no_match``, or rerank? A measurement; nothing ships.

    scripts/setup --train
    python bench/train_verifier.py [--out bench/out/verifier]     # ~60 min on 2 cores

No cross-encoder or reranker with weights inside a PyPI or npm package exists, so this trains one
on the same data as the shipped embedder and asks whether reading the request and a tool's text
together separates requests nothing serves from short answerable ones better than the closest
cosine does.

1. Pairs (data/natural, ``split == "train"`` only, built as bench/train_embedder.py builds them:
   MetaTool capped at 25 requests per tool, no self pairs): each request with its gold tool
   (label 1); three of the five closest training tools of the same source, by the shipped
   embedder, that are neither gold nor a numbered copy of it (label 0); and, for half of the
   requests, one of the three closest training tools of another source (label 0).
2. Stock all-MiniLM-L6-v2 with a one-logit head, fine-tuned on ``(request, tool text)`` with
   binary cross-entropy: one epoch, batch 32, learning rate 4e-5 (10 % warm-up, then linear
   decay), 160 tokens, seed 13, 2 threads. The tool text is ``search.document.embed_text``
   without enrichment.
3. Every request bench/calibrate.py pools (``collect_dev``: the answerable dev requests, the
   no-match dev and held-out halves, the single-intent held-out half) is searched with the
   default ``hybrid`` mode; the verifier scores its top 10 hits. Reported: the share flagged by
   calibrate.py's 5 % rule when the request signal is the verifier's best probability among the
   top k (k = 1, 3, 5, 10), beside the closest cosine (the shipped signal) in the same run; and
   hit@3 of each answerable single-tool set when the verifier reorders the top 10, alone and
   fused with the hybrid order (reciprocal ranks, k 60).

Writes ``<out>/model`` (torch weights) and ``<out>/report.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import operator
import random
import time
from argparse import Namespace
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from calibrate import MAX_FLAGGED, collect_dev
from natural import ROOT, TESTS, datasets, db_folder, load_requests
from natural_text import base_id
from toolscout.embed.base import DEFAULT_MODEL, open_embedder
from toolscout.engine import Engine
from toolscout.models import SearchMode
from toolscout.search.document import embed_text
from train_embedder import base_paths, training_pairs

Example = tuple[str, str, float]
Request = dict[str, Any]
NEGATIVES, FOREIGN_SHARE, MAX_TOKENS, BATCH, LR = 3, 0.5, 160, 32, 4e-5


def examples(rng: random.Random) -> list[Example]:
    """Labelled (request, tool text) pairs from the training splits, shuffled."""
    pairs, texts = training_pairs(Namespace(per_tool=25, self_pairs=False), rng)
    embedder = open_embedder(DEFAULT_MODEL)
    ids = sorted(texts)
    sims = (
        embedder.embed_query([p.query for p in pairs]) @ embedder.embed([texts[t] for t in ids]).T
    )
    source = np.array([t.split("::")[0] for t in ids])
    out: list[Example] = []
    for i, pair in enumerate(pairs):
        out.append((pair.query, texts[pair.tool], 1.0))
        own = pair.tool.split("::")[0]
        near = np.argsort(-np.where(source == own, sims[i], -9.0))[:8]
        wrong = [ids[j] for j in near if base_id(ids[j]) != base_id(pair.tool)][:5]
        out.extend(
            (pair.query, texts[t], 0.0) for t in rng.sample(wrong, min(NEGATIVES, len(wrong)))
        )
        if rng.random() < FOREIGN_SHARE:
            other = int(np.argsort(-np.where(source != own, sims[i], -9.0))[rng.randrange(3)])
            out.append((pair.query, texts[ids[other]], 0.0))
    rng.shuffle(out)
    return out


class Verifier:
    """A BERT cross-encoder with one logit (torch)."""

    def __init__(self) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModelForSequenceClassification

        folder, tokenizer = base_paths()
        self.torch = torch
        self.tok = Tokenizer.from_file(str(tokenizer))
        self.tok.no_padding()
        self.tok.enable_truncation(MAX_TOKENS)
        self.model = AutoModelForSequenceClassification.from_pretrained(str(folder), num_labels=1)

    def logits(self, pairs: list[tuple[str, str]]) -> Any:
        torch = self.torch
        enc = self.tok.encode_batch(pairs)
        width = max(len(e.ids) for e in enc)
        ids = torch.zeros((len(enc), width), dtype=torch.long)
        types, mask = torch.zeros_like(ids), torch.zeros_like(ids)
        for k, e in enumerate(enc):
            n = len(e.ids)
            ids[k, :n], types[k, :n], mask[k, :n] = (
                torch.tensor(e.ids), torch.tensor(e.type_ids), 1
            )  # fmt: skip
        out = self.model(input_ids=ids, token_type_ids=types, attention_mask=mask)
        return out.logits.squeeze(-1)

    def train(self, data: list[Example]) -> float:
        torch = self.torch
        steps = math.ceil(len(data) / BATCH)
        opt = torch.optim.AdamW(self.model.parameters(), lr=LR, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, s / (0.1 * steps)) * max(0.0, (steps - s) / (0.9 * steps))
        )
        loss_of = torch.nn.BCEWithLogitsLoss()
        self.model.train()
        start = time.time()
        for step, s in enumerate(range(0, len(data), BATCH), 1):
            batch = data[s : s + BATCH]
            loss = loss_of(self.logits([(q, d) for q, d, _ in batch]),
                           torch.tensor([y for *_, y in batch]))  # fmt: skip
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            if step % 25 == 0:
                print(f"step {step}/{steps} loss {loss.item():.3f} {time.time() - start:.0f} s")
        return time.time() - start

    def score(self, requests: list[Request]) -> None:
        """Adds ``verifier`` (a probability per candidate) to each request."""
        flat = [(r["text"], c[1]) for r in requests for c in r["cands"]]
        probs: list[float] = []
        self.model.eval()
        with self.torch.inference_mode():
            for s in range(0, len(flat), 64):
                probs.extend(self.torch.sigmoid(self.logits(flat[s : s + 64])).tolist())
        for r in requests:
            r["verifier"], probs = probs[: len(r["cands"])], probs[len(r["cands"]) :]


def candidates(model: str) -> dict[str, list[Request]]:
    """The top 10 hybrid hits of every request calibrate.py pools, by set."""
    sets = datasets(ROOT / "data" / "natural")
    gold: dict[str, list[str]] = {}
    for name in ("livemcp_paraphrase", "metatool", "gorilla_apibench", "bfcl"):
        gold.update((r.text, list(r.gold)) for r in load_requests(sets[name], 300))
    for line in (TESTS / "single_intent" / "queries.jsonl").read_text().splitlines():
        row = json.loads(line)
        gold.setdefault(row["query"], row["gold"])

    def measure(engine: Engine, texts: list[str]) -> list[Request]:
        out = []
        for text in texts:
            hits = engine.searcher.search_evidence(text, mode=SearchMode.HYBRID, limit=10)
            tools = engine.store.get_many([r.id for r, _ in hits])
            cands = [[r.id, embed_text(tools[r.id]), ev.cosine or 0.0] for r, ev in hits]
            out.append({"text": text, "gold": gold.get(text, []), "cands": cands})
        return out

    db_dir = db_folder(ROOT / "bench" / "out" / "natural" / "db", model)
    answerable, dev, held, single = collect_dev(sets, db_dir, model, 300, measure, operator.add)
    return {**answerable, "no-match dev": dev, "no-match held out": held,
            "single-intent held out": single}  # fmt: skip


def _best_of(k: int) -> Callable[[Request], float]:
    return lambda r: float(max(r["verifier"][:k], default=0.0))


def report(by_set: dict[str, list[Request]]) -> dict[str, Any]:
    answerable = [n for n in by_set if not n.startswith(("no-match", "single-intent held"))]
    signals: dict[str, Callable[[Request], float]] = {
        "closest cosine": lambda r: max((c[2] for c in r["cands"]), default=0.0)
    }
    for k in (1, 3, 5, 10):
        signals[f"verifier, best of top {k}"] = _best_of(k)
    flags: dict[str, dict[str, float]] = {}
    for name, signal in signals.items():
        cut = float(np.quantile([signal(r) for n in answerable for r in by_set[n]], MAX_FLAGGED))
        flags[name] = {
            n: float(np.mean([signal(r) < cut for r in reqs])) for n, reqs in by_set.items()
        }
        print(f"{name:26s} cut {cut:.3f}  " + "  ".join(
            f"{n} {100 * v:.1f}" for n, v in flags[name].items()))  # fmt: skip
    medians = {n: float(np.median([r["verifier"][0] for r in reqs if r["cands"]]))
               for n, reqs in by_set.items() if reqs}  # fmt: skip
    print("first hit's verifier probability, median: "
          + "  ".join(f"{n} {v:.3f}" for n, v in medians.items()))  # fmt: skip
    hits: dict[str, list[float]] = {}
    for name in answerable:
        if name.startswith("multi_intent") or not by_set[name]:
            continue
        rows = []
        for r in by_set[name]:
            ids, gold = [c[0] for c in r["cands"]], set(r["gold"])
            own = sorted(range(len(ids)), key=lambda i: -r["verifier"][i])
            place = {i: k for k, i in enumerate(own)}
            fused = sorted(range(len(ids)), key=lambda i: -(1 / (60 + i) + 1 / (60 + place[i])))
            rows.append([bool(gold & {ids[i] for i in order[:3]})
                         for order in (range(len(ids)), own, fused)])  # fmt: skip
        hits[name] = [float(100 * v) for v in np.mean(rows, axis=0)]
        print(f"hit@3 {name:22s} hybrid / verifier / fused: "
              + " / ".join(f"{v:.1f}" for v in hits[name]))  # fmt: skip
    return {"flagged": flags, "first_hit_median": medians, "hit_at_3_hybrid_verifier_fused": hits}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "verifier")
    args = parser.parse_args()
    import torch

    torch.manual_seed(13)
    torch.set_num_threads(2)
    rng = random.Random(13)
    data = examples(rng)
    print(f"{len(data)} training pairs, {int(sum(y for *_, y in data))} positive")
    verifier = Verifier()
    seconds = verifier.train(data)
    args.out.mkdir(parents=True, exist_ok=True)
    verifier.model.save_pretrained(str(args.out / "model"))
    by_set = candidates(DEFAULT_MODEL)
    for requests in by_set.values():
        verifier.score(requests)
    result = {"training_seconds": round(seconds), "pairs": len(data), **report(by_set)}
    (args.out / "report.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
