// The bundle talks to its parent (the workspace, or `atrium dev`'s shell) by postMessage:
//   to the parent:   {type: "atrium:ready"}
//                    {type: "atrium:call-tool", id, name, args}
//   from the parent: {type: "atrium:init", theme, appId, tenantId}
//                    {type: "atrium:theme", theme}            ("light" or "dark")
//                    {type: "atrium:tool-result", id, ok, result} or {..., ok: false, error}
const pending = new Map();
let nextId = 1;
// The parent's origin, learnt from its `atrium:init`: messages go only there, and only its
// messages are heard.
let parentOrigin = null;

function callTool(name, args) {
  if (parentOrigin === null) {
    return Promise.reject({ decision: "not_ready", message: "the parent has not answered yet" });
  }
  const id = String(nextId++);
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    window.parent.postMessage({ type: "atrium:call-tool", id, name, args }, parentOrigin);
  });
}

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme === "dark" ? "dark" : "light";
}

window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const message = event.data || {};
  if (message.type === "atrium:init" && parentOrigin === null) parentOrigin = event.origin;
  if (event.origin !== parentOrigin) return;
  if (message.type === "atrium:init" || message.type === "atrium:theme") {
    applyTheme(message.theme);
  } else if (message.type === "atrium:tool-result" && pending.has(message.id)) {
    const { resolve, reject } = pending.get(message.id);
    pending.delete(message.id);
    if (message.ok) resolve(message.result);
    else reject(message.error || { decision: "error", message: "the call failed" });
  }
});

document.getElementById("greet").addEventListener("submit", async (event) => {
  event.preventDefault();
  const answer = document.getElementById("answer");
  const name = new FormData(event.target).get("name");
  try {
    const result = await callTool("greet", { name });
    answer.textContent = result.message;
  } catch (error) {
    answer.textContent = `${error.decision}: ${error.message}`;
  }
});

window.parent.postMessage({ type: "atrium:ready" }, "*");
