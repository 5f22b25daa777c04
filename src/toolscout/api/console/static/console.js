// toolscout console: small progressive enhancements. Every page works without this file.
"use strict";

// Filter table rows while typing (the form still filters on the server when submitted).
function enableRowFilters() {
  document.querySelectorAll("input[data-filter-rows]").forEach((input) => {
    const body = document.querySelector(input.dataset.filterRows);
    if (!body) return;
    input.addEventListener("input", () => {
      const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      body.querySelectorAll("tr").forEach((row) => {
        const text = row.textContent.toLowerCase();
        row.hidden = !words.every((w) => text.includes(w));
      });
    });
  });
}

// Follow running jobs: fetch the job's page and swap in its card until the job ends.
function pollJobs() {
  document.querySelectorAll("[data-poll]").forEach((card) => {
    const url = card.dataset.poll;
    const tick = async () => {
      try {
        const response = await fetch(url, { credentials: "same-origin" });
        if (!response.ok) return;
        const page = new DOMParser().parseFromString(await response.text(), "text/html");
        const fresh = page.getElementById(card.id);
        if (!fresh) return;
        card.replaceWith(fresh);
        card = fresh;
        if (fresh.dataset.status === "running") setTimeout(tick, 1000);
      } catch (err) {
        console.warn("job poll failed", err);
      }
    };
    setTimeout(tick, 1000);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  enableRowFilters();
  pollJobs();
});
