"""`cgr riches` end to end on a HotpotQA-format file we wrote: rc 0, the last line, and every
key in predictions.jsonl found verbatim in the corpus; bad settings and data fail in one line."""

import json

import pytest

from cgr.cli import main
from tests.riches.test_index import PARAGRAPHS


def hotpot_file(tmp_path, questions):
    records = [
        {"_id": f"q{n}", "question": q, "answer": a, "supporting_facts": [[sup, 0]],
         "context": [[p.title, [p.text]] for p in PARAGRAPHS]}
        for n, (q, a, sup) in enumerate(questions)
    ]  # fmt: skip
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps(records))
    return path


@pytest.mark.slow
def test_riches_answers_and_every_decoded_key_is_in_the_corpus(tmp_path, capsys):
    data = hotpot_file(tmp_path, [("How long is the Sella river?", "120 km", "Sella"),
                                  ("Which river flows through Tamberg?", "the Sella", "Tamberg")])  # fmt: skip
    out = tmp_path / "out"
    rc = main(["riches", "--config", "configs/riches_hotpotqa.yaml", "--data", str(data), "--out", str(out),
               "--decode.beam_size", "3", "--decode.max_new_tokens", "80"])  # fmt: skip
    assert rc == 0
    last = capsys.readouterr().out.strip().splitlines()[-1].split()
    assert last[0::2] == ["em:", "f1:", "hits:"]
    corpus_text = " ".join(p.text for p in PARAGRAPHS)
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for record in records:
        for key in record["keys"]:
            assert key["text"] in corpus_text and key["titles"]
            assert f"« {key['text']}" in record["decode"] or f"«{key['text']}" in record["decode"]


def test_bad_settings_and_empty_contexts_are_one_line_errors(tmp_path, capsys):
    data = hotpot_file(tmp_path, [("Q?", "A", "Sella")])
    base = [
        "riches",
        "--config",
        "configs/riches_hotpotqa.yaml",
        "--data",
        str(data),
        "--out",
        str(tmp_path / "o"),
    ]
    assert main([*base, "--riches.index", "trie", "--riches.substrings", "true"]) == 2
    assert "riches.substrings needs riches.index fm" in capsys.readouterr().err
    assert main([*base, "--decode.beam_size", "0"]) == 2
    assert "decode.beam_size" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text(
        json.dumps([{"_id": "x", "question": "Q?", "answer": "A", "context": [["T", [""]]]}])
    )
    assert main([*base[:4], str(empty), *base[5:]]) == 2
    assert "no paragraph text" in capsys.readouterr().err


@pytest.mark.slow
def test_odd_scripts_and_keys_longer_than_allowed_are_counted_not_fatal(tmp_path, capsys):
    # a question the tokenizer splits into many byte pieces, and a key cap that drops long sentences
    data = hotpot_file(tmp_path, [("セラ川の長さは？ แม่น้ำเซลลายาวเท่าไร", "120 km", "Sella")])
    out = tmp_path / "odd"
    rc = main(["riches", "--config", "configs/riches_hotpotqa.yaml", "--data", str(data), "--out", str(out),
               "--riches.max_key_tokens", "8", "--decode.max_new_tokens", "48"])  # fmt: skip
    assert rc == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["keys_too_long"] > 0 and metrics["keys"] > 0
    from cgr.generation.generator import _load, resolve_generator
    from cgr.riches.keys import build_keys

    tokenizer = _load(*resolve_generator("smollm2", None), "cpu")[0]  # loaded by the run above
    indexed = {k.text for k in build_keys(PARAGRAPHS)
               if len(tokenizer(k.text, add_special_tokens=False).input_ids) <= 8}  # fmt: skip
    record = json.loads((out / "predictions.jsonl").read_text())
    assert all(key["text"] in indexed for key in record["keys"])  # only keys that were indexed
