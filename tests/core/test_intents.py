"""Splitting a request into the intents that each need their own tool."""

import pytest

from toolscout.search.intents import MAX_INTENTS, split_intents


@pytest.mark.parametrize(
    ("request_text", "intents"),
    [
        (
            "book a meeting with Ana on Friday and email her the agenda",
            ["book a meeting with Ana on Friday", "email her the agenda"],
        ),
        (
            "read config.yaml, fix the port number and save the file",
            ["read config.yaml", "fix the port number", "save the file"],
        ),
        (
            "what's the weather in Lisbon tomorrow and how do I drive there from Porto",
            ["what's the weather in Lisbon tomorrow", "how do I drive there from Porto"],
        ),
        (
            "I need the weather in Paris. Also, book a hotel there",
            ["I need the weather in Paris", "Also, book a hotel there"],
        ),
    ],
)
def test_a_conjunction_before_a_new_request_starts_a_new_intent(
    request_text: str, intents: list[str]
) -> None:
    assert split_intents(request_text) == intents


def test_a_second_object_borrows_the_verb_of_its_sentence() -> None:
    assert split_intents("check the air quality in Delhi and any severe weather warnings") == [
        "check the air quality in Delhi",
        "check any severe weather warnings",
    ]


@pytest.mark.parametrize(
    "request_text",
    [
        "search for cats and dogs",
        "find EV charging stations near Lyon and places to park",
        "compare the price of the iPhone and the Pixel",
        "how much is one Tesla share worth at the moment",
        "rock and roll",
    ],
)
def test_a_single_request_stays_whole(request_text: str) -> None:
    assert split_intents(request_text) == [request_text]


def test_a_long_list_of_requests_is_capped() -> None:
    text = ", ".join(f"send message number {i}" for i in range(MAX_INTENTS + 3))
    parts = split_intents(text)
    assert len(parts) == MAX_INTENTS
    assert parts[-1].endswith(f"number {MAX_INTENTS + 2}")
