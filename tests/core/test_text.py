from toolscout.search.text import (
    analyze,
    identifier_key,
    name_tokens,
    query_tokens,
    split_identifier,
)


def test_identifiers_split_on_snake_camel_kebab_and_digits() -> None:
    assert split_identifier("github_create_issue") == ["github", "create", "issue"]
    assert split_identifier("getUserID") == ["get", "user", "id"]
    assert split_identifier("list-s3-buckets") == ["list", "s3", "buckets"]
    assert split_identifier("HTTPServer2Go") == ["http", "server2", "go"]


def test_analysis_stems_and_drops_stopwords() -> None:
    assert analyze("Creating the issues for a repository") == ["creat", "issu", "repositori"]


def test_chinese_text_becomes_character_bigrams() -> None:
    assert analyze("搜索结果") == ["搜索", "索结", "结果"]


def test_fts_syntax_in_a_query_is_just_words() -> None:
    tokens = query_tokens('"NEAR(a b)" * -x OR DROP TABLE tools; -- \'')
    assert all(t.isalnum() for t in tokens)
    assert "near" in tokens and "drop" in tokens


def test_exact_name_token_matches_any_spelling() -> None:
    assert identifier_key("create-issue") == identifier_key("createIssue") == "createissue"
    assert "xcreateissue" in name_tokens("create_issue")
    assert "xcreateissue" in query_tokens("createIssue")
    assert not any(t.startswith("x") for t in query_tokens("create an issue"))
