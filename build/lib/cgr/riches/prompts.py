"""Few-shot prompts in the paper's format (Appendix A.1): per example a question, then
"passage:" with keyword thoughts and quoted keys, then "answer:". Our demonstrations
(data/riches/demos.json) are written for this project about an invented town, so no
benchmark text leaks into them. `keywords: false` drops the keyword thoughts (Table 6)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cgr.data import jsonio
from cgr.data.loaders import require_file

_KEYWORD = re.compile(r"keyword: [^«]*?(?=«)")


@dataclass
class RichesPrompt:
    instruction: str
    examples: list[dict]
    keywords: bool = True

    @classmethod
    def from_file(
        cls, path: str | Path, hops: str = "multi_hop", keywords: bool = True
    ) -> RichesPrompt:
        data = jsonio.loads(require_file(path, "riches demonstrations").read_text(encoding="utf-8"))
        if hops not in data:
            raise ValueError(f"{path}: no {hops!r} demonstrations (has {sorted(data)})")
        instruction = data["instruction"] if keywords else data["instruction_without_keywords"]
        return cls(instruction, data[hops], keywords)

    def _passage(self, passage: str) -> str:
        return passage if self.keywords else " ".join(_KEYWORD.sub("", passage).split())

    def build(self, question: str) -> str:
        shots = "".join(
            f"question: {e['question']}\npassage: {self._passage(e['passage'])} answer: {e['answer']}\n\n"
            for e in self.examples
        )
        return f"{self.instruction}\n\n{shots}question: {question}\npassage:"


def parse_decode(
    text: str, open_marker: str = "«", close_marker: str = "»"
) -> tuple[list[str], str]:
    """(the keys decoded, the answer) from a decode's text."""
    keys = [
        k.strip()
        for k in re.findall(re.escape(open_marker) + r"(.*?)" + re.escape(close_marker), text)
    ]
    match = re.search(r"answer:\s*(.*)", text)
    answer = match.group(1).split("\n")[0].strip().rstrip(".") if match else ""
    return keys, answer
