"""Evaluation report files: written by eval, listed and read back by the console."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscout.eval.reports import (
    ReportNotFound,
    list_reports,
    load_report,
    report_payload,
    write_report,
)
from toolscout.eval.run import Report


def _report(dataset: str = "mini", hit1: float = 0.5) -> Report:
    return Report(
        dataset=dataset,
        mode="hybrid",
        queries=3,
        overall={"hit@1": hit1, "ndcg@10": 0.7},
        groups={"easy": {"hit@1": 1.0}},
        latency_ms={"p50": 2.0},
        latency_samples_ms=[1.5, 2.0, 9.25],
    )


def test_a_written_report_reads_back_with_its_samples(tmp_path: Path) -> None:
    path = write_report(tmp_path, report_payload([_report()], engine={"fusion": "adaptive"}))
    loaded = load_report(tmp_path, path.stem)
    assert loaded.engine == {"fusion": "adaptive"}
    (only,) = loaded.sets
    assert only.overall["hit@1"] == 0.5 and only.groups["easy"]["hit@1"] == 1.0
    assert only.latency_samples_ms == (1.5, 2.0, 9.25)
    assert [r.id for r in list_reports(tmp_path)] == [path.stem]


def test_two_runs_in_the_same_second_get_two_files(tmp_path: Path) -> None:
    payload = report_payload([_report()], engine={})
    first, second = write_report(tmp_path, payload), write_report(tmp_path, payload)
    assert first != second and {first.stem, second.stem} == {r.id for r in list_reports(tmp_path)}


def test_a_report_id_cannot_name_a_file_outside_the_folder(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    write_report(reports, report_payload([_report()], engine={}))
    (tmp_path / "secret.json").write_text(json.dumps({"format": "toolscout-eval/1"}))
    with pytest.raises(ReportNotFound):
        load_report(reports, "../secret")


def test_unreadable_files_are_left_out_of_the_listing(tmp_path: Path) -> None:
    good = write_report(tmp_path, report_payload([_report()], engine={}))
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "other.json").write_text(json.dumps({"format": "something-else"}))
    assert [r.id for r in list_reports(tmp_path)] == [good.stem]
    with pytest.raises(ReportNotFound) as caught:
        load_report(tmp_path, "broken")
    assert "cannot be read" in str(caught.value)
