"""Writes data/quickstart: a science multiple-choice set big enough for the quickstart to show
that training works (a few hundred questions), generated from small tables written here by the
cgr authors (no dataset text). Deterministic: re-running gives the same files.

Each question is answered by one or two facts of the corpus (`gold_facts`); dev questions ask
about the same kinds of things as train but about other items, so a reader has to read the facts,
not remember the answers.

    python3 scripts/make_quickstart_data.py        # rewrites data/quickstart/*
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "quickstart"
LABELS = "ABCD"

TOOLS = {  # tool -> what it measures
    "thermometer": "temperature", "ruler": "length", "balance": "mass", "stopwatch": "time",
    "graduated cylinder": "the volume of a liquid", "barometer": "air pressure",
    "anemometer": "wind speed", "rain gauge": "rainfall", "spring scale": "force",
    "measuring tape": "the distance around a tree", "hand lens": "the small details of a leaf",
    "telescope": "distant planets", "microscope": "cells", "compass": "direction",
}  # fmt: skip
ANIMALS = {
    "mammal": ["whale", "bat", "dolphin", "horse", "rabbit", "elephant", "mouse", "tiger", "cow", "squirrel"],
    "bird": ["eagle", "penguin", "robin", "owl", "parrot", "ostrich", "duck", "sparrow", "hawk", "swan"],
    "fish": ["trout", "salmon", "shark", "goldfish", "tuna", "cod", "catfish", "eel"],
    "reptile": ["snake", "lizard", "turtle", "crocodile", "iguana", "gecko", "alligator"],
    "amphibian": ["frog", "toad", "salamander", "newt"],
    "insect": ["ant", "bee", "butterfly", "beetle", "grasshopper", "ladybug", "mosquito", "moth"],
}  # fmt: skip
CLASS_FACTS = {
    "mammal": "a mammal feeds its young with milk", "bird": "a bird has feathers and lays eggs",
    "fish": "a fish breathes with gills", "reptile": "a reptile has dry scaly skin",
    "amphibian": "an amphibian lives part of its life in water and part on land",
    "insect": "an insect has six legs",
}  # fmt: skip
METALS = ["copper", "iron", "aluminum", "silver", "steel", "gold", "tin", "brass"]
NON_METALS = ["rubber", "plastic", "wood", "glass", "cotton", "paper", "wool", "clay", "cardboard"]
MAGNETIC = ["an iron nail", "a steel paper clip", "a steel spoon", "an iron key", "a nickel ring"]
NOT_MAGNETIC = ["a wooden block", "a plastic cup", "a glass marble", "a rubber band", "a paper towel",
                "a copper penny", "an aluminum can", "a cotton ball"]  # fmt: skip
RENEWABLE = [
    "wind",
    "sunlight",
    "flowing water",
    "geothermal heat",
    "ocean tides",
    "wood from a managed forest",
]
NONRENEWABLE = ["coal", "oil", "natural gas", "gasoline", "uranium"]
HABITATS = {  # animal -> habitat
    "camel": "desert", "polar bear": "Arctic", "clownfish": "coral reef", "monkey": "rainforest",
    "penguin": "Antarctic", "scorpion": "desert", "beaver": "river", "octopus": "ocean",
    "bison": "grassland", "walrus": "Arctic", "jaguar": "rainforest", "zebra": "grassland",
    "seal": "ocean", "mountain goat": "mountain",
}  # fmt: skip
HABITAT_FACTS = {
    "desert": "a desert is a hot and dry place", "Arctic": "the Arctic is a very cold place",
    "coral reef": "a coral reef is in warm shallow ocean water", "rainforest": "a rainforest is hot and wet",
    "Antarctic": "the Antarctic is covered in ice", "river": "a river is fresh water that flows",
    "ocean": "the ocean is salt water", "grassland": "a grassland is a flat land covered in grass",
    "mountain": "a mountain is high and steep",
}  # fmt: skip
ORGANS = {  # organ -> job
    "heart": "pumps blood through the body", "lungs": "take in oxygen from the air",
    "stomach": "breaks down food", "brain": "controls the body", "skeleton": "supports the body",
    "skin": "protects the inside of the body", "kidneys": "clean waste from the blood",
    "muscles": "move the bones", "eyes": "sense light", "ears": "sense sound",
}  # fmt: skip
PLANT_PARTS = {
    "roots": "take in water from the soil", "leaves": "make food for the plant using sunlight",
    "stem": "carries water from the roots to the leaves", "flowers": "make seeds",
    "seeds": "grow into new plants", "fruit": "protects the seeds",
}  # fmt: skip
CHANGES = {  # change -> (from, to)
    "melting": ("a solid", "a liquid"), "freezing": ("a liquid", "a solid"),
    "evaporation": ("a liquid", "a gas"), "condensation": ("a gas", "a liquid"),
}  # fmt: skip
CHANGE_EXAMPLES = {
    "melting": ["an ice cube left in the sun", "butter in a hot pan", "a snowman on a warm day",
                "chocolate in a warm hand"],
    "freezing": ["water put in a freezer", "a puddle on a winter night", "juice in an ice tray",
                 "a pond in January"],
    "evaporation": ["a puddle drying in the sun", "wet clothes drying on a line", "water boiling away in a pot",
                    "sweat drying on skin"],
    "condensation": ["drops on a cold glass of water", "fog on a bathroom mirror", "dew on grass in the morning",
                     "drops inside a car window on a cold day"],
}  # fmt: skip


def a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def question(
    qid: str, stem: str, answer: str, distractors: list[str], gold: list[str], rng
) -> dict:
    choices = [answer, *distractors[:3]]
    rng.shuffle(choices)
    return {"id": qid, "question": {"stem": stem, "choices": [{"text": c, "label": LABELS[i]}
            for i, c in enumerate(choices)]}, "answerKey": LABELS[choices.index(answer)], "gold_facts": gold}  # fmt: skip


def others(pool: list[str], exclude: str, rng, n: int = 3) -> list[str]:
    return rng.sample([p for p in pool if p != exclude], n)


def generate(rng: random.Random) -> tuple[list[tuple[str, dict]], list[str], list[str]]:
    """(kind, question) pairs; the open book (core science facts) and the corpus facts."""
    qs: list[tuple[str, dict]] = []
    book: list[str] = []
    corpus: list[str] = []
    n = iter(range(1, 10_000))

    def add(kind, stem, answer, distractors, gold):
        qs.append((kind, question(f"q-{next(n):03d}", stem, answer, distractors, gold, rng)))

    for tool, what in TOOLS.items():
        fact = f"a {tool} is used to measure {what}" if tool not in {"hand lens", "telescope", "microscope", "compass"} \
            else {"hand lens": f"a hand lens is used to see {what}", "telescope": f"a telescope is used to see {what}",
                  "microscope": f"a microscope is used to see {what}", "compass": f"a compass is used to find {what}"}[tool]  # fmt: skip
        book.append(fact)
        verb = (
            "find"
            if tool == "compass"
            else ("see" if tool in {"hand lens", "telescope", "microscope"} else "measure")
        )
        add(
            "tools",
            f"Which tool should a student use to {verb} {what}?",
            a(tool),
            [a(t) for t in others(list(TOOLS), tool, rng)],
            [fact],
        )
        uses = {t: w for t, w in TOOLS.items() if t != tool}
        add(
            "tools",
            f"What is {a(tool)} used for?",
            f"to {verb} {what}",
            [
                f"to {'find' if t == 'compass' else ('see' if t in {'hand lens', 'telescope', 'microscope'} else 'measure')} {w}"
                for t, w in rng.sample(sorted(uses.items()), 3)
            ],
            [fact],
        )
    for cls, members in ANIMALS.items():
        book.append(CLASS_FACTS[cls])
        rest = [m for c, ms in ANIMALS.items() if c != cls for m in ms]
        for animal in members:
            fact = f"{a(animal)} is {a(cls)}"
            corpus.append(fact)
            add(
                "animals",
                f"Which of these animals is {a(cls)}?",
                a(animal),
                [a(m) for m in rng.sample(rest, 3)],
                [fact],
            )
            add(
                "animals",
                f"What kind of animal is {a(animal)}?",
                a(cls),
                [a(c) for c in others(list(ANIMALS), cls, rng)],
                [fact, CLASS_FACTS[cls]],
            )
    book.append("metal conducts electricity")
    book.append("a magnet attracts objects made of iron or steel")
    for metal in METALS:
        fact = f"{metal} is a metal"
        corpus.append(fact)
        add(
            "materials",
            "Which material would best carry electricity in a wire?",
            metal,
            rng.sample(NON_METALS, 3),
            ["metal conducts electricity", fact],
        )
        add(
            "materials",
            "Which of these materials is a metal?",
            metal,
            rng.sample(NON_METALS, 3),
            [fact],
        )
    for thing in MAGNETIC:
        metal = "iron" if "iron" in thing else ("nickel" if "nickel" in thing else "steel")
        fact = f"{thing} is made of {metal}"
        corpus.append(fact)
        add(
            "magnets",
            "Which object would a magnet pick up?",
            thing,
            rng.sample(NOT_MAGNETIC, 3),
            ["a magnet attracts objects made of iron or steel", fact],
        )
    for thing in NOT_MAGNETIC:
        corpus.append(f"{thing} is not attracted by a magnet")
    book.append("a renewable resource can be replaced by nature in a short time")
    for source in RENEWABLE:
        fact = f"{source} is a renewable resource"
        corpus.append(fact)
        add(
            "energy",
            "Which of these is a renewable energy source?",
            source,
            rng.sample(NONRENEWABLE, 3),
            [fact],
        )
    for source in NONRENEWABLE:
        fact = f"{source} is a nonrenewable resource"
        corpus.append(fact)
        add(
            "energy",
            "Which of these energy sources will run out one day?",
            source,
            rng.sample(RENEWABLE, 3),
            [fact],
        )
    for animal, habitat in HABITATS.items():
        fact = f"a {animal} lives in the {habitat}"
        corpus.append(fact)
        places = sorted({h for h in HABITATS.values() if h != habitat})
        add(
            "habitats",
            f"Where does {a(animal)} live?",
            f"the {habitat}",
            [f"the {p}" for p in rng.sample(places, 3)],
            [fact, HABITAT_FACTS[habitat]],
        )
        elsewhere = [x for x, h in HABITATS.items() if h != habitat]
        add(
            "habitats",
            f"Which animal lives in the {habitat}?",
            a(animal),
            [a(x) for x in rng.sample(elsewhere, 3)],
            [fact],
        )
    corpus.extend(HABITAT_FACTS.values())
    for organ, job in ORGANS.items():
        verb = "is" if organ not in {"lungs", "kidneys", "muscles", "eyes", "ears"} else "are"
        fact = f"the {organ} {job}"
        book.append(fact)
        add(
            "body",
            f"Which part of the body {job}?",
            f"the {organ}",
            [f"the {o}" for o in others(list(ORGANS), organ, rng)],
            [fact],
        )
        add(
            "body",
            f"What do the {organ} do?" if verb == "are" else f"What does the {organ} do?",
            job,
            [ORGANS[o] for o in others(list(ORGANS), organ, rng)],
            [fact],
        )
        corpus.append(f"the {organ} {verb} part of the human body")
    for part, job in PLANT_PARTS.items():
        fact = f"the {part} of a plant {job}"
        book.append(fact)
        add(
            "plants",
            f"Which part of a plant {job.replace('the plant', 'it')}?",
            f"the {part}",
            [f"the {p}" for p in others(list(PLANT_PARTS), part, rng)],
            [fact],
        )
        add(
            "plants",
            f"What job do the {part} of a plant have?",
            f"they {job}",
            [f"they {PLANT_PARTS[p]}" for p in others(list(PLANT_PARTS), part, rng)],
            [fact],
        )
    for change, (start, end) in CHANGES.items():
        fact = f"{change} changes {start} into {end}"
        book.append(fact)
        add(
            "changes",
            f"Which change turns {start} into {end}?",
            change,
            others(list(CHANGES), change, rng),
            [fact],
        )
        for example in CHANGE_EXAMPLES[change]:
            detail = f"{example} is an example of {change}"
            corpus.append(detail)
            add(
                "changes",
                f"What is happening to {example}?",
                change,
                others(list(CHANGES), change, rng),
                [detail, fact],
            )
    return qs, book, corpus


def main() -> None:
    rng = random.Random(2026)
    qs, book, corpus = generate(rng)
    rng.shuffle(qs)
    dev_ids = set()
    by_kind: dict[str, list[dict]] = {}
    for kind, q in qs:
        by_kind.setdefault(kind, []).append(q)
    for items in by_kind.values():  # a quarter of every kind is dev
        dev_ids.update(q["id"] for q in items[: max(1, len(items) // 4)])
    OUT.mkdir(parents=True, exist_ok=True)
    train = [q for _, q in qs if q["id"] not in dev_ids]
    dev = [q for _, q in qs if q["id"] in dev_ids]
    for name, rows in (("train", train), ("dev", dev)):
        (OUT / f"{name}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in sorted(rows, key=lambda r: r["id"]))
        )
    (OUT / "openbook.txt").write_text("".join(f'"{f}"\n' for f in dict.fromkeys(book)))
    (OUT / "facts.txt").write_text("".join(f"{f}\n" for f in dict.fromkeys(corpus)))
    print(f"{len(train)} train, {len(dev)} dev questions; {len(set(book))} open-book facts, "
          f"{len(set(corpus))} corpus facts -> {OUT}")  # fmt: skip


if __name__ == "__main__":
    main()
