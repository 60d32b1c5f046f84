"""The input limits (cgr.data.limits) as each entry point applies them, without a model: the
question-file loader, `make_question` (the Python API and `cgr explain`), and `cgr serve`'s
422 / 413 answers, which name the field and the limit and never send the input back."""

import json

import pytest
from fastapi.testclient import TestClient

from cgr.api import make_question
from cgr.data.limits import MAX_CHOICE_CHARS, MAX_QUESTION_CHARS, question_problem
from cgr.data.loaders import parse_multiple_choice
from cgr.errors import ConfigError, DataFormatError
from cgr.serving.server import create_app


class NeverCalled:
    def predict_questions(self, questions):
        raise AssertionError("a refused request reached the model")


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(NeverCalled(), max_body_bytes=100_000)) as c:
        yield c


@pytest.mark.parametrize(
    ("question", "choices", "expected"),
    [
        ("Why?", ["a", "b"], None),
        ("", ["a", "b"], ("question", "is empty")),
        ("x" * (MAX_QUESTION_CHARS + 1), ["a", "b"], ("question", "has 20,001 characters (at most 20,000)")),
        ("Why?", "ab", ("choices", "must be a list of texts, not str")),
        ("Why?", ["a"] * 30, ("choices", "has 30 choices (from 2 to 8)")),
        ("Why?", ["a", 7], ("choices[1]", "must be text, not int")),
        ("Why?", ["a", " "], ("choices[1]", "is empty")),
        ("Why?", ["a", "b" * (MAX_CHOICE_CHARS + 1)], ("choices[1]", "has 5,001 characters (at most 5,000)")),
    ],
)  # fmt: skip
def test_the_same_rule_in_every_entry_point(question, choices, expected, client):
    assert question_problem(question, choices) == expected
    if expected is None:
        return
    field, what = expected
    with pytest.raises(ConfigError, match=rf"^{field.replace('[', '.').replace(']', '.')} "):
        make_question(question, choices)
    status, body = _post(client, {"question": question, "choices": choices})
    assert status == 422
    assert body == {"detail": f"{field} {what}"}  # the field and the limit, not the input


def test_question_files_refuse_an_empty_choice_and_a_choice_count_outside_2_to_8():
    record = {"id": "q1", "question": {"stem": "Which?", "choices": [
        {"label": "A", "text": "coal"}, {"label": "B", "text": "  "}]}, "answerKey": "A"}  # fmt: skip
    with pytest.raises(
        DataFormatError, match=r"f\.jsonl:3: field 'question.choices\[1\].text': is empty"
    ):
        parse_multiple_choice(record, "f.jsonl", 3)
    for n, says in [(0, "0 choices"), (1, "1 choice"), (12, "12 choices"), (50, "50 choices")]:
        record["question"]["choices"] = [{"label": str(i), "text": "x"} for i in range(n)]
        with pytest.raises(DataFormatError, match=rf"choices': has {says} \(from 2 to 8\)$"):
            parse_multiple_choice(record, "f.jsonl", 3)


def test_serve_answers_nan_with_422_not_500(client):
    response = client.post("/api/predict", content=b'{"question": NaN, "choices": ["a", "b"]}',
                           headers={"content-type": "application/json"})  # fmt: skip
    assert response.status_code == 422
    assert response.json() == {"detail": "question must be text, not float"}


def test_serve_names_the_field_of_a_malformed_body_without_echoing_it(client):
    response = client.post("/api/predict", json={"choices": ["a", "b"], "x": "secret" * 100})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "question"]
    assert "secret" not in response.text
    response = client.post(
        "/api/predict", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422 and "JSON decode error" in response.text


def test_serve_refuses_a_large_body_before_parsing_it(client):
    big = json.dumps({"question": "Why?", "choices": ["a", "b"], "x": "y" * 200_000})
    response = client.post(
        "/api/predict", content=big, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json() == {"detail": "request body over 100,000 bytes (--max-body-bytes)"}

    def chunks():  # no Content-Length: counted while it is read
        for _ in range(30):
            yield b"y" * 10_000

    response = client.post(
        "/api/predict", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b'{"question": "Why \xff?", "choices": ["a", "b"]}', "request body is not UTF-8 (byte 18)"),
        (b"[" * 40_000 + b"]" * 40_000, "request body nests JSON 40,000 deep (at most 32)"),
        (b'{"question": "Why?", "choices": ["a", "b"], "x": ' + b'{"a": ' * 5_000 + b"1"
         + b"}" * 5_001, "request body nests JSON 5,001 deep (at most 32)"),
    ],
)  # fmt: skip
def test_serve_refuses_non_utf8_and_deep_nesting_before_parsing(client, body, detail):
    response = client.post(
        "/api/predict", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json() == {"detail": detail}


def test_brackets_inside_strings_do_not_count_as_nesting():
    from cgr.serving.server import body_problem

    question = json.dumps({"question": "[[{" * 100 + ' \\" {[', "choices": ["a", "b"]})
    assert body_problem(question.encode()) is None


def _post(client, body):
    response = client.post("/api/predict", json=body)
    return response.status_code, response.json()


def test_serve_refuses_a_port_in_use_before_loading_the_model(tmp_path, capsys):
    import socket

    from cgr.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        missing = tmp_path / "never-loaded.ckpt"  # the model would fail to load: it is not reached
        assert main(["serve", "--checkpoint", str(missing), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"--port {port}: cannot listen there" in err and "serving" not in err
