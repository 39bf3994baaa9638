// The Logs page's live tail: polls tail.json with the newest key seen and puts new entries at the
// top of the table. Rows are built with textContent (never HTML from the answer).
(function () {
  "use strict";
  var box = document.querySelector("[data-tail]");
  var body = document.getElementById("log-rows");
  if (!box || !body) { return; }
  var toggle = document.getElementById("tail-on");
  var status = document.getElementById("tail-status");
  var newest = box.getAttribute("data-newest");
  var every = 2000;
  box.hidden = false;

  function cell(row, text, className) {
    var td = document.createElement("td");
    if (className) { td.className = className; }
    if (text !== null && text !== undefined) { td.textContent = text; }
    row.appendChild(td);
    return td;
  }

  function add(entry) {
    var row = document.createElement("tr");
    row.className = "fresh";
    var link = document.createElement("a");
    link.href = entry.url;
    link.textContent = entry.when;
    cell(row, null).appendChild(link);
    cell(row, entry.kindLabel);
    var state = cell(row, null);
    var pill = document.createElement("span");
    pill.className = "pill status-" + entry.status;
    pill.textContent = entry.status;
    state.appendChild(pill);
    state.appendChild(document.createTextNode(" " + entry.detailStatus));
    cell(row, entry.summary, "mono");
    cell(row, entry.provider || "");
    cell(row, entry.connectionId ? entry.connectionId.slice(0, 8) : "", "mono small");
    body.insertBefore(row, body.firstChild);
    var empty = document.getElementById("log-empty");
    if (empty) { empty.hidden = true; }
  }

  function poll() {
    if (!toggle.checked || document.hidden) { return schedule(); }
    var url = box.getAttribute("data-tail");
    url += (url.indexOf("?") < 0 ? "?" : "&") + "after=" + encodeURIComponent(newest || "");
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { if (!response.ok) { throw new Error(String(response.status)); } return response.json(); })
      .then(function (data) {
        data.entries.forEach(add);
        if (data.key) { newest = data.key; }
        if (data.entries.length) { status.textContent = data.entries.length + " new " + (data.entries.length === 1 ? "entry" : "entries") + "."; }
      })
      .catch(function () { status.textContent = "The live tail could not reach the server; retrying."; })
      .then(schedule);
  }

  function schedule() { window.setTimeout(poll, every); }
  schedule();
})();
