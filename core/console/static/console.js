// The console's script: small enhancements; every page works without it.
(function () {
  "use strict";
  // the workspace switcher opens the chosen workspace at once
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
  document.querySelectorAll("[data-js-hide]").forEach(function (element) { element.hidden = true; });
  // a destructive button asks first: <button data-confirm="Revoke this key?">
  document.addEventListener("submit", function (event) {
    var button = event.submitter;
    var question = (button && button.getAttribute("data-confirm")) || event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); }
  });
  // copy a secret shown once: <button data-copy="#id">
  document.querySelectorAll("[data-copy]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var source = document.querySelector(button.getAttribute("data-copy"));
      if (!source || !navigator.clipboard) { return; }
      navigator.clipboard.writeText(source.textContent.trim()).then(function () {
        var status = document.getElementById(button.getAttribute("aria-describedby") || "");
        if (status) { status.textContent = "Copied."; }
      });
    });
  });
})();
// a table import's progress page polls its status until the import ends: <div data-import-status="url">
(function () {
  "use strict";
  var box = document.querySelector("[data-import-status]");
  if (!box || box.getAttribute("data-state") !== "running") { return; }
  function show(status) {
    document.getElementById("import-bar").value = status.percent;
    ["state", "created", "updated", "rejected"].forEach(function (name) {
      box.querySelector('[data-field="' + name + '"]').textContent = status[name];
    });
    var error = box.querySelector('[data-field="error"]');
    error.textContent = status.error || "";
    error.hidden = !status.error;
    var list = document.getElementById("import-errors");
    list.textContent = "";
    (status.errors || []).forEach(function (item) {
      var li = document.createElement("li");
      li.textContent = "Line " + item.line + ": " + item.message;
      list.appendChild(li);
    });
    box.setAttribute("data-state", status.state);
  }
  function poll() {
    fetch(box.getAttribute("data-import-status"), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (status) {
        if (!status) { return; }
        show(status);
        if (status.state === "running") { window.setTimeout(poll, 700); }
      });
  }
  window.setTimeout(poll, 300);
})();
