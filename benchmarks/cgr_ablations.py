"""CGR reproduction table (paper Table 4 on our budget): dev accuracy of the reader without
facts, iterative retrieval + reader, CGR, and CGR without each chain-aware loss, with seeds; and
training questions/s of each row (CGR against reader-only training is the ratio).

Each row x seed is a real `cgr train` run saved as benchmarks/results/cgr_ablations-<tag>.json,
so the table can be filled over several sessions; the table prints mean ± std over seeds.

    .venv/bin/python benchmarks/cgr_ablations.py --rows reader iterative cgr --seeds 1 2
    .venv/bin/python benchmarks/cgr_ablations.py --table
    .venv/bin/python benchmarks/cgr_ablations.py --dataset arc_challenge --rows iterative cgr
    .venv/bin/python benchmarks/cgr_ablations.py --train-questions 0 --lr 1e-4 --rows reader iterative
    .venv/bin/python benchmarks/cgr_ablations.py --train-questions 0 --epochs 2 --seeds 1 --rows chains --dropout-seed 2

`--dropout-seed N` repeats a row on the same seed (same initial weights, same training order)
with other dropout draws (cgr.training.callbacks.DropoutSeed), saved under `...-s<seed>-d<N>`;
the table prints each repeat beside its row, paired on dev questions: how far dropout noise
alone moves a row.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import math
import re
import statistics
import sys
from pathlib import Path
from statistics import NormalDist

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import figure4, mechanism  # noqa: E402
from benchmarks.common import (
    RESULTS,
    ROOT,
    gold_split,
    keep_answers,
    load_result,
    machines,
    mcnemar_p,
    paired_counts,
    paired_interval,
    print_table,
    run_training,
    save_result,
    seed_differences,
    train_config,
)  # noqa: E402
from cgr.evidence.selection import ORDERS as EVIDENCE_ORDERS  # noqa: E402
from cgr.training.cgr_module import GRADIENT_CLIPPING  # noqa: E402

# how a saved note names a run resumed before resumes kept the loader's position
LOADER_BUG = "loader-position fix"
# how a saved note says the run did not have the machine to itself (its minutes are no timing)
NOT_ALONE = re.compile(r"shar|SIGSTOP|stopped|niced|other jobs")

READER = "cgr.training.module.ReaderModule"
DROPOUT_SEED = "cgr.training.callbacks.DropoutSeed"
CGR = "cgr.training.cgr_module.CGRModule"
LOSSES = ("use_supervised", "use_mle", "use_rl", "use_global")
# row -> (label, model class, retrieval method, chains on, CGR losses switched off)
ROWS = {
    "reader": ("reader, no facts", READER, "none", False, ()),
    "iterative": ("iterative retrieval + reader", READER, "beam", False, ()),
    # the reader on Ê with the retriever frozen: what the chains give without CGR's losses
    "chains": ("iterative retrieval + chains (Ê) + reader", READER, "beam", True, ()),
    "cgr": ("CGR", CGR, "beam", True, ()),
    # the paper's beam pool against one dense step (the pool with more gold facts read)
    "dense": ("dense one-step retrieval + reader", READER, "dense", False, ()),
    "cgr_dense": ("CGR over the dense one-step pool", CGR, "dense", True, ()),
    "no_global": ("CGR w/o L_global", CGR, "beam", True, ("use_global",)),
    "no_mle": ("CGR w/o L_mle", CGR, "beam", True, ("use_mle",)),
    "no_rl": ("CGR w/o L_rl", CGR, "beam", True, ("use_rl",)),
    "no_local": ("CGR w/o L_mle and L_rl", CGR, "beam", True, ("use_mle", "use_rl")),
    "no_chain_losses": ("CGR w/o L_D (L_reader + L_S only)", CGR, "beam", True, ("use_mle", "use_rl", "use_global")),
    # the reader also trained to judge one chain's facts alone (model.chain_reading 1), as a
    # chain's support asks it to (cgr/evaluation/support.py): measured by chain_support.py
    "chain_reading": ("CGR + chain reading", CGR, "beam", True, ()),
}  # fmt: skip
ROW_ARGS = {"chain_reading": {"chain_reading": 1.0}}  # init arguments a row sets beside the losses
CONFIGS = {"obqa": "configs/obqa_cgr_cpu.yaml", "arc_challenge": "configs/arc_challenge.yaml"}
HISTORIC_LR = 5e-5
PAPER_MARGIN = 1.6  # CGR 82.4 against DPR 80.8 on OBQA test, in points (the paper's Table 2)
LOSS_MARGIN = 1.5  # CGR 79.70 against 78.20 without L_D on OBQA dev, in points (Table 4)
# the comparisons the paper's claims are about: (row a, row b, b's margin over a in the paper,
# over what); and, where the paper has no row, what reading the chains' facts (Ê) gives the
# reader, and what CGR's training adds to that
PAIRS = (
    ("iterative", "cgr", PAPER_MARGIN, "over DPR"),
    ("no_chain_losses", "cgr", LOSS_MARGIN, "on OBQA dev, four runs"),
    ("iterative", "chains", None, ""),
    ("chains", "cgr", None, ""),
    ("cgr", "chain_reading", None, ""),
)
SHORT = {"iterative": "iterative", "cgr": "CGR", "no_chain_losses": "CGR w/o L_D",
         "chains": "chains-only", "chain_reading": "CGR + chain reading"}  # fmt: skip
# the reader's default rate by reader (configs/model/reader_*.yaml); --lr overrides it
READER_LR = {"mpnet": 5e-5}
READER_ARGS = ("reader_model", "max_length", "lr", "weight_decay", "warmup_ratio")
# which 20 chains CGR's losses read: the rows of the two-epoch table began with chains ranked by
# relevance; configs/chains/default.yaml now puts open-book chains first (better chains,
# benchmarks/chain_quality.py), which would change what the losses read halfway through a table
CHAIN_ORDER = "relevance"
# the retriever settings a CGR row trains with: ours (configs/model/cgr_minilm.yaml) or the
# authors' (configs/model/cgr_minilm_authors.yaml: scale 1, query-encoder lr 9e-6, eps 1e-6,
# joint clipping); rows in the authors' settings are saved under "-authors"
SETTINGS = {"ours": None, "authors": "configs/model/cgr_minilm_authors.yaml"}
AUTHORS_ARGS = ("retriever_lr", "similarity_scale", "adam_eps", "gradient_clipping")


def row_config(base: dict, row: str, seed: int, budget: argparse.Namespace) -> dict:
    _, model_class, method, chains, off = ROWS[row]
    config = copy.deepcopy(base)
    config["seed_everything"] = seed
    config["trainer"]["max_epochs"] = budget.epochs
    init = {k: v for k, v in config["model"]["init_args"].items() if k in READER_ARGS}
    init["max_length"] = budget.max_length
    if budget.reader != "minilm":  # its model group's reader and rate (model/reader_mpnet.yaml)
        init.update(reader_model=budget.reader, lr=READER_LR[budget.reader])
    if budget.lr:  # the reader's (and CGR's query encoder's, retriever_lr null) learning rate
        init["lr"] = float(budget.lr)
    if model_class == CGR:
        init.update({k: k not in off for k in LOSSES})
        init["gradient_clipping"] = budget.gradient_clipping
        if (settings := getattr(budget, "settings", "ours")) != "ours":
            authors = yaml.safe_load((ROOT / SETTINGS[settings]).read_text())["init_args"]
            init.update({k: authors[k] for k in AUTHORS_ARGS})
    init.update(ROW_ARGS.get(row, {}))
    config["model"] = {"class_path": model_class, "init_args": init}
    if budget.dropout_seed is not None:  # a same-seed repeat: only the dropout draws differ
        config["trainer"]["callbacks"].append(
            {"class_path": DROPOUT_SEED, "init_args": {"seed": budget.dropout_seed}}
        )
    data = config["data"]
    data["max_train_questions"] = budget.train_questions
    data["retrieval"]["method"] = method
    data["chains"]["enabled"] = chains
    data["chains"]["chain_order"] = CHAIN_ORDER
    if order := getattr(budget, "evidence_order", None):  # budgets saved before: the config's
        data.setdefault("evidence", {})["order"] = order
    if (similarity := getattr(budget, "link_similarity", None)) is not None:
        # similar links: Ê grows, and the reader trains on what it gives
        data["chains"]["link_similarity"] = similarity
    return config


def lr_text(value: float) -> str:
    """1e-4 -> "1e-4", 2.5e-5 -> "2.5e-5": a config's learning rate as a result name part."""
    mantissa, exponent = f"{value:e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def tag(dataset: str, row: str, seed: int, budget: argparse.Namespace) -> str:
    # runs at lr 5e-5 (the configs' earlier rate) keep their old names
    lr = f"-lr{budget.lr}" if budget.lr and float(budget.lr) != HISTORIC_LR else ""
    # CGR runs named without "clipeach" clipped one joint gradient norm; they keep their names
    clip = "-clipeach" if ROWS[row][1] == CGR and budget.gradient_clipping == "each" else ""
    settings = getattr(budget, "settings", "ours")  # budgets saved before the switch: ours
    if ROWS[row][1] == CGR and settings != "ours":
        clip = f"-{settings}"  # the authors' settings clip one joint norm
    reader = (
        "" if budget.reader == "minilm" else f"-{budget.reader}"
    )  # MiniLM rows keep their names
    dropout_seed = getattr(budget, "dropout_seed", None)  # budgets written before repeats: none
    repeat = "" if dropout_seed is None else f"-d{dropout_seed}"
    # rows reading the config's order (question_choice) keep their names
    order = getattr(budget, "evidence_order", None)
    evidence = f"-{order}" if order else ""
    similarity = getattr(budget, "link_similarity", None)  # rows with equal concepts only: none
    evidence += f"-sim{similarity:g}" if similarity is not None else ""
    return f"cgr_ablations-{dataset}-{row}-q{budget.train_questions}-e{budget.epochs}-l{budget.max_length}{lr}{clip}{reader}{evidence}-s{seed}{repeat}"


