"""The packaged SmolLM2 generator: reusing the demonstrations' key-value cache changes nothing
but the time (greedy outputs equal the plain path's, batched or not)."""

import pytest
import torch

from cgr.generation.generator import Generator, _common_length
from tests.ircot.helpers import first_step_prompts

pytestmark = pytest.mark.slow  # real training / model loading; `-m "not slow"` skips


@pytest.fixture(scope="module")
def prompts_and_prefix():
    plain = Generator(max_new_tokens=20, batch_size=3, reuse_prefix_cache=False)
    prompts, prefix = first_step_prompts(plain.count_tokens)
    return plain, prompts, prefix


def test_prefix_cache_gives_the_plain_greedy_output(prompts_and_prefix):
    plain, prompts, prefix = prompts_and_prefix
    expected = [g.text for g in plain.generate(prompts, prefix=prefix)]
    one_by_one = Generator(max_new_tokens=20, batch_size=1)
    batched = Generator(max_new_tokens=20, batch_size=3)
    assert batched.model is plain.model  # loaded once per process
    assert [g.text for g in one_by_one.generate(prompts, prefix=prefix)] == expected
    assert [g.text for g in batched.generate(prompts, prefix=prefix)] == expected
    assert list(batched._prefixes) == [prefix]  # the prefix was encoded once and kept
    assert all(expected)


def test_prompts_without_the_prefix_take_the_plain_path(prompts_and_prefix):
    _, prompts, prefix = prompts_and_prefix
    gen = Generator(max_new_tokens=8, batch_size=2)
    gen.generate(prompts[:1] + ["Q: What is two plus two?\nA:"], prefix=prefix)
    assert gen._prefixes == {}


def test_the_shared_length_leaves_every_prompt_a_token_of_its_own():
    assert _common_length([1, 2, 3], [[1, 2, 3, 4], [1, 2, 3, 5, 6]]) == 3
    assert _common_length([1, 2, 3], [[1, 2, 9, 4], [1, 2, 3, 5]]) == 2  # BPE merged at the end
    assert _common_length([1, 2, 3], [[1, 2, 3]]) == 2
    assert _common_length([1, 2], [[7, 8]]) == 0


def test_a_next_step_starts_from_its_previous_prompt_and_gives_the_plain_output(prompts_and_prefix):
    plain, prompts, prefix = prompts_and_prefix
    # IRCoT's steps: the same question with one more paragraph and the CoT so far
    first = prompts[0]
    second = (
        first.replace("\nQ:", "\nWikipedia Title: Sella\nThe Sella is a river.\n\nQ:", 1)
        + " Tamberg is a city."
    )
    assert second[: first.index("\nQ:")] == first[: first.index("\nQ:")]
    expected = [g.text for g in plain.generate([first, prompts[1], second], prefix=prefix)]
    gen = Generator(max_new_tokens=20, batch_size=3, history_cache=4)
    texts = [g.text for g in gen.generate([first, prompts[1]], prefix=prefix)]
    before = gen.encoded_tokens
    texts += [g.text for g in gen.generate([second], prefix=prefix)]
    assert texts == expected
    new_tokens = gen.encoded_tokens - before
    shared = first.index("\nQ:")
    assert 0 < new_tokens < gen.count_tokens(second[shared:]) + 3  # not the paragraphs again
    assert len(gen._history) == 3
    gen.generate(prompts, prefix=prefix)
    assert len(gen._history) == 4  # the oldest dropped


def test_int8_weights_make_linear_layers_quantised_and_give_sentences_the_loop_accepts():
    from tests.ircot.helpers import first_steps_as_sentences

    gen = Generator(max_new_tokens=40, batch_size=1, quantize="int8")
    assert gen.model is not Generator(max_new_tokens=8, batch_size=1).model  # its own copy
    modules = list(gen.model.modules())
    assert not any(isinstance(m, torch.nn.Linear) for m in modules)
    assert (
        sum("quantized.dynamic" in type(m).__module__ for m in modules) >= 30 * 7
    )  # 30 layers x 7
    first_steps_as_sentences(gen, 40)


def test_int8_weights_are_refused_where_dynamic_quantisation_does_not_run():
    with pytest.raises(ValueError, match="quantize must be one of"):
        Generator(quantize="int4")
    with pytest.raises(ValueError, match="needs device cpu and dtype float32"):
        Generator(quantize="int8", dtype="bfloat16")


def test_device_map_auto_loads_through_accelerate_and_gives_the_plain_output(
    prompts_and_prefix, monkeypatch
):
    # on a machine without GPUs transformers' device-map planner (accelerate's memory split, the
    # step that spreads a large model's layers over the GPUs present) puts every layer on the
    # CPU: the multi-GPU code path, checked for the same greedy text as the plain load
    from transformers import modeling_utils

    plans = []
    planner = modeling_utils._get_device_map
    monkeypatch.setattr(modeling_utils, "_get_device_map",
                        lambda *a, **k: plans.append(planner(*a, **k)) or plans[-1])  # fmt: skip
    plain, prompts, _ = prompts_and_prefix
    spread = Generator(max_new_tokens=20, batch_size=3, reuse_prefix_cache=False, device_map="auto")
    assert plans and set(plans[0].values()) == {"cpu"}
    assert spread.device == "cpu"
    expected = [g.text for g in plain.generate(prompts[:3])]
    assert [g.text for g in spread.generate(prompts[:3])] == expected
