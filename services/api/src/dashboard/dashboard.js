// Ferry's dashboard: live updates from the API's Server-Sent Events. Pages work without it;
// with it, a workflow's steps and a job's log follow along as they change. A dropped
// connection resumes by itself (EventSource sends the last id it saw).
"use strict";

function setBadge(el, status) {
  el.textContent = status;
  el.className = "badge " + status;
}

// A workflow page: its steps follow the workflow's events, from the position the page was
// rendered at (so no change between the two is missed). A plan that starts or stops waiting
// changes the forms on the page: the page is read again for them.
function followWorkflow(table) {
  const id = table.dataset.workflow;
  const waiting = table.dataset.waiting;
  const events = new EventSource("/ui/events?kinds=workflow&workflow=" + encodeURIComponent(id) +
    "&last_event_id=" + encodeURIComponent(table.dataset.since));
  events.addEventListener("workflow", (ev) => {
    const wf = JSON.parse(ev.data).record;
    if (!wf) return;
    setBadge(document.getElementById("wf-status"), wf.status);
    for (const step of wf.steps) {
      const row = table.querySelector('tr[data-step="' + step.index + '"]');
      if (!row) continue;
      setBadge(row.querySelector(".status .badge"), step.status);
      row.querySelector(".message").textContent = step.message || "";
      row.querySelector(".by").textContent = step.actor || "";
      row.querySelector(".started").textContent = step.started_at || "";
      const job = row.querySelector(".job");
      if (step.job_id && !job.querySelector("a")) {
        const a = document.createElement("a");
        a.className = "mono";
        a.href = "/ui/jobs/" + encodeURIComponent(step.job_id);
        a.textContent = "log";
        job.appendChild(a);
      }
    }
    const now = wf.steps.filter((s) => s.status === "waiting").map((s) => String(s.index)).join(",");
    // A new plan waiting, or a failed end (its failed steps get their retry and skip
    // buttons): the page is read again.
    const failedEnd = ["failed", "cancelled"].includes(wf.status);
    if (now !== waiting || (failedEnd && table.dataset.ended !== "true")) {
      events.close();
      window.location.reload();
    }
  });
}

// A job page: lines after those rendered arrive as the job writes them, to its end.
function followLog(pre) {
  if (pre.dataset.ended === "true") return;
  const id = encodeURIComponent(pre.dataset.job);
  const after = pre.dataset.lines || "0";
  const log = new EventSource("/ui/jobs/" + id + "/log?follow=true&last_event_id=" + after);
  log.addEventListener("line", (ev) => {
    const line = JSON.parse(ev.data);
    const span = document.createElement("span");
    span.className = "line " + line.stream;
    span.textContent = new Date(line.at_ms).toISOString() + "  " + line.text + "\n";
    pre.appendChild(span);
  });
  log.addEventListener("end", (ev) => {
    log.close();
    setBadge(document.getElementById("job-status"), JSON.parse(ev.data).status);
    pre.dataset.ended = "true";
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const steps = document.querySelector("table[data-workflow]");
  if (steps) followWorkflow(steps);
  const log = document.querySelector("pre[data-job]");
  if (log) followLog(log);
});