def learning_rate(text: str) -> str:
    """Kept as typed (it names the result files), checked to be a positive number."""
    try:
        ok = float(text) > 0
    except ValueError:
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(f"--lr {text!r}: expected a positive number such as 1e-4")
    return text


def gold_cells(group: list[dict]) -> list[str]:
    """gold read %, accuracy when read / not read: means over the runs that recorded them."""
    runs = [r for r in group if r.get("n_gold_read") is not None]
    if not runs:
        return ["–", "–"]
    read = [100 * r["n_gold_read"] / (r["n_gold_read"] + r["n_gold_not_read"]) for r in runs]
    acc = []
    for split, n in (("acc_gold_read", "n_gold_read"), ("acc_gold_not_read", "n_gold_not_read")):
        values = [r[split] for r in runs if r[n]]  # a split with no question has no accuracy
        acc.append(f"{statistics.mean(values):.1f}" if values else "–")
    return [f"{statistics.mean(read):.1f}", " / ".join(acc)]


def mean_std(accuracies: list[float]) -> str:
    acc = [100 * a for a in accuracies]
    return f"{statistics.mean(acc):.1f}" + (
        f" ± {statistics.stdev(acc):.1f}" if len(acc) > 1 else ""
    )


def reread_rows(dataset: str, row: str, seeds: list[int], budget: argparse.Namespace) -> list[list]:
    """A CGR row's checkpoints re-read with each query encoder by benchmarks/cgr_evidence.py
    (its `<encoder>_chains` variants), where saved: the same best.ckpt, dev evidence retrieved
    with the trained or the base encoder (`cgr eval --query-encoder trained|base`)."""
    rows = []
    for encoder in ("trained", "base"):
        found = [r for s in seeds
                 if (r := load_result(f"cgr_evidence-{tag(dataset, row, s, budget)}-{encoder}_chains"))]  # fmt: skip
        if found:
            accuracy = [r["accuracy"] / 100 for r in found]
            rows.append([f"{ROWS[row][0]}, best.ckpt re-read with the {encoder} query encoder",
                         mean_std(accuracy), len(found), "–", "–", "–", "–"])  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="obqa", choices=list(CONFIGS))
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--train-questions", type=int, default=1000, help="0: the whole train set")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--lr", type=learning_rate, default=None,
                        help="e.g. 1e-4 (default: the config's); runs are saved under their own names")  # fmt: skip
    parser.add_argument("--gradient-clipping", default="each", choices=GRADIENT_CLIPPING,
                        help="CGR rows: clip the reader and query encoder apart (each) or one norm "
                             "(joint: the earlier CGR runs)")  # fmt: skip
    parser.add_argument("--settings", default="ours", choices=list(SETTINGS),
                        help="CGR rows: our retriever settings or the authors' (scale 1, "
                             "query-encoder lr 9e-6, eps 1e-6, joint clipping)")  # fmt: skip
    parser.add_argument("--reader", default="minilm", choices=["minilm", *READER_LR],
                        help="the reader (retriever and CGR's query encoder stay MiniLM)")  # fmt: skip
    parser.add_argument("--dropout-seed", type=int, default=None,
                        help="repeat the rows on the same seeds with other dropout draws")  # fmt: skip
    parser.add_argument("--evidence-order", default=None,
                        choices=EVIDENCE_ORDERS,
                        help="data.evidence.order (default: the config's, question_choice); "
                             "retriever: the authors' pathway")  # fmt: skip
    parser.add_argument("--link-similarity", type=float, default=None, metavar="T",
                        help="data.chains.link_similarity (default: the config's, off): chains "
                             "also reach the hypothesis through similar concepts")  # fmt: skip
    parser.add_argument("--similarity-table", action="store_true",
                        help="only print the rows trained with --link-similarity paired with the "
                             "same rows without")  # fmt: skip
    parser.add_argument("--order-table", action="store_true",
                        help="only print the rows reading --evidence-order (default retriever) "
                             "paired with the same rows reading the config's order")  # fmt: skip
    parser.add_argument("--settings-table", action="store_true",
                        help="only print each CGR row in our retriever settings paired with the "
                             "same row in the authors' (--settings)")  # fmt: skip
    parser.add_argument("--force", action="store_true", help="re-run rows that have a result")
    parser.add_argument("--table", action="store_true", help="only print the table")
    parser.add_argument("--brief", action="store_true",
                        help="with --table: pairings pooled over seeds only (the docs' form)")  # fmt: skip
    args = parser.parse_args()
    budget = argparse.Namespace(
        train_questions=args.train_questions,
        epochs=args.epochs,
        max_length=args.max_length,
        lr=args.lr,
        gradient_clipping=args.gradient_clipping,
        settings=args.settings,
        reader=args.reader,
        dropout_seed=args.dropout_seed,
        evidence_order=args.evidence_order,
        link_similarity=args.link_similarity,
    )
    base = train_config(CONFIGS[args.dataset])
    if budget.lr is None:  # the config's (or the reader's) rate names the results as --lr would
        budget.lr = lr_text(READER_LR.get(args.reader, float(base["model"]["init_args"]["lr"])))
    if not args.table:
        for seed in args.seeds:
            for row in args.rows:
                name = tag(args.dataset, row, seed, budget)
                if load_result(name) and not args.force:
                    continue
                config = row_config(base, row, seed, budget)
                result = run_training(config, name)
                result.update(gold_split(config, name))
                keep_answers(config, name)  # pairings with rows run on other machines
                if ROWS[row][1] == CGR:  # `cgr train` evaluates with the default encoder choice;
                    result["query_encoder"] = "auto"  # saved results without the key: "trained"
                save_result(
                    name, {"row": ROWS[row][0], "seed": seed, "budget": vars(budget), **result}
                )
                if budget.dropout_seed is not None:  # the repeat against its row
                    saved_repeat(base, args.dataset, row, seed, budget, refresh=True)
                for pair in PAIRS:  # a re-run row's pairings are counted again
                    if budget.dropout_seed is None and row in pair[:2]:
                        saved_pairing(base, args.dataset, seed, budget, pair[:2], refresh=True)
                if ROWS[row][1] == CGR:  # the paper's Figure 4, on the encoder it trained
                    mechanism.saved_or_measured(best_checkpoint(name), args.dataset, table=False)
                    # the loss-term rows (benchmarks/figure4.py): OBQA's fact1 in its open book
                    if budget.epochs == 1 and args.dataset == "obqa":
                        figure4.saved_or_measured(best_checkpoint(name))
                print(
                    f"{name}: accuracy {result['accuracy']:.4f} in {result['minutes']:.1f} min",
                    flush=True,
                )
    if args.order_table:
        print_order_table(base, args.dataset, args.rows, args.seeds, budget)
        return
    if args.settings_table:
        print_settings_table(base, args.dataset, args.rows, args.seeds, budget)
        return
    if args.similarity_table:
        print_similarity_table(base, args.dataset, args.rows, args.seeds, budget)
        return
    table, speeds, measured, by_seed = [], {}, [], {}
    untimed = resumed = False
    for row in args.rows:
        runs = [r for s in args.seeds if (r := load_result(tag(args.dataset, row, s, budget)))]
        measured += runs
        by_seed[row] = {r["seed"]: r["accuracy"] for r in runs}
        for encoder in sorted({r.get("query_encoder", "trained") for r in runs}):
            group = [r for r in runs if r.get("query_encoder", "trained") == encoder]
            label = ROWS[row][0]
            if ROWS[row][1] == CGR:
                label += f" (eval: {encoder} query encoder)"
            # a timing only from runs alone on the machine (a saved note says when one was not)
            timed = [r for r in group if not NOT_ALONE.search(r.get("note") or "")]
            untimed |= len(timed) < len(group)
            if any(LOADER_BUG in (r.get("note") or "") for r in group):
                label, resumed = label + " †", True
            qps = [r["questions_per_s"] for r in timed if r.get("questions_per_s")]
            speeds[row] = statistics.mean(qps) if qps else float("nan")
            minutes = f"{statistics.mean(r['minutes'] for r in timed):.1f}" if timed else "–"
            table.append([label, mean_std([r["accuracy"] for r in group]), len(group),
                          f"{speeds[row]:.2f}" if qps else "–", minutes, *gold_cells(group)])  # fmt: skip
        table += reread_rows(args.dataset, row, args.seeds, budget)
    print(f"{args.dataset} dev accuracy (%), {args.reader} reader, MiniLM retriever; budget: "
          f"{args.train_questions or 'all'} train questions x {args.epochs} epoch(s), max length {args.max_length}, "
          f"lr {budget.lr}; CGR gradient clipping {args.gradient_clipping}; "
          f"seeds {args.seeds}; {machines(measured)}")  # fmt: skip
    columns = ["model", "dev accuracy", "seeds", "train questions/s", "minutes/run",
               "gold read %", "acc % gold read / not read"]  # fmt: skip
    if all(row[-2:] == ["–", "–"] for row in table):  # runs from before the gold split was saved
        columns, table = columns[:-2], [row[:-2] for row in table]
    print_table(columns, table)
    if not table:
        print("(no row of this budget saved yet)")
    if untimed:
        print("Speed and minutes: the mean over the runs that had the machine to themselves; "
              "– where none did (accuracy does not depend on it)")  # fmt: skip
    if resumed:
        print("† a run resumed mid-epoch from a checkpoint written before resumes kept the "
              "loader's position: up to a fifth of one epoch trained on other questions")  # fmt: skip
    if not math.isnan(speeds.get("cgr", math.nan) / speeds.get("iterative", math.nan)):
        print(f"CGR / reader-only training speed: {speeds['cgr'] / speeds['iterative']:.2f}")
    for a, b, margin, what in [] if args.brief else PAIRS:  # brief: the pooled pairings say it
        if diff := seed_differences(by_seed.get(a, {}), by_seed.get(b, {}), margin):
            paper = f"the paper: +{margin} {what}; " if margin is not None else ""
            print(f"{SHORT[b]} - {SHORT[a]}, same seeds (points): {diff} ({paper}"
                  "same-seed runs differ in their dropout draws, so not paired)")  # fmt: skip
    for row, seed in itertools.product(args.rows, args.seeds):
        for repeat in repeats_of(args.dataset, row, seed, budget):
            print(repeat_line(base, args.dataset, row, seed, budget, repeat))
    trained = [best_checkpoint(tag(args.dataset, row, seed, budget))
               for row in args.rows if ROWS[row][1] == CGR for seed in args.seeds]  # fmt: skip
    base_vs_trained = mechanism.rows_for(trained, args.dataset, table=True)
    if len(base_vs_trained) > 1:  # the base row alone says nothing about a run
        if any(ROWS[row][1] == READER and ROWS[row][2] != "none" for row in args.rows):
            # reader-only rows never train the retriever: their row is the base encoder's
            base_vs_trained[0]["run"] += (
                " (also the reader-only rows': their retriever stays frozen)"
            )
        print()
        mechanism.print_rows(base_vs_trained)
    pairs = [pair for pair in PAIRS if set(pair[:2]) <= set(args.rows)]  # the table's rows
    for (a, b, margin, _), seed in itertools.product(pairs, args.seeds):
        if args.brief and len(args.seeds) > 1:  # the pooled lines below say it
            continue
        if paired := saved_pairing(base, args.dataset, seed, budget, (a, b)):
            names = {a: SHORT[a], b: SHORT[b]}
            questions = pairing_questions(paired, args.dataset, a, seed, budget)
            diff = ""
            if questions:
                d, lo, hi = paired_interval(paired["a_only"], paired["b_only"], questions)
                diff = f"{names[b]} - {names[a]} {d:+.1f} [{lo:+.1f}, {hi:+.1f}] points; "
            print(f"seed {seed}, paired on dev questions: {diff}{names[a]} right where {names[b]} is "
                  f"wrong {paired['a_only']}, {names[b]} right where {names[a]} is wrong "
                  f"{paired['b_only']}; exact McNemar p = {paired['p']:.2f}")  # fmt: skip
            cells = {(True, True): "both", (True, False): f"{names[a]} only",
                     (False, True): f"{names[b]} only", (False, False): "neither"}  # fmt: skip
            by_gold = {(x, y): counts for x, y, *counts in paired["by_gold"]}
            print(f"  by who read the gold fact (questions: right with {names[a]} / {names[b]}): " + ", ".join(
                f"{label} {c[0]}: {c[1]} / {c[2]}" for key, label in cells.items()
                if (c := by_gold.get(key))))  # fmt: skip
            if margin is not None and questions:
                discordant = paired["a_only"] + paired["b_only"]
                print(f"  seeds to detect the paper's +{margin} (80 % power, p < 0.05, pairings "
                      f"pooled over seeds, each with this seed's {discordant} questions in "
                      f"disagreement): {seeds_needed(discordant, margin, questions)}")  # fmt: skip
    for a, b, margin, _ in pairs:
        if line := pooled_line(base, args.dataset, args.seeds, budget, (a, b), margin):
            print(line)
        if ROWS[b][1] == CGR and (line := placebo_line(args.dataset, args.seeds, budget, (a, b))):
            print(line)


