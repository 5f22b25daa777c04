"""The web console in a real browser: headless Debian Chromium driven by Playwright against the
real server. Each test saves screenshots into test-artifacts/screenshots/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
from playwright.sync_api import expect

from support.console import ADMIN, Served, screenshot, write_reports
from toolscout.skills.classify import ProposedSkill


def _sign_in(page: Any, key: str) -> None:
    page.get_by_label("Admin key").fill(key)
    page.get_by_role("button", name="Unlock").click()


def test_search_shows_the_expected_tool_and_its_evidence(page: Any, served: Served) -> None:
    page.goto(served.url + "/")
    page.get_by_label("Request").fill("send an email to a colleague")
    page.get_by_label("Strategy").select_option("hierarchical")
    page.get_by_role("button", name="Search").click()
    first = page.locator("li.hit").first
    expect(first.locator(".tool-id")).to_have_text("gmail::send_email")
    evidence = first.locator(".evidence")
    lexical = evidence.get_by_role("row", name=re.compile("lexical"))
    vector = evidence.get_by_role("row", name=re.compile("vector"))
    expect(lexical).to_contain_text(re.compile(r"\d+\.\d{3}"))
    expect(vector).to_contain_text(re.compile(r"0\.\d{3}"))
    expect(evidence.locator("mark", has_text="email").first).to_be_visible()
    expect(evidence.locator("a.chip.routed", has_text="email")).to_be_visible()
    screenshot(page, "search")

    # The URL is the search: opening it again (a shared link) shows the same ranking.
    params = parse_qs(urlparse(page.url).query)
    assert params["q"] == ["send an email to a colleague"]
    ranked = page.locator("li.hit .tool-id").all_inner_texts()
    fresh = page.context.new_page()
    fresh.goto(page.url)
    assert fresh.locator("li.hit .tool-id").all_inner_texts() == ranked
    fresh.close()


def test_a_bm25_search_has_no_vector_evidence_for_every_strategy(page: Any, served: Served) -> None:
    page.goto(served.url + "/?q=create+issue&strategy=hierarchical&mode=bm25&limit=3")
    first = page.locator("li.hit").first
    expect(first.locator(".tool-id")).to_have_text("github::create_issue")
    vector = first.locator(".evidence").get_by_role("row", name=re.compile("vector"))
    expect(vector.locator("td").nth(3)).to_have_text("0.00")  # weight of the vector leg


def test_a_bad_search_field_is_named_on_the_page(page: Any, served: Served) -> None:
    response = page.goto(served.url + "/?q=weather&limit=99")
    assert response is not None and response.status == 422
    expect(page.get_by_role("alert")).to_contain_text("limit")


def test_catalog_shows_servers_tools_and_a_schema(page: Any, served: Served) -> None:
    page.goto(served.url + "/catalog")
    page.get_by_role("link", name="github", exact=True).click()
    expect(page.get_by_role("heading", name=re.compile("Tools of github"))).to_be_visible()
    rows = page.locator("#tool-rows tr")
    expect(rows.first).to_contain_text("github::")
    # The live filter hides rows as the user types; the server filter would do the same.
    page.get_by_label("Filter").fill("merge")
    expect(page.locator("#tool-rows tr:visible")).to_have_count(1)
    screenshot(page, "catalog")
    page.get_by_role("link", name="github::merge_pull_request").click()
    tool = served.engine.get_tool("github::merge_pull_request")
    expect(page.locator("code.hash")).to_have_text(tool.content_hash)
    expect(page.locator("pre").first).to_contain_text('"properties"')


def test_approving_a_suggestion_needs_the_key_and_changes_the_catalog(
    page: Any, served: Served
) -> None:
    proposal = ProposedSkill("astronomy", "Astronomy", "Sky charts, planets and telescopes.")
    queued = served.engine.suggestions.propose("weather::forecast", proposal)
    assert queued is not None
    page.goto(served.url + "/skills")
    expect(page.locator("#suggestions")).to_contain_text("unlock with the admin key")
    expect(page.locator("[data-suggestion]")).to_have_count(0)

    # Without the key the write is refused, as on REST.
    refused = page.request.post(f"{served.url}/skills/suggestions/{queued.id}/approve")
    assert refused.status == 401
    _sign_in(page, "not-the-key")
    expect(page.get_by_role("alert")).to_contain_text("admin key")

    page.goto(served.url + "/skills")
    _sign_in(page, ADMIN)
    card = page.locator(f"[data-suggestion='{queued.id}']")
    expect(card).to_contain_text("astronomy")
    screenshot(page, "skills")
    card.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status")).to_contain_text("skill astronomy created")
    expect(page.locator("#skill-table")).to_contain_text("astronomy")
    with httpx.Client(base_url=served.url) as http:
        assert http.get("/api/v1/skills/astronomy").status_code == 200


def test_a_classification_job_runs_to_the_end_with_progress(page: Any, served: Served) -> None:
    page.goto(served.url + "/skills")
    _sign_in(page, ADMIN)
    page.get_by_label("every tool").check()
    page.get_by_role("button", name="Start classification").click()
    job = page.locator("article.job").first
    # The page follows the running job by itself (console.js) until it is done.
    expect(job).to_have_attribute("data-status", "done", timeout=120_000)
    total = served.engine.store.count()
    expect(job).to_contain_text(f"{total} of {total} tools")


def test_evaluation_reports_render_their_plots_side_by_side(
    page: Any, served: Served, tmp_path: Path
) -> None:
    payloads = write_reports(served.engine, Path(served.settings.reports_dir), tmp_path / "set")
    page.goto(served.url + "/evals")
    expect(page.locator(".legend-row")).to_contain_text("bm25 only")
    expect(page.locator(".legend-row")).to_contain_text("hybrid")
    plots = page.locator("svg.plot")
    # hit@k, nDCG@k, both per group, the scores of the first hit and of the first five, two
    # latency histograms.
    expect(plots).to_have_count(8)
    expect(page.locator(".side-by-side figure")).to_have_count(2)
    # Each bar carries its figure: the left report's hit@1 as written in its file.
    hit1 = 100 * payloads[0]["sets"][0]["overall"]["hit@1"]
    title = page.locator("svg.plot").first.locator("rect.s0 title").first
    expect(title).to_have_text(f"bm25 only, @1: {hit1:.1f}%")
    # The reliability diagram of the first hits: a bar per score bin, as the file bins them.
    top1 = payloads[1]["sets"][0]["calibration"]["top1"]
    lo, mean_score, right, hits = top1["bins"][0]
    heading = page.locator("title", has_text="scores of the first hit")
    diagram = page.locator("svg.plot", has=heading)
    expect(diagram.locator("line.diag")).to_have_count(1)
    expect(diagram.locator("rect.s1 title").first).to_have_text(
        f"hybrid, scores {lo:.1f}-{lo + 0.1:.1f}: {hits} hits, mean score {mean_score:.2f}, "
        f"right {100 * right:.0f}%"
    )
    # Beside each error, what exact probabilities would still show on that many hits.
    caption = page.locator("figcaption", has_text="scores of the first hit")
    expect(caption).to_contain_text(f"hybrid ECE {top1['ece']:.3f} (floor {top1['floor']:.3f})")
    screenshot(page, "evals")


def test_status_shows_counts_model_and_request_figures(page: Any, served: Served) -> None:
    with httpx.Client(base_url=served.url) as http:
        assert http.get("/api/v1/search", params={"query": "weather"}).status_code == 200
    page.goto(served.url + "/status")
    total = served.engine.store.count()
    expect(page.locator(".tiles")).to_contain_text(str(total))
    expect(page.locator("#metrics-h + table")).to_contain_text("/api/v1/search")
    expect(page.locator("dl.facts")).to_contain_text("minilm")
    expect(page.locator("dl.facts")).to_contain_text("learned ranker")
    screenshot(page, "status")


def test_api_docs_render_offline_from_the_package(page: Any, served: Served) -> None:
    """/docs is Swagger UI with every asset from this server: no request leaves it."""
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(served.url + "/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("toolscout")
    expect(page.locator(".opblock-summary-path", has_text="/api/v1/search").first).to_be_visible()
    screenshot(page, "api-docs")
    outside = [u for u in requested if not u.startswith((served.url, "data:"))]
    assert requested and not outside, outside
