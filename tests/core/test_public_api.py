import toolscout


def test_public_api_is_pinned() -> None:
    assert sorted(toolscout.__all__) == [
        "CatalogFile",
        "ConfigError",
        "EmbedError",
        "Engine",
        "EnrichError",
        "Filters",
        "IndexReport",
        "IngestError",
        "ItemType",
        "QueryError",
        "SearchMode",
        "SearchRequest",
        "SearchResult",
        "Settings",
        "Skill",
        "SkillError",
        "SkillMatch",
        "StoreError",
        "Strategy",
        "Tool",
        "ToolHit",
        "ToolNotFound",
        "ToolscoutError",
        "__version__",
        "load_catalog",
        "load_settings",
        "open_store",
    ]
    for name in toolscout.__all__:
        assert getattr(toolscout, name) is not None


def test_every_error_derives_from_the_root() -> None:
    for name in toolscout.__all__:
        obj = getattr(toolscout, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, toolscout.ToolscoutError)