def pooled_line(
    base: dict, dataset: str, seeds: list[int], budget: argparse.Namespace,
    rows: tuple[str, str], margin: float | None,
) -> str | None:  # fmt: skip
    """One pair of rows pooled over the seeds with saved pairings: b − a in points with its
    paired 95 % interval, and whether the paper's margin lies inside it."""
    a, b = rows
    found = [(s, p) for s in seeds if (p := saved_pairing(base, dataset, s, budget, rows))]
    counted = [(p, n) for s, p in found if (n := pairing_questions(p, dataset, a, s, budget))]
    if len(counted) < 2:  # one seed's pairing is printed above
        return None
    a_only = sum(p["a_only"] for p, _ in counted)
    b_only = sum(p["b_only"] for p, _ in counted)
    n = sum(n for _, n in counted)
    diff, low, high = paired_interval(a_only, b_only, n)
    text = (f"{SHORT[b]} - {SHORT[a]}, pooled over {len(counted)} seeds ({n} paired answers): "
            f"{diff:+.1f} points, 95 % interval [{low:+.1f}, {high:+.1f}]; {SHORT[a]} right only "
            f"{a_only}, {SHORT[b]} right only {b_only}, exact McNemar p = {mcnemar_p(a_only, b_only):.2f}")  # fmt: skip
    if margin is not None:
        inside = "inside" if low <= margin <= high else "outside"
        per_seed = (a_only + b_only) // len(counted)
        text += (f"; the paper's +{margin} is {inside} it; seeds to detect it (80 % power): "
                 f"{seeds_needed(per_seed, margin, n // len(counted))}")  # fmt: skip
    return text


