"""Question shapes like those of OpenBookQA and ARC (written for these tests)."""

import pytest

CASES = [
    # wh-subject, "which of the following", negation
    (
        "Which of the following materials is a good conductor of electricity?",
        "copper",
        "Copper is a good conductor of electricity.",
    ),
    ("Which animal lays eggs?", "a chicken", "A chicken lays eggs."),
    ("Which of these is NOT a mammal?", "a shark", "A shark is NOT a mammal."),
    (
        "Which is an example of a chemical change?",
        "rusting iron",
        "Rusting iron is an example of a chemical change.",
    ),
    ("What causes the tides?", "the moon", "The moon causes the tides."),
    ("Who discovered gravity?", "Isaac Newton", "Isaac Newton discovered gravity."),
    (
        "Which tool would best measure the length of a pencil?",
        "a ruler",
        "A ruler would best measure the length of a pencil.",
    ),
    (
        "Which property of a mineral can be determined just by looking at it?",
        "luster",
        "Luster can be determined just by looking at it.",
    ),
    # wh-object with do-support, modals and copulas
    ("What do plants need to grow?", "Sunlight", "Plants do need sunlight to grow."),
    (
        "What can a student use to measure mass?",
        "a balance",
        "A student can use a balance to measure mass.",
    ),
    ("What is the color of the sky?", "blue", "The color of the sky is blue."),
    (
        "What is the main job of the heart?",
        "pumping blood",
        "The main job of the heart is pumping blood.",
    ),
    (
        "What is the boiling point of water?",
        "100 degrees Celsius",
        "The boiling point of water is 100 degrees Celsius.",
    ),
    ("What is a desk made of?", "wood", "A desk is made of wood."),
    ("Which organ do humans use to breathe?", "lungs", "Humans do use lungs to breathe."),
    (
        "What should a student do to stay safe in a lab?",
        "wear goggles",
        "A student should wear goggles to stay safe in a lab.",
    ),
    ("What type of energy does a battery store?", "chemical", None),
    # how many / how much
    ("How many legs does a spider have?", "eight", "A spider does have eight legs."),
    ("How much water does a cactus need?", "very little", "A cactus does need very little water."),
    # where / why / how / when
    (
        "Where would you find a polar bear?",
        "the Arctic",
        "You would find a polar bear in the Arctic.",
    ),
    ("Where do fish live?", "in water", None),
    (
        "Why do leaves change color in fall?",
        "they stop making chlorophyll",
        "Leaves do change color in fall because they stop making chlorophyll.",
    ),
    ("How do plants make food?", "photosynthesis", "Plants do make food by photosynthesis."),
    # wh in situ
    ("A desk is made of what?", "wood", "A desk is made of wood."),
    ("Sound is a kind of what?", "vibration", "Sound is a kind of vibration."),
    # fill-in-the-blank stems, with and without a blank
    (
        "The sun is responsible for",
        "plants sprouting, blooming and wilting",
        "The sun is responsible for plants sprouting, blooming and wilting.",
    ),
    ("Mercury is the closest planet to", "the sun", "Mercury is the closest planet to the sun."),
    (
        "An example of a renewable resource is",
        "wind",
        "An example of a renewable resource is wind.",
    ),
    ("Frogs lay eggs in ____.", "water", "Frogs lay eggs in water."),
    ("An owl is a predator because it", "eats mice", "An owl is a predator because it eats mice."),
    (
        "A bear sleeps through most of the winter. This is called",
        "hibernation",
        "A bear sleeps through most of the winter. This is called hibernation.",
    ),
    # context sentences kept, happen-questions become the answer clause
    (
        "A student puts ice in a cup. What will happen to the ice?",
        "It will melt.",
        "A student puts ice in a cup. It will melt.",
    ),
    ("What happens when water freezes?", "it expands", "When water freezes, it expands."),
    ("A student wants to find the mass of a rock. Which tool should she use?", "a balance", None),
]


@pytest.mark.parametrize("stem, answer, expected", CASES)
def test_question_shapes(hypothesis_generator, stem, answer, expected):
    hypothesis = hypothesis_generator.generate(stem, [answer])[0]
    if expected is not None:
        assert hypothesis == expected
    # every hypothesis is one declarative sentence that keeps the answer's words
    assert hypothesis.endswith(".") and "?" not in hypothesis
    assert answer.lower().rstrip(".") in hypothesis.lower()


def test_kind_of_keeps_the_noun(hypothesis_generator):
    h = hypothesis_generator.generate("What type of energy does a battery store?", ["chemical"])[0]
    assert "chemical energy" in h and "battery" in h


def test_context_sentence_is_kept(hypothesis_generator):
    h = hypothesis_generator.generate(
        "A student wants to find the mass of a rock. Which tool should she use?", ["a balance"]
    )[0]
    assert h.startswith("A student wants to find the mass of a rock.") and h.endswith(
        "She should use a balance."
    )


def test_unconvertible_question_falls_back_to_question_plus_answer(hypothesis_generator):
    stem = "Whose theory explains evolution?"
    assert hypothesis_generator.generate(stem, ["Darwin"])[0] == f"{stem} Darwin"


def test_many_questions_at_once_match_one_by_one(hypothesis_generator):
    items = [(s, [a, "something else"]) for s, a, _ in CASES[:6]]
    together = hypothesis_generator.generate_many(items)
    assert together == [hypothesis_generator.generate(s, a) for s, a in items]
    assert all(len(h) == 2 for h in together)


@pytest.mark.parametrize(("stem", "answer", "expected"), [
    # the seam between stem and answer: "used for" + "to ..." and a repeated preposition
    ("What is a ruler used for?", "to measure length", "A ruler is used to measure length."),
    ("A sponge can be used for", "to soak up water", "A sponge can be used to soak up water."),
    ("How does a plant get water?", "by pulling it up through its roots",
     "A plant does get water by pulling it up through its roots."),
    ("A window pane is made of", "of glass", "A window pane is made of glass."),
    ("What is a ruler used for?", "measuring length", "A ruler is used for measuring length."),
])  # fmt: skip
def test_stem_and_answer_meet_without_a_doubled_word(hypothesis_generator, stem, answer, expected):
    assert hypothesis_generator.generate(stem, [answer]) == [expected]


def test_the_seam_repair_can_be_switched_off_to_measure_it():
    from cgr.data.hypothesis import HypothesisGenerator

    raw = HypothesisGenerator(repair_joins=False)
    assert raw.generate("What is a ruler used for?", ["to measure length"]) == [
        "A ruler is used for to measure length."
    ]


def test_hypotheses_from_a_child_process_equal_this_process(hypothesis_generator):
    """`cgr explain` writes its hypotheses in a child while the models load; other items (or a
    child that fails) are written here, so the result never depends on the child."""
    from cgr.data.hypothesis import HypothesesInChild

    items = [(question, [answer, "a rock"]) for question, answer, _ in CASES[:3]]
    expected = hypothesis_generator.generate_many(items)
    assert HypothesesInChild(items).generate_many(items) == expected
    assert HypothesesInChild(items[:1]).generate_many(items) == expected  # not what it was given
    broken = HypothesesInChild(items)
    broken._child.kill()
    assert broken.generate_many(items) == expected
