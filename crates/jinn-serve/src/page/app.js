// jinn play page: drives /v1 of the server that serves it. No dependencies, works offline.
"use strict";

// State, exposed as window.jinn for the browser test.
const jinn = {
  info: null,        // the model (GET /v1/models)
  id: null,          // current session id
  index: 0,          // index of the frame shown
  steps: 0,          // steps completed by this page
  busy: false,       // a request is in flight
  pending: null,     // the next action to send when the current step returns
  doneAt: [],        // completion times of recent steps (ms), for frames/s
  ready: false,      // model loaded and first session started
  lastError: null,
};
window.jinn = jinn;

const $ = (id) => document.getElementById(id);
const canvas = $("frame");
const ctx = canvas.getContext("2d");
const keyToAction = new Map();

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (res.status === 204) return null;
  let data = null;
  try { data = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) throw new Error((data && data.error) || `${method} ${path}: HTTP ${res.status}`);
  return data;
}

function showError(e) {
  jinn.lastError = e ? String(e.message || e) : null;
  $("error").hidden = !e;
  $("error").textContent = jinn.lastError || "";
}

function setStatus(text) { $("status").textContent = text; }

async function showFrame(reply) {
  const img = new Image();
  img.src = "data:image/png;base64," + reply.frame;
  await img.decode();
  ctx.drawImage(img, 0, 0);
  jinn.index = reply.index;
  jinn.id = reply.id;
  $("stat-index").textContent = reply.index;
  $("undo").disabled = reply.undo_steps === 0;
  $("download").href = `/v1/world/sessions/${reply.id}/gif`;
}

// Keys: the model's suggestions first, then digits and letters (not r or z) in action order.
function assignKeys(actions) {
  const spare = "1234567890abcdefghijklmnopqstuvwxy".split("");
  const taken = new Set(["r", "z"]);
  for (const a of actions) if (a.key) taken.add(a.key);
  return actions.map((a) => {
    if (a.key) return a.key;
    const k = spare.find((c) => !taken.has(c));
    if (k) taken.add(k);
    return k || null;
  });
}

function keyName(k) {
  return { " ": "space", ArrowLeft: "←", ArrowRight: "→", ArrowUp: "↑", ArrowDown: "↓" }[k] || k;
}

function buildActions(info) {
  const box = $("actions");
  box.textContent = "";
  const keys = assignKeys(info.actions);
  info.actions.forEach((a, i) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "action";
    b.dataset.action = a.id;
    b.title = a.description || a.label;
    b.textContent = a.label;
    if (keys[i]) {
      keyToAction.set(keys[i], a.id);
      const kbd = document.createElement("kbd");
      kbd.textContent = keyName(keys[i]);
      b.appendChild(kbd);
    }
    b.addEventListener("click", () => act(a.id));
    box.appendChild(b);
  });
}

// One step at a time; presses while a step runs keep only the latest action.
function act(action) {
  if (!jinn.id) return;
  if (jinn.busy) { jinn.pending = action; return; }
  runStep(action);
}

async function runStep(action) {
  jinn.busy = true;
  const button = document.querySelector(`button.action[data-action="${action}"]`);
  if (button) button.classList.add("active");
  const t0 = performance.now();
  try {
    const reply = await api("POST", `/v1/world/sessions/${jinn.id}/step`, { action });
    await showFrame(reply);
    const t1 = performance.now();
    jinn.steps += 1;
    jinn.doneAt.push(t1);
    if (jinn.doneAt.length > 20) jinn.doneAt.shift();
    $("stat-latency").textContent = (t1 - t0).toFixed(1);
    $("stat-model").textContent = reply.timings.model_ms.toFixed(1);
    if (jinn.doneAt.length > 1) {
      const span = (jinn.doneAt[jinn.doneAt.length - 1] - jinn.doneAt[0]) / 1000;
      $("stat-fps").textContent = ((jinn.doneAt.length - 1) / span).toFixed(1);
    }
    showError(null);
  } catch (e) {
    showError(e);
    jinn.pending = null;
  } finally {
    if (button) button.classList.remove("active");
    jinn.busy = false;
  }
  if (jinn.pending !== null) {
    const next = jinn.pending;
    jinn.pending = null;
    runStep(next);
  }
}

async function startSession(body) {
  jinn.busy = true;
  try {
    const old = jinn.id;
    jinn.id = null;
    if (old) await api("DELETE", `/v1/world/sessions/${old}`).catch(() => {});
    const reply = await api("POST", "/v1/world/sessions", body);
    jinn.doneAt = [];
    await showFrame(reply);
    setStatus("ready");
    showError(null);
  } catch (e) {
    showError(e);
  } finally {
    jinn.busy = false;
  }
}

async function undo() {
  if (!jinn.id || jinn.busy) return;
  jinn.busy = true;
  try {
    await showFrame(await api("POST", `/v1/world/sessions/${jinn.id}/undo`));
    showError(null);
  } catch (e) {
    showError(e);
  } finally {
    jinn.busy = false;
  }
}

function readAsDataURL(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

document.addEventListener("keydown", (ev) => {
  if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement) return;
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (keyToAction.has(ev.key)) {
    ev.preventDefault();
    act(keyToAction.get(ev.key));
  } else if (ev.key === "z") {
    undo();
  } else if (ev.key === "r") {
    startSession({});
  }
});

$("undo").addEventListener("click", undo);
$("reset").addEventListener("click", () => startSession({}));
$("reset-dataset").addEventListener("click", () =>
  startSession({
    dataset: {
      split: $("split").value,
      episode: Number($("episode").value),
      frame: Number($("start-frame").value),
    },
  }));
$("upload").addEventListener("change", async (ev) => {
  const files = Array.from(ev.target.files).sort((a, b) => a.name.localeCompare(b.name));
  if (files.length === 0) return;
  const frames = await Promise.all(files.map(readAsDataURL));
  ev.target.value = "";
  startSession({ frames });
});

async function init() {
  try {
    const { models } = await api("GET", "/v1/models");
    const info = models[0];
    jinn.info = info;
    $("model-name").textContent = `· ${info.name}`;
    document.title = `jinn play · ${info.name}`;
    canvas.width = info.frame.width;
    canvas.height = info.frame.height;
    buildActions(info);
    if (info.splits.length === 0) $("dataset-row").hidden = true;
    for (const s of info.splits) {
      const o = document.createElement("option");
      o.value = s.name;
      o.textContent = `${s.name} (${s.episodes} episodes)`;
      $("split").appendChild(o);
    }
    await startSession({});
    jinn.ready = jinn.id !== null;
  } catch (e) {
    showError(e);
    setStatus("failed");
  }
}

init();