def placebo_line(
    dataset: str, seeds: list[int], budget: argparse.Namespace, rows: tuple[str, str]
) -> str | None:
    """b − a after epoch 1 (before any chain loss can reach the reader: the evidence it reads
    comes from the trained encoder only after the refresh) against the end: a gap present at
    epoch 1 is dropout and order noise, not the losses."""
    a, b = rows
    gaps = []
    for seed in seeds:
        runs = [load_result(tag(dataset, row, seed, budget)) for row in rows]
        curves = [r.get("val_acc_by_epoch") or [] for r in runs if r]
        if len(curves) == 2 and min(map(len, curves)) >= 2:
            gaps.append(
                (100 * (curves[1][0] - curves[0][0]), 100 * (curves[1][-1] - curves[0][-1]))
            )
    if not gaps:
        return None
    first = ", ".join(f"{g[0]:+.1f}" for g in gaps)
    return (f"{SHORT[b]} - {SHORT[a]} after epoch 1 (before the chain losses can reach the "
            f"reader): {first}, mean {statistics.mean(g[0] for g in gaps):+.1f}; at the last "
            f"epoch: mean {statistics.mean(g[1] for g in gaps):+.1f} (dev accuracy at each "
            "validation; a gap already there at epoch 1 is noise, not the losses)")  # fmt: skip


