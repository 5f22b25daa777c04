"""Convert public tool-selection data sets into the shared JSONL format, split by tool.

Usage (needs the upstream repositories as bare git directories; the converted files are
committed, so a fresh clone never runs this):

    python data/natural/build.py --metatool GITDIR --gorilla GITDIR --toolalpaca GITDIR

Each source gets ``data/natural/<source>/tools.jsonl`` (id, name, description, input_schema,
server, category, split) and ``queries.jsonl`` (id, query, gold, split, group). Tools are
assigned to train / dev / test by a hash of their id (stable across runs and machines); a query
belongs to the most held-out split among its gold tools, so no test tool is ever the gold of a
training query. ``toolalpaca`` is test-only as a whole. The paraphrase set's split is written to
``livemcp_paraphrase_split.json`` (even-numbered ids test, odd ones dev).
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import io
import json
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
#: Share of each split-by-tool source's tools held out as test and as dev.
TEST_SHARE = 0.25
DEV_SHARE = 0.15
MAX_QUERY_CHARS = 600
RANK = {"train": 0, "dev": 1, "test": 2}


def git_show(gitdir: Path, path: str) -> str:
    out = subprocess.run(
        ["git", f"--git-dir={gitdir}", "show", f"HEAD:{path}"], check=True, capture_output=True
    )
    return out.stdout.decode("utf-8")


def git_head(gitdir: Path) -> str:
    out = subprocess.run(
        ["git", f"--git-dir={gitdir}", "rev-parse", "HEAD"], check=True, capture_output=True
    )
    return out.stdout.decode().strip()


def tool_split(source: str, tool_id: str) -> str:
    """train / dev / test from a hash of the tool id: stable and independent of file order."""
    h = int(hashlib.sha256(f"{source}\x00{tool_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    if h < TEST_SHARE:
        return "test"
    if h < TEST_SHARE + DEV_SHARE:
        return "dev"
    return "train"


def query_split(golds: Iterable[str], splits: dict[str, str]) -> str:
    return max((splits[g] for g in golds), key=RANK.__getitem__)


def clean(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def finish(source: str, tools: list[dict[str, Any]], queries: list[dict[str, Any]]) -> None:
    """Attach splits, drop queries with unknown gold or duplicate text, write both files."""
    known = {t["id"]: t for t in tools}
    splits = {t["id"]: t["split"] for t in tools}
    seen: set[str] = set()
    kept = []
    for q in queries:
        key = q["query"].lower()
        if not q["gold"] or any(g not in known for g in q["gold"]) or key in seen:
            continue
        seen.add(key)
        q["split"] = query_split(q["gold"], splits)
        kept.append(q)
    nt = write_jsonl(HERE / source / "tools.jsonl", tools)
    nq = write_jsonl(HERE / source / "queries.jsonl", kept)
    counts = {s: sum(1 for q in kept if q["split"] == s) for s in RANK}
    tcounts = {s: sum(1 for t in tools if t["split"] == s) for s in RANK}
    print(f"{source}: {nt} tools {tcounts}, {nq} queries {counts}")


# --- MetaTool (MIT) --------------------------------------------------------------------------


def metatool(gitdir: Path) -> None:
    big = json.loads(git_show(gitdir, "dataset/big_tool_des.json"))
    short = json.loads(git_show(gitdir, "dataset/plugin_des.json"))
    info = {p["name_for_model"]: p for p in json.loads(git_show(gitdir, "dataset/plugin_info.json"))}
    rows = list(csv.DictReader(io.StringIO(git_show(gitdir, "dataset/data/all_clean_data.csv"))))
    names = sorted({r["Tool"] for r in rows})
    tools = []
    for name in names:
        if name in big:
            desc = big[name]
        elif name in info:
            desc = info[name]["description_for_model"]
        else:
            desc = short[name]
        tid = f"metatool::{name}"
        tools.append(
            {
                "id": tid,
                "name": name,
                "description": clean(desc),
                "input_schema": None,
                "server": None,
                "category": None,
                "split": tool_split("metatool", tid),
            }
        )
    queries = [
        {"id": f"mt{i:05d}", "query": clean(r["Query"]), "gold": [f"metatool::{r['Tool']}"],
         "group": "single"}
        for i, r in enumerate(rows)
    ]
    multi = json.loads(git_show(gitdir, "dataset/data/multi_tool_query_golden.json"))
    for i, m in enumerate(multi):
        queries.append(
            {"id": f"mtm{i:04d}", "query": clean(m["query"]),
             "gold": [f"metatool::{t}" for t in m["tool"]], "group": "multi"}
        )
    finish("metatool", tools, queries)


# --- Gorilla APIBench (Apache-2.0) -----------------------------------------------------------

INSTRUCTION = re.compile(r"###Instruction:\s*(.*?)\s*(?:###Output|$)", re.S)


def gorilla(gitdir: Path) -> None:
    tools: dict[str, dict[str, Any]] = {}
    by_call: dict[tuple[str, str], str] = {}
    for hub in ("huggingface", "tensorflowhub", "torchhub"):
        for line in git_show(gitdir, f"data/api/{hub}_api.jsonl").splitlines():
            if not line.strip():
                continue
            api = json.loads(line)
            name = str(api.get("api_name") or "").strip()
            if not name:
                continue
            tid = f"{hub}::{name}"
            by_call[(hub, clean(str(api.get("api_call"))))] = tid
            by_call.setdefault((hub, name), tid)
            if tid in tools:
                continue
            task = clean(f"{api.get('functionality') or ''}, {api.get('domain') or ''}").strip(", ")
            tools[tid] = {
                "id": tid,
                "name": name,
                "description": clean(f"{api.get('description') or ''} Task: {task}."),
                "input_schema": None,
                "server": clean(str(api.get("framework") or hub)),
                "category": clean(str(api.get("domain") or "")) or None,
                "split": tool_split("gorilla", tid),
            }
    queries = []
    files = [
        ("huggingface", "huggingface_eval"),
        ("tensorflowhub", "tensorflow_eval"),
        ("torchhub", "torchhub_eval"),
        ("torchhub", "torchhub_train"),
    ]
    for hub, fname in files:
        for i, line in enumerate(git_show(gitdir, f"data/apibench/{fname}.json").splitlines()):
            if not line.strip():
                continue
            row = json.loads(line)
            m = INSTRUCTION.search(row.get("code", ""))
            if not m:
                continue
            data = row.get("api_data") or {}
            tid = by_call.get((hub, clean(str(row.get("api_call"))))) or by_call.get(
                (hub, str(data.get("api_name") or "").strip())
            )
            if tid is None:
                continue
            text = clean(m.group(1))
            if 3 <= len(text.split()) and len(text) <= MAX_QUERY_CHARS:
                queries.append({"id": f"{fname}/{i}", "query": text, "gold": [tid], "group": hub})
    finish("gorilla_apibench", list(tools.values()), queries)


# --- BFCL (Apache-2.0) -----------------------------------------------------------------------

BFCL = "berkeley-function-call-leaderboard/bfcl_eval/data"
BFCL_SETS = ("simple_python", "multiple", "parallel_multiple", "live_simple", "live_multiple")
TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array", "any": None, "list": "array"}


def json_schema(node: Any) -> Any:
    """BFCL's Python-flavoured types (dict, float, tuple) as JSON Schema."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "type" and isinstance(value, str):
                mapped = TYPE_MAP.get(value, value)
                if mapped is not None:
                    out[key] = mapped
            else:
                out[key] = json_schema(value)
        return out
    if isinstance(node, list):
        return [json_schema(v) for v in node]
    return node


