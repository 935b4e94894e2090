"""The fleet and sweep pages in a real browser: replicas side by side, a click opening one
replica's engine panels, the sweep's charts of an uploaded results file."""

from __future__ import annotations

import csv
import io

from tests.browser.pages import wait_for_dashboard


def test_fleet_page_shows_replicas_and_a_click_opens_one(server, new_page):
    page = new_page(1280, 720)
    page.goto(f"{server.url}/fleet?replicas=3&requests=90&rate=12")
    page.wait_for_selector(".replica canvas", timeout=60_000)
    assert page.locator(".replica").count() == 3
    assert page.locator("#summary").inner_text().count("requests") == 1
    def finished_at(where: str) -> int:
        page.evaluate(f"() => {{ const t = document.getElementById('time'); t.value = {where}; "
                      "t.dispatchEvent(new Event('input')); }")
        return sum(int(text) for text in page.locator(".replica .finished").all_inner_texts())

    # The page opens at the end of the run; the time slider goes back to its start.
    assert finished_at("t.max") == 90
    assert finished_at("0") == 0 and page.locator("#clock").inner_text() == "0.000 s"
    assert 0 < finished_at("Math.round(t.max / 2)") < 90
    assert page.locator("#events li").count() > 0
    page.locator(".replica").nth(1).click()
    page.wait_for_url("**/s/**", timeout=60_000)
    wait_for_dashboard(page)
    assert page.evaluate("window.servescope.store.session.num_requests") == 30
    # This tab created the session, so it holds the control (the token is not in the address bar).
    assert page.locator("#play").is_enabled() and "token" not in page.url
    assert page.errors == []


def test_sweep_page_plots_an_uploaded_results_file(server, new_page, tmp_path):
    rows = [{"point": i, "cluster.replicas": r, "workload.arrival_rate": rate, "num_gpus": r, "requests_per_s": rate * 0.9,
             "ttft_s.p99": 0.05 * rate / r, "tpot_s.p99": 0.01, "goodput_requests_per_s": rate * 0.8}
            for i, (r, rate) in enumerate((r, rate) for r in (1, 2) for rate in (5, 10))]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path = tmp_path / "results.csv"
    path.write_text(out.getvalue())
    page = new_page(1920, 1080)
    page.goto(f"{server.url}/sweep")
    page.set_input_files("#upload", str(path))
    page.wait_for_selector("#table tbody tr")
    assert page.locator("#table tbody tr").count() == 4
    assert page.locator("#legend").inner_text().count("replicas=") == 2
    # SLO 300 ms: every point meets it; at each rate the one-GPU configuration is the cheapest.
    assert page.locator("#table tr.cheapest").count() == 2
    assert page.errors == []


def test_the_sweep_banner_names_the_fields_wrong_now_and_clears_once_they_are_fixed(server, new_page):
    page = new_page(1920, 1080)
    page.goto(f"{server.url}/sweep")
    replicas, rates = page.locator(".axis-values").nth(0), page.locator(".axis-values").nth(1)
    page.fill("#num-requests", "20")
    replicas.fill("1, 99")
    page.click("#run")
    page.wait_for_function("document.getElementById('banner').textContent.includes('cluster.replicas')")
    # One field fixed, another broken, Run not pressed: the banner follows the form.
    replicas.fill("1, 2")
    rates.fill("4, -8")
    page.wait_for_function("() => { const t = document.getElementById('banner').textContent; "
                           "return t.includes('workload.arrival_rate') && !t.includes('cluster.replicas'); }")
    rates.fill("4, 8")
    page.wait_for_selector("#banner", state="hidden")
    page.click("#run")
    page.wait_for_selector("#table tbody tr", timeout=120_000)
    assert page.locator("#table tbody tr").count() == 4
    # The charts are pictures with names: what they plot, in words.
    for chart, metric in (("#chart-ttft", "p99 TTFT"), ("#chart-tpot", "p99 TPOT")):
        label = page.locator(chart).get_attribute("aria-label")
        assert label.startswith(f"{metric} against throughput: 4 points of 2 configurations, "), label
    assert page.locator("#banner").is_hidden()
    # The console's only errors are the browser's note of each 422 the banner put in words.
    assert page.errors and all("status of 422" in error for error in page.errors), page.errors