def seeds_needed(
    discordant: int, margin: float, questions: int, power: float = 0.8, alpha: float = 0.05
) -> int:
    """How many seeds' paired dev comparisons, pooled, detect a true gap of `margin` points
    with `power` at two-sided `alpha`, if each seed's two runs disagree on `discordant` of the
    `questions` (McNemar's normal approximation: a seed adds margin% of the questions to the
    net count and `discordant` to its variance). A floor: seeds share the dev questions, so
    their pairings are not independent."""
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    net = margin / 100 * questions
    return math.ceil(z * z * discordant / (net * net))


def pairing_questions(
    paired: dict, dataset: str, row: str, seed: int, budget: argparse.Namespace
) -> int | None:
    """The questions a pairing counted: its own count, or for pairings saved before they kept
    one, the dev questions row a's saved run was scored on (None for runs saved without the
    count). Every question of OBQA dev has a gold fact; on ARC only those with one are counted
    in a run's result, so an ARC pairing needs its own count."""
    if paired.get("questions"):
        return paired["questions"]
    run = load_result(tag(dataset, row, seed, budget)) or {}
    if run.get("n_gold_read") is None:
        return None
    return run["n_gold_read"] + run["n_gold_not_read"]


def repeats_of(dataset: str, row: str, seed: int, budget: argparse.Namespace) -> list[int]:
    """The dropout seeds a row was repeated with on `seed` (saved results); none for a repeat."""
    if getattr(budget, "dropout_seed", None) is not None:
        return []
    prefix = f"{tag(dataset, row, seed, budget)}-d"
    found = (path.stem.removeprefix(prefix) for path in RESULTS.glob(f"{prefix}*.json"))
    return sorted(int(d) for d in found if d.isdigit())


