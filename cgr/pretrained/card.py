"""The model card (README.md) `cgr export` writes: what the model is, what it was trained on
and with which settings, how well it did on dev (the run's own metric), how to load it, and
its license and papers. Written from the checkpoint's stored settings only."""

from __future__ import annotations

import json

PAPER = ("*Chain Guided Retriever-reader (CGR) for multi-hop science question answering* "
         "(authors' code: github.com/wwxu21/CGR)")  # fmt: skip


def _settings_table(data: dict) -> list[str]:
    retrieval, chains = data.get("retrieval", {}), data.get("chains", {})
    rows = [
        ("retrieval", f"{retrieval.get('method')}, encoder {retrieval.get('encoder')}, "
                      f"K={retrieval.get('beam_size')}, T={retrieval.get('steps')}"),
        ("corpus", ", ".join(retrieval.get("corpus") or []) or "–"),
        ("open book", f"{retrieval.get('open_book') or '–'} (k={retrieval.get('open_book_k')})"),
        ("chains", "on (the reader reads Ê)" if chains.get("enabled") else "off (the plain pool)"),
        ("facts read per choice", str(data.get("max_evidence"))),
    ]  # fmt: skip
    return ["| setting | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]


def model_card(config: dict, opened) -> str:
    training = config["training"]
    model = training["model"]
    acc = training["dev_metrics"].get("val/acc")
    accuracy = f"{100 * acc:.1f} %" if acc is not None else "not recorded"
    cgr = config["module"] == "CGRModule"
    kind = ("CGR: a multiple-choice reader and the query encoder trained with it by the "
            "chain-aware losses" if cgr else "a multiple-choice reader over retrieved facts")  # fmt: skip
    questions = training.get("max_train_questions") or "all"
    encoder_line = (
        f"- `query_encoder/`: the query encoder evidence is retrieved with ({config['query_encoder']['from']}), "
        "a sentence-transformers folder" if config.get("query_encoder") else ""
    )  # fmt: skip
    lines = [
        "---",
        "library_name: cgr",
        "license: apache-2.0",
        "tags: [multiple-choice, question-answering, retrieval, reasoning-chains, cgr]",
        "---",
        "",
        f"# {opened.path.parent.name or 'cgr'} — {kind}",
        "",
        f"Exported by `cgr export` from the training checkpoint `{opened.path.name}`. The reader scores each answer choice",
        "from the facts retrieved for it (and, with chains on, the facts of the reasoning",
        "chains found between question and choice); `cgr explain` shows those chains.",
        "",
        "## Files",
        "",
        f"- `reader/`: `{model.get('reader_model')}` fine-tuned as `AutoModelForMultipleChoice`"
        f" (max length {config['reader']['max_length']}), safetensors, {config['dtype']}",
        *([encoder_line] if encoder_line else []),
        "- `corpus/`: the facts it retrieves from (when copied in)",
        *(
            [
                "- `chain_ranker/`: the chain ranker (`cgr ranker`) the chains are ranked by, "
                "a sentence-transformers folder"
            ]
            if (config["data"].get("chains") or {}).get("rank_encoder") == "chain_ranker"
            else []
        ),
        "- `cgr_config.json`: retrieval, chain and evidence settings prediction needs",
        "",
        "## Training",
        "",
        f"- train file: `{training.get('train_file')}` ({questions} questions), "
        f"{training['epochs_completed']} epoch(s), {training['global_step']} steps",
        f"- dev file: `{training.get('dev_file')}`; dev accuracy when saved: **{accuracy}**",
        f"- learning rate {model.get('lr')}, weight decay {model.get('weight_decay')}, "
        f"warm-up {model.get('warmup_ratio')}",
        "",
        *_settings_table(config["data"]),
        "",
        "## Use",
        "",
        "```bash",
        "cgr eval --model THIS_FOLDER --data questions.jsonl   # OBQA / ARC jsonl",
        'cgr explain --model THIS_FOLDER --question "..." --choices "..." "..."',
        "```",
        "",
        "```python",
        "import cgr",
        'model = cgr.Predictor.from_pretrained("THIS_FOLDER")',
        'model.predict("Which gas do plants take in?", ["oxygen", "carbon dioxide"]).answer',
        "",
        "from transformers import AutoModelForMultipleChoice",
        'reader = AutoModelForMultipleChoice.from_pretrained("THIS_FOLDER/reader")',
        *(
            [
                "from sentence_transformers import SentenceTransformer",
                'query_encoder = SentenceTransformer("THIS_FOLDER/query_encoder")',
            ]
            if config.get("query_encoder")
            else []
        ),  # fmt: skip
        "```",
        "",
        "## License and papers",
        "",
        "The weights: Apache-2.0, as cgr; the base models and the training data keep their own",
        "licenses (the corpus in `corpus/` is the training data's). Please cite:",
        "",
        f"- {PAPER}",
        "",
        "<details><summary>model settings</summary>",
        "",
        "```json",
        json.dumps(model, indent=2, sort_keys=True, default=str),
        "```",
        "</details>",
        "",
    ]
    return "\n".join(lines)
