// The flow editor: the trigger and each step as forms made from the step types' JSON Schemas (and
// each action's input schema), written into the JSON document the page's form posts (#flow-document).
// Without this script the document is edited as JSON; the server checks either the same way.
(function () {
  "use strict";
  var dataNode = document.getElementById("flow-editor-data");
  var root = document.getElementById("flow-editor");
  var box = document.getElementById("flow-document");
  var sample = document.getElementById("sample-payload");
  if (!dataNode || !root || !box) { return; }
  var data = JSON.parse(dataNode.textContent);
  var types = {};
  data.stepTypes.forEach(function (t) { types[t.type] = t; });
  var META = ["name", "timeoutSeconds", "onError", "gotoLimit"];
  var doc;
  var uid = 0;

  function parseDoc() {
    try {
      var value = JSON.parse(box.value || "{}");
      if (!value || typeof value !== "object" || Array.isArray(value)) { return null; }
      if (!Array.isArray(value.steps)) { value.steps = []; }
      if (value.trigger === undefined) { value.trigger = null; }
      return value;
    } catch (error) { return null; }
  }
  function write() { box.value = JSON.stringify(doc, null, 2); }

  // -- small DOM helpers ---------------------------------------------------------------------------
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === null || value === undefined || value === false) { return; }
      if (key === "text") { node.textContent = value; } else if (key === "className") { node.className = value; } else { node.setAttribute(key, value === true ? "" : value); }
    });
    (children || []).forEach(function (child) { if (child) { node.appendChild(typeof child === "string" ? document.createTextNode(child) : child); } });
    return node;
  }
  function nextId(prefix) { uid += 1; return prefix + "-" + uid; }
  // a button whose visible text is the start of its name: the rest (which step) is for screen readers
  function button(text, hidden, onClick, className) {
    var b = el("button", { type: "button", className: className || "secondary small" }, [text, hidden ? el("span", { className: "visually-hidden", text: hidden }) : null]);
    b.addEventListener("click", function (event) { event.preventDefault(); onClick(); });
    return b;
  }

  // -- schemas -------------------------------------------------------------------------------------
  function resolve(schema, top) {
    if (schema && schema.$ref && top && top.$defs) { return top.$defs[schema.$ref.split("/").pop()] || {}; }
    return schema || {};
  }
  function nonNull(schema) {
    if (schema && schema.anyOf) {
      var kept = schema.anyOf.filter(function (s) { return s.type !== "null"; });
      if (kept.length === 1) { return Object.assign({}, kept[0], { description: schema.description || kept[0].description }); }
      return Object.assign({}, schema, { anyOf: kept });
    }
    return schema || {};
  }
  function isStepList(schema) { return schema && schema.type === "array" && schema.items && (schema.items.discriminator || schema.items.oneOf || schema.items.anyOf); }
  function enumOf(schema) {
    if (schema.enum) { return schema.enum; }
    var found = (schema.anyOf || []).filter(function (s) { return s.enum; })[0];
    return found ? found.enum : null;
  }
  function kindOf(schema) {
    var types = schema.type ? [schema.type] : (schema.anyOf || []).map(function (s) { return s.type; });
    if (types.length === 1 && types[0] === "boolean") { return "boolean"; }
    if (types.indexOf("object") >= 0 || types.indexOf("array") >= 0 || types.length === 0 || types.every(function (t) { return !t; })) { return "json"; }
    if (types.indexOf("number") >= 0 || types.indexOf("integer") >= 0) { return "number"; }
    return "text";
  }

  // -- the fields a template may read: the trigger's sample, earlier steps' outputs ----------------
  function paths(value, prefix, depth, out) {
    out.push(prefix);
    if (depth >= 3 || value === null || typeof value !== "object" || out.length > 80) { return out; }
    if (Array.isArray(value)) { if (value.length) { paths(value[0], prefix + "[0]", depth + 1, out); } return out; }
    Object.keys(value).forEach(function (key) { paths(value[key], /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? prefix + "." + key : prefix + "[" + JSON.stringify(key) + "]", depth + 1, out); });
    return out;
  }
  function samplePayload() {
    try { return sample && sample.value.trim() ? JSON.parse(sample.value) : null; } catch (error) { return null; }
  }
  function actionOf(step) {
    var name = step.action || "";
    var provider = step.provider || (name.indexOf(".") > 0 ? name.split(".")[0] : null);
    var bare = name.indexOf(".") > 0 ? name.split(".").pop() : name;
    return data.actions.filter(function (a) { return a.name === bare && (!provider || a.provider === provider); })[0] || null;
  }
  function available(context) {
    var found = paths(samplePayload() || {}, "trigger", 0, []);
    context.visible.forEach(function (step) {
      var base = "steps." + step.id + ".output";
      if (data.outputs && Object.prototype.hasOwnProperty.call(data.outputs, step.id)) {
        paths(data.outputs[step.id], base, 0, []).forEach(function (p) { found.push(p); });
      } else {
        found.push(base);
        var action = step.type === "action" ? actionOf(step) : null;
        var props = action && action.output && action.output.properties;
        Object.keys(props || {}).forEach(function (key) { found.push(base + "." + key); });
      }
    });
    if (context.inLoop) { found.push("loop.item", "loop.index"); }
    return found.slice(0, 120);
  }
  function helper(field, label, context) {
    var select = el("select", { className: "insert", "aria-label": "Insert a field into " + label });
    select.appendChild(el("option", { value: "", text: "Insert a field…" }));
    available(context).forEach(function (p) { select.appendChild(el("option", { value: p, text: p })); });
    select.addEventListener("change", function () {
      if (!select.value) { return; }
      var text = "{{ " + select.value + " }}";
      var start = field.selectionStart === null || field.selectionStart === undefined ? field.value.length : field.selectionStart;
      var end = field.selectionEnd === null || field.selectionEnd === undefined ? start : field.selectionEnd;
      field.value = field.value.slice(0, start) + text + field.value.slice(end);
      field.dispatchEvent(new Event("input", { bubbles: true }));
      select.value = "";
      field.focus();
    });
    return select;
  }

  // -- problems (from the last save) beside their step and field -----------------------------------
  function problemsOf(stepId, field) {
    return (data.problems || []).filter(function (p) {
      if (p.stepId !== stepId) { return false; }
      if (field === null) { return true; }
      return p.field === field || p.field.indexOf(field + ".") === 0;
    });
  }
  function problemNodes(list, id) {
    return list.map(function (p, index) {
      return el("p", { className: "field-problem", id: id + "-problem-" + index, text: (p.field ? p.field + ": " : "") + p.message });
    });
  }

  // -- one field -----------------------------------------------------------------------------------
  // get(): the value; set(value): store it (undefined removes the key)
  function field(labelText, stepLabel, schema, get, set, options) {
    options = options || {};
    var id = nextId("f");
    var kind = options.kind || kindOf(schema);
    var shownLabel = labelText + " of " + stepLabel;
    var label = el("label", { for: id }, [labelText, el("span", { className: "visually-hidden", text: " of " + stepLabel }),
      options.required ? el("span", { className: "hint", text: " (required)" }) : null]);
    var wrap = el("div", { className: "field" }, [label]);
    var value = get();
    var input;
    var choices = options.choices || enumOf(schema);
    if (kind === "boolean") {
      input = el("input", { type: "checkbox", id: id, checked: value === true });
      input.addEventListener("change", function () { set(input.checked ? true : undefined); write(); });
    } else if (kind === "select") {
      input = el("select", { id: id });
      input.appendChild(el("option", { value: "", text: options.empty || "Choose…" }));
      (options.items || []).forEach(function (item) { input.appendChild(el("option", { value: item.value, text: item.text, selected: item.value === value })); });
      if (value && !(options.items || []).some(function (item) { return item.value === value; })) { input.appendChild(el("option", { value: value, text: value, selected: true })); }
      input.addEventListener("change", function () { set(input.value || undefined); write(); if (options.rerender) { render(); } });
    } else if (kind === "json") {
      input = el("textarea", { id: id, rows: 3, spellcheck: "false", className: "mono" });
      input.value = value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value, null, 2);
      input.addEventListener("input", function () {
        var text = input.value;
        if (!text.trim()) { set(undefined); } else {
          try { set(JSON.parse(text)); } catch (error) { set(text); }
        }
        write();
      });
    } else {
      input = el("input", { type: "text", id: id, spellcheck: "false" });
      input.value = value === undefined || value === null ? "" : String(value);
      if (choices) {
        var listId = nextId("choices");
        input.setAttribute("list", listId);
        wrap.appendChild(el("datalist", { id: listId }, choices.map(function (c) { return el("option", { value: c }); })));
      }
      input.addEventListener("input", function () {
        var text = input.value;
        if (text === "") { set(undefined); } else if (kind === "number" && /^-?\d+(\.\d+)?$/.test(text.trim())) { set(Number(text)); } else { set(text); }
        write();
      });
    }
    wrap.appendChild(input);
    if (schema && schema.description) {
      var hintId = nextId("hint");
      wrap.appendChild(el("p", { className: "hint", id: hintId, text: schema.description.replace(/`/g, "") }));
      input.setAttribute("aria-describedby", hintId);
    }
    if (options.context && kind !== "boolean" && kind !== "select") { wrap.appendChild(helper(input, shownLabel, options.context)); }
    var problems = options.problems || [];
    if (problems.length) {
      input.setAttribute("aria-invalid", "true");
      problemNodes(problems, id).forEach(function (node) {
        wrap.appendChild(node);
        input.setAttribute("aria-describedby", ((input.getAttribute("aria-describedby") || "") + " " + node.id).trim());
      });
      wrap.className += " has-problem";
    }
    return wrap;
  }

  // -- the trigger ---------------------------------------------------------------------------------
  function renderTrigger() {
    var section = el("section", { className: "card", "aria-labelledby": "trigger-heading" }, [el("h2", { id: "trigger-heading", text: "Trigger" })]);
    var select = el("select", { id: "trigger-select" });
    select.appendChild(el("option", { value: "", text: "None: the flow runs when called, tested, replayed or scheduled" }));
    var current = doc.trigger ? doc.trigger.providerType + "|" + doc.trigger.triggerName : "";
    var chosen = null;
    data.triggers.forEach(function (provider) {
      var group = el("optgroup", { label: provider.displayName });
      provider.triggers.forEach(function (t) {
        var value = provider.providerType + "|" + t.name;
        if (value === current) { chosen = t; }
        group.appendChild(el("option", { value: value, text: provider.displayName + ": " + (t.displayName || t.name), selected: value === current }));
      });
      select.appendChild(group);
    });
    if (current && !chosen) { select.appendChild(el("option", { value: current, text: current.replace("|", ": "), selected: true })); }
    select.addEventListener("change", function () {
      if (!select.value) { doc.trigger = null; } else {
        var parts = select.value.split("|");
        var option = null;
        data.triggers.forEach(function (p) { if (p.providerType === parts[0]) { p.triggers.forEach(function (t) { if (t.name === parts[1]) { option = t; } }); } });
        doc.trigger = { providerType: parts[0], triggerName: parts[1], kind: option ? option.kind : "webhook" };
        if (option && option.sample && Object.keys(option.sample).length && sample && !sample.value.trim()) { sample.value = JSON.stringify(option.sample, null, 2); }
      }
      write();
      render();
    });
    section.appendChild(el("label", { for: "trigger-select", text: "Starts on" }));
    section.appendChild(select);
    if (chosen && chosen.description) { section.appendChild(el("p", { className: "hint", text: chosen.description })); }
    var config = chosen && chosen.config && chosen.config.properties;
    Object.keys(config || {}).forEach(function (key) {
      section.appendChild(field(key, "the trigger", nonNull(config[key]), function () { return (doc.trigger.config || {})[key]; }, function (value) {
        doc.trigger.config = doc.trigger.config || {};
        if (value === undefined) { delete doc.trigger.config[key]; } else { doc.trigger.config[key] = value; }
      }, { required: (chosen.config.required || []).indexOf(key) >= 0 }));
    });
    return section;
  }

  // -- steps ---------------------------------------------------------------------------------------
  function allIds(steps, out) {
    steps.forEach(function (step) {
      out.push(step.id);
      Object.keys(step).forEach(function (key) {
        var value = step[key];
        if (Array.isArray(value) && value.length && value[0] && typeof value[0] === "object") {
          if (value[0].type !== undefined && value[0].id !== undefined) { allIds(value, out); }
          value.forEach(function (item) { if (item && Array.isArray(item.steps)) { allIds(item.steps, out); } });
        } else if (key === "cases" && value && typeof value === "object") {
          Object.keys(value).forEach(function (name) { if (Array.isArray(value[name])) { allIds(value[name], out); } });
        }
      });
    });
    return out;
  }
  function freshId(type) {
    var used = allIds(doc.steps, []);
    var base = type.replace(/[^A-Za-z0-9]+/g, "_");
    for (var n = 1; ; n += 1) { if (used.indexOf(base + "_" + n) < 0) { return base + "_" + n; } }
  }
  function newStep(type) {
    var step = { id: freshId(type), type: type };
    if (type === "branch") { step.paths = [{ name: "yes", condition: "", steps: [] }]; step["default"] = []; }
    if (type === "switch") { step.value = ""; step.cases = { a: [] }; step["default"] = []; }
    if (type === "loop") { step.items = ""; step.steps = []; }
    if (type === "http") { step.method = "GET"; step.url = ""; }
    return step;
  }

  function renderList(steps, listName, context) {
    var wrap = el("div", { className: "step-list" });
    var list = el("ol", { className: "chain steps", "aria-label": "Steps of " + listName });
    var visible = context.visible.slice();
    steps.forEach(function (step, index) {
      list.appendChild(renderStep(steps, index, { visible: visible.slice(), inLoop: context.inLoop }));
      visible.push(step);
    });
    wrap.appendChild(list);
    var addId = nextId("add");
    var typeSelect = el("select", { id: addId, "aria-label": "Type of the new step in " + listName });
    data.stepTypes.forEach(function (t) { typeSelect.appendChild(el("option", { value: t.type, text: t.title && t.title !== t.type ? t.title + " (" + t.type + ")" : t.type })); });
    wrap.appendChild(el("div", { className: "row add-step" }, [
      el("div", {}, [typeSelect]),
      el("div", {}, [button("Add step", " to " + listName, function () { var step = newStep(typeSelect.value); steps.push(step); write(); render(step.id); })]),
    ]));
    return wrap;
  }

  function renderStep(steps, index, context) {
    var step = steps[index];
    var type = types[step.type] || { type: step.type, schema: {}, description: "" };
    var schema = type.schema || {};
    var props = schema.properties || {};
    var required = schema.required || [];
    var label = "step " + step.id;
    var card = el("li", { className: "card step-edit", "data-step-id": step.id });
    var head = el("div", { className: "step-head" }, [
      el("h3", {}, [el("span", { className: "mono", text: step.id }), " ", el("span", { className: "badge", text: step.type })]),
      el("div", { className: "step-tools" }, [
        index > 0 ? button("Up", " (move " + step.id + " up)", function () { steps.splice(index - 1, 0, steps.splice(index, 1)[0]); write(); render(); }) : null,
        index < steps.length - 1 ? button("Down", " (move " + step.id + " down)", function () { steps.splice(index + 1, 0, steps.splice(index, 1)[0]); write(); render(); }) : null,
        button("Remove", " " + step.id, function () { steps.splice(index, 1); write(); render(); }, "danger small"),
      ]),
    ]);
    card.appendChild(head);
    var result = data.results && data.results[step.id];
    if (result) {
      card.appendChild(el("p", { className: "last-run" }, ["Test run: ", el("span", { className: "status-" + result.status, text: result.status }),
        result.status === "skipped" ? " (its path was not taken)" : "", result.error ? ": " + result.error : ""]));
    }
    if (type.description) { card.appendChild(el("p", { className: "hint", text: type.description.replace(/`/g, "") })); }
    var shown = {};
    // problems of the step that name no field shown below
    var idField = field("id", label, props.id || {}, function () { return step.id; }, function (value) { step.id = value || ""; }, { required: true, problems: problemsOf(step.id, "id") });
    idField.querySelector("input").addEventListener("change", function () { render(); });
    card.appendChild(idField);
    shown.id = shown.type = true;

    function plain(key, extra) {
      shown[key] = true;
      var prop = nonNull(resolve(props[key] || {}, schema));
      return field(key, label, prop, function () { return step[key]; }, function (value) { if (value === undefined) { delete step[key]; } else { step[key] = value; } },
        Object.assign({ required: required.indexOf(key) >= 0, problems: problemsOf(step.id, key), context: context }, extra || {}));
    }

    if (step.type === "action") {
      var providers = [];
      data.actions.forEach(function (a) { if (providers.indexOf(a.provider) < 0) { providers.push(a.provider); } });
      var action = actionOf(step);
      var provider = step.provider || (action && action.provider) || "";
      card.appendChild(plain("provider", { kind: "select", context: null, items: providers.map(function (p) { return { value: p, text: p }; }), empty: "Choose a provider", rerender: true }));
      card.appendChild(plain("action", { kind: "select", context: null, rerender: true, empty: "Choose an action",
        items: data.actions.filter(function (a) { return a.provider === provider; }).map(function (a) { return { value: a.name, text: (a.displayName || a.name) + " (" + a.name + ")" }; }) }));
      card.appendChild(plain("connectionId", { kind: "select", context: null, empty: "Choose a connection",
        items: data.connections.filter(function (c) { return !provider || c.provider === provider; }).map(function (c) { return { value: c.id, text: c.label + " (" + c.provider + ")" }; }) }));
      shown.inputs = true;
      var inputs = action && action.inputs && action.inputs.properties;
      if (inputs) {
        var fieldset = el("fieldset", { className: "inputs" }, [el("legend", { text: "Inputs of " + (action.displayName || action.name) })]);
        Object.keys(inputs).forEach(function (key) {
          fieldset.appendChild(field("inputs." + key, label, nonNull(inputs[key]), function () { return (step.inputs && typeof step.inputs === "object") ? step.inputs[key] : undefined; }, function (value) {
            if (!step.inputs || typeof step.inputs !== "object") { step.inputs = {}; }
            if (value === undefined) { delete step.inputs[key]; } else { step.inputs[key] = value; }
          }, { required: (action.inputs.required || []).indexOf(key) >= 0, problems: problemsOf(step.id, "inputs." + key), context: context }));
        });
        card.appendChild(fieldset);
      } else {
        shown.inputs = false;
      }
    }

    if (step.type === "branch") {
      shown.paths = shown["default"] = true;
      step.paths = Array.isArray(step.paths) ? step.paths : [];
      step.paths.forEach(function (path, position) {
        path.steps = Array.isArray(path.steps) ? path.steps : [];
        var pathLabel = "path " + (path.name || position + 1) + " of " + step.id;
        var box = el("fieldset", { className: "path" }, [el("legend", { text: "Path " + (path.name || position + 1) })]);
        var nameField = field("name", pathLabel, { description: "A name for the path (not default)" }, function () { return path.name; }, function (value) { path.name = value || ""; },
          { kind: "text", required: true, problems: problemsOf(step.id, "paths." + position + ".name") });
        nameField.querySelector("input").addEventListener("change", function () { render(); });
        box.appendChild(nameField);
        box.appendChild(field("condition", pathLabel, { description: "A template, or a bare expression such as trigger.amount > 100" }, function () { return path.condition; }, function (value) { path.condition = value === undefined ? "" : value; },
          { kind: "text", required: true, problems: problemsOf(step.id, "paths." + position + ".condition"), context: context }));
        box.appendChild(renderList(path.steps, pathLabel, context));
        box.appendChild(button("Remove", " " + pathLabel, function () { step.paths.splice(position, 1); write(); render(); }, "danger small"));
        card.appendChild(box);
      });
      card.appendChild(button("Add path", " to " + step.id, function () { step.paths.push({ name: "path_" + (step.paths.length + 1), condition: "", steps: [] }); write(); render(); }));
      step["default"] = Array.isArray(step["default"]) ? step["default"] : [];
      card.appendChild(el("fieldset", { className: "path" }, [el("legend", { text: "Default path" }), renderList(step["default"], "the default path of " + step.id, context)]));
    }

    if (step.type === "switch") {
      card.appendChild(plain("value"));
      shown.cases = shown["default"] = true;
      step.cases = step.cases && typeof step.cases === "object" ? step.cases : {};
      Object.keys(step.cases).forEach(function (name) {
        var caseLabel = "case " + name + " of " + step.id;
        var box = el("fieldset", { className: "path" }, [el("legend", { text: "Case " + name })]);
        var nameField = field("value", caseLabel, {}, function () { return name; }, function () {}, { kind: "text", required: true });
        nameField.querySelector("input").addEventListener("change", function (event) {
          var renamed = event.target.value;
          if (!renamed || renamed === name || step.cases[renamed]) { return; }
          var rebuilt = {};
          Object.keys(step.cases).forEach(function (key) { rebuilt[key === name ? renamed : key] = step.cases[key]; });
          step.cases = rebuilt;
          write();
          render();
        });
        box.appendChild(nameField);
        box.appendChild(renderList(step.cases[name], caseLabel, context));
        box.appendChild(button("Remove", " " + caseLabel, function () { delete step.cases[name]; write(); render(); }, "danger small"));
        card.appendChild(box);
      });
      card.appendChild(button("Add case", " to " + step.id, function () { var n = Object.keys(step.cases).length + 1; while (step.cases["case_" + n]) { n += 1; } step.cases["case_" + n] = []; write(); render(); }));
      step["default"] = Array.isArray(step["default"]) ? step["default"] : [];
      card.appendChild(el("fieldset", { className: "path" }, [el("legend", { text: "Default" }), renderList(step["default"], "the default of " + step.id, context)]));
    }

    // the type's other fields, from its schema; lists of steps (loop, approval) as nested lists
    Object.keys(props).forEach(function (key) {
      if (shown[key] || META.indexOf(key) >= 0) { return; }
      var prop = nonNull(resolve(props[key], schema));
      if (isStepList(prop)) {
        shown[key] = true;
        step[key] = Array.isArray(step[key]) ? step[key] : [];
        var listLabel = key + " of " + step.id;
        var inner = { visible: context.visible, inLoop: context.inLoop || step.type === "loop" };
        card.appendChild(el("fieldset", { className: "path" }, [el("legend", { text: key === "steps" ? "Steps run for each item" : "Steps when " + key }), renderList(step[key], listLabel, inner)]));
        return;
      }
      card.appendChild(plain(key));
    });
    // fields the step has that its schema does not name (plugins, hand-written JSON)
    Object.keys(step).forEach(function (key) {
      if (shown[key] || props[key] || META.indexOf(key) >= 0) { return; }
      card.appendChild(plain(key, { kind: "json" }));
    });
    var more = el("details", { className: "more" }, [el("summary", { text: "More settings of " + step.id })]);
    META.forEach(function (key) {
      var extra = key === "onError" ? { choices: ["continue", "fail"].concat(steps.filter(function (s) { return s !== step; }).map(function (s) { return "goto:" + s.id; })) } : {};
      more.appendChild(plain(key, extra));
      if (problemsOf(step.id, key).length) { more.open = true; }
    });
    card.appendChild(more);
    var loose = problemsOf(step.id, null).filter(function (p) { return !p.field || (!shown[p.field.split(".")[0]] && META.indexOf(p.field.split(".")[0]) < 0); });
    problemNodes(loose, "step-" + step.id).forEach(function (node) { head.appendChild(node); });
    if (problemsOf(step.id, null).length) { card.className += " has-problem"; }
    return card;
  }

  function render(focusStep) {
    var focused = document.activeElement && root.contains(document.activeElement) ? document.activeElement.getAttribute("aria-label") || (document.activeElement.labels && document.activeElement.labels[0] && document.activeElement.labels[0].textContent) : null;
    uid = 0;
    root.textContent = "";
    root.appendChild(renderTrigger());
    var section = el("section", { "aria-labelledby": "steps-heading" }, [el("h2", { id: "steps-heading", text: "Steps" })]);
    section.appendChild(renderList(doc.steps, "the flow", { visible: [], inLoop: false }));
    root.appendChild(section);
    if (typeof focusStep === "string") {
      var card = Array.prototype.filter.call(root.querySelectorAll("[data-step-id]"), function (node) { return node.getAttribute("data-step-id") === focusStep; })[0];
      if (card) { card.querySelector("input").focus(); }
    } else if (focused) {
      var again = Array.prototype.filter.call(root.querySelectorAll("button, select, input, textarea"), function (node) {
        return node.getAttribute("aria-label") === focused || (node.labels && node.labels[0] && node.labels[0].textContent === focused);
      })[0];
      if (again) { again.focus(); }
    }
  }

  doc = parseDoc();
  var note = el("p", { className: "error", id: "flow-json-error", role: "alert", hidden: true });
  box.parentNode.appendChild(note);
  if (!doc) {
    note.textContent = "The JSON below does not parse; fix it to edit the flow with the forms.";
    note.hidden = false;
    box.closest("details").open = true;
    return;
  }
  box.addEventListener("change", function () {
    var parsed = parseDoc();
    note.hidden = !!parsed;
    note.textContent = parsed ? "" : "The JSON does not parse; the forms show the last flow that did.";
    if (parsed) { doc = parsed; render(); }
  });
  // the sample payload outlives a save (the page is answered again): kept in the tab's session
  var form = document.getElementById("flow-editor-form");
  var key = "patchbay-flow-sample-" + form.getAttribute("data-flow");
  if (sample && window.sessionStorage) {
    var kept = sessionStorage.getItem(key) || sessionStorage.getItem("patchbay-flow-sample-new");
    if (!sample.value.trim() && kept) { sample.value = kept; }
    sessionStorage.removeItem("patchbay-flow-sample-new");
    form.addEventListener("submit", function () { write(); sessionStorage.setItem(key, sample.value); });
  }
  if (sample) { sample.addEventListener("change", render); }
  render();
  write();
})();