def repeat_line(
    base: dict, dataset: str, row: str, seed: int, budget: argparse.Namespace, dropout_seed: int
) -> str:
    """One row against its same-seed repeat: accuracies and the pairing on dev questions."""
    repeat = argparse.Namespace(**{**vars(budget), "dropout_seed": dropout_seed})
    first, second = (load_result(tag(dataset, row, seed, b)) for b in (budget, repeat))
    line = (f"{ROWS[row][0]}, seed {seed}, repeated with other dropout draws (dropout seed "
            f"{dropout_seed}): {100 * first['accuracy']:.1f} and {100 * second['accuracy']:.1f}, "
            f"{100 * (second['accuracy'] - first['accuracy']):+.1f} points")  # fmt: skip
    if paired := saved_repeat(base, dataset, row, seed, repeat):
        line += (f"; paired on dev questions: {paired['a_only']} right only in the first run, "
                 f"{paired['b_only']} only in the repeat, exact McNemar p = {paired['p']:.2f}")  # fmt: skip
    return line


def saved_repeat(
    base: dict, dataset: str, row: str, seed: int, repeat: argparse.Namespace, refresh: bool = False
) -> dict | None:
    """A row and its repeat (`repeat.dropout_seed`), question by question, saved the first time
    both runs' predictions are here (as saved_pairing)."""
    first = tag(dataset, row, seed, argparse.Namespace(**{**vars(repeat), "dropout_seed": None}))
    second = tag(dataset, row, seed, repeat)
    return saved_or_paired(base, f"cgr_ablations_paired-{second}", first, second, refresh)