def bfcl(gitdir: Path) -> None:
    tools: dict[str, dict[str, Any]] = {}
    key_to_id: dict[tuple[str, str], str] = {}
    queries = []
    for name in BFCL_SETS:
        rows = [json.loads(x) for x in git_show(gitdir, f"{BFCL}/BFCL_v4_{name}.json").splitlines()]
        answers = {
            a["id"]: a
            for a in map(json.loads, git_show(gitdir, f"{BFCL}/possible_answer/BFCL_v4_{name}.json").splitlines())
        }
        for row in rows:
            local: dict[str, str] = {}
            for fn in row["function"]:
                fname = fn["name"]
                desc = clean(fn.get("description", ""))
                key = (fname, desc)
                if key not in key_to_id:
                    tid = f"bfcl::{fname}"
                    n = 2
                    while tid in tools:
                        tid = f"bfcl::{fname}#{n}"
                        n += 1
                    key_to_id[key] = tid
                    tools[tid] = {
                        "id": tid,
                        "name": fname,
                        "description": desc,
                        "input_schema": json_schema(fn.get("parameters")),
                        "server": None,
                        "category": None,
                        "split": "",
                    }
                local[fname] = key_to_id[key]
            answer = answers.get(row["id"])
            turns = [t for conv in row["question"] for t in conv if t.get("role") == "user"]
            if answer is None or not turns:
                continue
            text = clean(turns[-1]["content"])
            gold = sorted({local[g] for call in answer["ground_truth"] for g in call if g in local})
            if gold and 3 <= len(text.split()) and len(text) <= MAX_QUERY_CHARS:
                queries.append({"id": row["id"], "query": text, "gold": gold, "group": name})
    # BFCL tools that share a name and differ only in wording are one tool for splitting.
    for tool in tools.values():
        tool["split"] = tool_split("bfcl", tool["name"])
    finish("bfcl", list(tools.values()), queries)