def print_order_table(
    base: dict, dataset: str, rows: list[str], seeds: list[int], budget: argparse.Namespace
) -> None:
    """Each row reading the config's evidence order against the same row and seed reading
    `budget.evidence_order` (default `retriever`, the authors' pathway), paired on dev questions."""
    order = budget.evidence_order or "retriever"
    other = argparse.Namespace(**{**vars(budget), "evidence_order": order})
    config = argparse.Namespace(**{**vars(budget), "evidence_order": None})
    print_switch_table(base, dataset, rows, seeds, (config, other), "",
                       f"{dataset} dev accuracy (%) reading the config's evidence order "
                       "(question_choice: the base encoder ranks the facts by cosine to 'question "
                       f"choice') → reading `{order}` (the authors' pathway: the current query "
                       "encoder ranks the pool, open book first)")  # fmt: skip


def print_settings_table(
    base: dict, dataset: str, rows: list[str], seeds: list[int], budget: argparse.Namespace
) -> None:
    """Each CGR row in our retriever settings against the same row and seed in the authors'
    (configs/model/cgr_minilm_authors.yaml), paired on dev questions: which the configs follow."""
    ours, authors = (argparse.Namespace(**{**vars(budget), "settings": s, "gradient_clipping": "each"})
                     for s in ("ours", "authors"))  # fmt: skip
    rows = [row for row in rows if ROWS[row][1] == CGR]
    print_switch_table(base, dataset, rows, seeds, (ours, authors), "-vs-ours",
                       f"{dataset} dev accuracy (%) in our retriever settings (σ = 20 · cosine, "
                       "one lr 1e-4, AdamW eps 1e-8, reader and query encoder clipped apart) → "
                       "in the authors' (σ = cosine, query-encoder lr 9e-6, eps 1e-6, one joint "
                       "norm)")  # fmt: skip


def print_similarity_table(
    base: dict, dataset: str, rows: list[str], seeds: list[int], budget: argparse.Namespace
) -> None:
    """Each row trained on the paper's chains (equal concepts only) against the same row and
    seed with similar links (`budget.link_similarity`, default 0.5): whether the reader gains
    from the larger Ê they give, which decides the switch's default."""
    similarity = 0.5 if budget.link_similarity is None else budget.link_similarity
    paper, similar = (argparse.Namespace(**{**vars(budget), "link_similarity": t})
                      for t in (None, similarity))  # fmt: skip
    print_switch_table(base, dataset, rows, seeds, (paper, similar), "-vs-paper",
                       f"{dataset} dev accuracy (%) with chains through equal concepts only (the "
                       f"paper) → with similar links (data.chains.link_similarity {similarity:g}: "
                       "a fact also reaches a hypothesis node through a concept at base-encoder "
                       "cosine ≥ the threshold, so Ê grows)")  # fmt: skip