# --- ToolAlpaca (Apache-2.0), test only --------------------------------------------------------

PARAMS = re.compile(r"\nParameters:\s*(\{.*?\})\s*\nOutput:", re.S)


def alpaca_schema(desc: str) -> dict[str, Any] | None:
    m = PARAMS.search(desc)
    if not m:
        return None
    try:
        params = json.loads(m.group(1))
    except json.JSONDecodeError:
        return None
    props: dict[str, Any] = {}
    required = []
    for pname, text in params.items():
        text = str(text)
        if text.startswith("Required."):
            required.append(pname)
            text = text[len("Required.") :].strip()
        ptype, _, pdesc = text.partition(".")
        props[pname] = {"type": ptype.strip() or "string", "description": clean(pdesc)}
    return {"type": "object", "properties": props, "required": required}


def toolalpaca(gitdir: Path) -> None:
    tools = []
    queries = []
    for fname in ("eval_real", "eval_simulated"):
        for api in json.loads(git_show(gitdir, f"data/{fname}.json")):
            server = api["Name"]
            funcs = api["Function_Description"]
            if isinstance(funcs, str):
                funcs = ast.literal_eval(funcs)
            ids = {}
            for func, desc in funcs.items():
                if func == "components":
                    continue
                tid = f"{server}::{func}"
                ids[func] = tid
                tools.append(
                    {
                        "id": tid,
                        "name": func,
                        "description": clean(desc.split("\nParameters:")[0]),
                        "input_schema": alpaca_schema(desc),
                        "server": server,
                        "server_description": clean(api.get("Description", "")),
                        "category": api.get("Category"),
                        "split": "test",
                    }
                )
            instructions = api["Instructions"]
            answers = api["Golden_Answers"]
            if isinstance(instructions, str):
                instructions = ast.literal_eval(instructions)
            if isinstance(answers, str):
                answers = ast.literal_eval(answers)
            for i, (text, steps) in enumerate(zip(instructions, answers, strict=False)):
                gold = []
                for step in steps:
                    tid = ids.get(step.get("Action"))
                    if tid and tid not in gold:
                        gold.append(tid)
                queries.append(
                    {"id": f"{fname}/{server}/{i}", "query": clean(text), "gold": gold,
                     "group": fname.removeprefix("eval_")}
                )
    finish("toolalpaca", tools, queries)


def paraphrase_split() -> None:
    rows = [
        json.loads(x)
        for x in (ROOT / "tests/data/livemcp_paraphrase/queries.jsonl").read_text().splitlines()
        if x.strip()
    ]
    # Even-numbered ids (p002, p004, ...) are held out, as in bench/quality.py; odd ones are dev.
    split = {
        "test": [r["id"] for r in rows if int(r["id"].lstrip("p")) % 2 == 0],
        "dev": [r["id"] for r in rows if int(r["id"].lstrip("p")) % 2 == 1],
    }
    (HERE / "livemcp_paraphrase_split.json").write_text(json.dumps(split, indent=1) + "\n")
    print(f"livemcp_paraphrase: {len(split['test'])} test, {len(split['dev'])} dev")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metatool", type=Path, required=True, help="HowieHwong/MetaTool git dir")
    parser.add_argument("--gorilla", type=Path, required=True, help="ShishirPatil/gorilla git dir")
    parser.add_argument("--toolalpaca", type=Path, required=True, help="ToolAlpaca git dir")
    args = parser.parse_args()
    for name, gitdir in (("metatool", args.metatool), ("gorilla", args.gorilla),
                         ("toolalpaca", args.toolalpaca)):
        print(f"{name}: {git_head(gitdir)}")
    metatool(args.metatool)
    gorilla(args.gorilla)
    bfcl(args.gorilla)
    toolalpaca(args.toolalpaca)
    paraphrase_split()
    # Imported here: build_no_match reads this module's helpers.
    from build_no_match import metatool_no_match

    metatool_no_match(args.metatool)


if __name__ == "__main__":
    main()