def print_switch_table(
    base: dict,
    dataset: str,
    rows: list[str],
    seeds: list[int],
    budgets: tuple[argparse.Namespace, argparse.Namespace],
    suffix: str,
    caption: str,
) -> None:
    """Each row and seed under the first budget against the second, paired on dev questions;
    "gold read" is the share of questions whose answer choice read a gold fact, "train acc"
    the accuracy on the training questions over the last epoch."""
    table = []
    for row, seed in itertools.product(rows, seeds):
        first, second = (tag(dataset, row, seed, b) for b in budgets)
        paired = saved_or_paired(
            base, f"cgr_ablations_paired-{second}{suffix}", first, second, False
        )
        if not paired:
            continue
        results = [load_result(n) for n in (first, second)]
        a, b = (r["accuracy"] for r in results)
        trained = [(r.get("train_acc_by_epoch") or [None])[-1] for r in results]
        train = " → ".join(f"{100 * t:.1f}" for t in trained) if None not in trained else "–"
        questions = sum(n for *_, n, _, _ in paired["by_gold"]) or None
        reads = [sum(n for a_read, b_read, n, _, _ in paired["by_gold"] if (a_read, b_read)[k])
                 for k in (0, 1)]  # fmt: skip
        gold = " → ".join(f"{100 * r / questions:.1f}" for r in reads) if questions else "–"
        diff, low, high = paired_interval(
            paired["a_only"],
            paired["b_only"],
            pairing_questions(paired, dataset, row, seed, budgets[0]) or questions,
        )
        table.append([ROWS[row][0], budgets[0].settings, seed,
                      f"{100 * a:.1f} → {100 * b:.1f}", f"{diff:+.1f} [{low:+.1f}, {high:+.1f}]",
                      f"{paired['p']:.2f}", gold, train])  # fmt: skip
    budget = budgets[0]
    print(f"{caption}; {budget.train_questions or 'all'} train questions x {budget.epochs} "
          "epoch(s), the same seed; paired 95 % interval and exact McNemar p over dev questions; "
          "gold read: % of questions whose answer choice read a gold fact; train acc: accuracy on "
          "the training questions over the last epoch (dropout on), whether the reader learned "
          "at all")  # fmt: skip
    header = ["row", "settings", "seed", "accuracy", "difference", "p", "gold read", "train acc"]
    if budgets[0].settings != budgets[1].settings:  # the caption names both
        header, table = header[:1] + header[2:], [r[:1] + r[2:] for r in table]
    print_table(header, table)
    if not table:
        print("(no pair saved yet)")


def best_checkpoint(name: str) -> Path:
    return ROOT / "checkpoints" / "bench" / name / "best.ckpt"


def saved_pairing(
    base: dict,
    dataset: str,
    seed: int,
    budget: argparse.Namespace,
    rows: tuple[str, str] = ("iterative", "cgr"),
    refresh: bool = False,
) -> dict | None:
    """Two rows on one seed, question by question, from the saved result: the pairing needs
    both runs' dev predictions (under checkpoints/bench), which a fresh clone does not have, so
    it is saved the first time they are here and the table prints the saved one."""
    names = [tag(dataset, row, seed, budget) for row in rows]
    saved_name = f"cgr_ablations_paired-{names[1]}"  # iterative vs CGR, the first pairing saved
    if rows != ("iterative", "cgr"):
        saved_name += f"-vs-{rows[0]}"
    return saved_or_paired(base, saved_name, *names, refresh)


def saved_or_paired(
    base: dict, saved_name: str, first: str, second: str, refresh: bool
) -> dict | None:
    """Two saved runs paired question by question: the saved pairing, else counted from their
    predictions and saved (None until both runs are saved)."""
    if not (load_result(first) and load_result(second)):
        return None
    if (saved := load_result(saved_name)) is not None and not refresh:
        return saved
    if not (paired := paired_counts(base, first, second)):
        return saved
    paired["by_gold"] = [[*key, *counts] for key, counts in sorted(paired["by_gold"].items())]
    save_result(saved_name, {"a": first, "b": second, **paired})
    return paired


if __name__ == "__main__":
    main()
