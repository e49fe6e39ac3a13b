// Configuration sessions of a ConfigDB environment (docs/api/sessions.md): the list and "Open a session", one
// session's staged diff with Deploy and Abandon, and the JSON editor that stages a document into it.
// Every request goes to /config/environments/<id>/...: a linked environment resolves there to its cluster's
// sessions, so the same pages serve both kinds. Writes carry X-Configuration-Session and are staged; reads with
// it show the staged state.
import { add, api, ApiError, context, el, errorBox, fill, json, request, table, when } from "./console.js";
import { sessionHash, sessionsHash, shortId } from "./environments.js";

const HEADER = "X-Configuration-Session";
const KINDS = ["values", "overrides"];

const seg = (value) => encodeURIComponent(String(value));
const base = (environment) => `/config/environments/${seg(environment)}`;
const sessionPath = (environment, session) => `${base(environment)}/sessions/${seg(session)}`;

/** `nodes/5` (raw or decoded segments) as the API's `<levels>` prefix `nodes/5/` (empty: the environment's). */
function levelsPrefix(levels) {
  const parts = levels.filter((part) => part !== "");
  return parts.length ? parts.map(seg).join("/") + "/" : "";
}

/** The levels of a document descriptor (`/nodes/5/`) as decoded segments. */
const levelsOf = (level) => String(level || "/").split("/").filter(Boolean);

/** The API path of a document: `.../<levels>resources/<resource>/<kind>`. */
const documentPath = (environment, levels, resource, kind) =>
  `${base(environment)}/${levelsPrefix(levels)}resources/${seg(resource)}/${seg(kind)}`;

/** The console's routes of a document in a session (editor) and of its history (helper A's page). */
const editPage = (environment, session, kind, resource, levels) =>
  `${sessionHash(environment, session)}/edit/${seg(kind)}/${seg(resource)}` +
  (levels.length ? "/" + levels.map(seg).join("/") : "");
const historyPage = (environment, kind, resource, levels) =>
  `#/environments/${seg(environment)}/history/${seg(kind)}/${seg(resource)}` +
  (levels.length ? "/" + levels.map(seg).join("/") : "");

/** How fuel2 names a staged document (nailgun_platform.client.documents.label): `values of nova at /`. */
function label(document) {
  if (!document || typeof document !== "object") return String(document);
  if (document.type === "configdb") {
    return `${document.kind} of ${document.resource_name || document.resource} at ${document.level || "/"}`;
  }
  if (document.type === "model") return "the environment model";
  if (document.type === "environment") return "the environment (a strict deploy invalidates every other session)";
  return JSON.stringify(document);
}

/** A 409's entry as fuel2 prints it: `values of nova at /: changed in revision 2 by member`. */
function conflictLine(conflict) {
  let line = `${label(conflict.document)}: changed`;
  if (conflict.revision !== null && conflict.revision !== undefined) line += ` in revision ${conflict.revision}`;
  if (conflict.author) line += ` by ${conflict.author}`;
  return line;
}

/** The session, also when it is invalid (its GET is then 403 with the session, conflicts included, in errors). */
async function loadSession(environment, id, signal) {
  try {
    return await api("GET", sessionPath(environment, id), { signal });
  } catch (error) {
    const found = error instanceof ApiError && error.status === 403 && error.errors[0];
    if (found && found.id === id && found.state === "invalid") return found;
    throw error;
  }
}

const isOwner = (session) => Boolean(context.identity) && session.user_id === context.identity.name;
const mayStage = (session) => session.state === "open" && isOwner(session) && context.may("nailgun:write");
const mayAbandon = (session) => session.state === "open" && context.may("nailgun:write") &&
  (isOwner(session) || context.may("nailgun:admin"));

function stateBadge(state) {
  return el("span", { class: `badge state ${state}`, "data-state": state }, state);
}

function stagedList(documents) {
  if (!documents || !documents.length) return el("span", { class: "muted" }, "nothing staged");
  return el("ul", { class: "documents" }, documents.map((entry) =>
    el("li", {}, label(entry.document),
      entry.changed_keys && entry.changed_keys.length
        ? el("span", { class: "muted" }, ": ", entry.changed_keys.join(", ")) : null)));
}

function breadcrumbs(environment, ...rest) {
  return el("p", { class: "muted crumbs" },
    el("a", { href: `#/environments/${seg(environment)}` }, `Environment ${environment}`), " / ",
    el("a", { href: sessionsHash(environment) }, "Sessions"), rest.length ? [" / ", rest] : null);
}

// -- #/environments/<id>/sessions -------------------------------------------------------------------------

async function drawSessions(view, [rawEnvironment], signal) {
  const environment = decodeURIComponent(rawEnvironment);
  const [info, answer] = await Promise.all([
    api("GET", base(environment), { signal }),
    api("GET", `${base(environment)}/sessions`, { signal })]);
  const sessions = answer.sessions || [];
  const status = el("div", { class: "status" });
  add(view,
    el("h1", {}, `Sessions of environment ${environment}`),
    el("p", { class: "muted crumbs" }, el("a", { href: `#/environments/${seg(environment)}` }, `Environment ${environment}`),
      info.linked ? ` (linked to cluster ${environment}: these are the cluster's sessions)` : ""),
    el("p", { class: "hint" }, context.may("nailgun:admin")
      ? "The open sessions of every user." : "Your open sessions (another user's are theirs to see)."));
  if (context.may("nailgun:write")) {
    const open = el("button", { class: "primary", id: "open-session", type: "button", onclick: async () => {
      open.disabled = true;
      try {
        const session = await api("POST", `${base(environment)}/configure`);
        location.hash = sessionHash(environment, session.id);
      } catch (error) {
        fill(status, errorBox(error));
        open.disabled = false;
      }
    } }, "Open a session");
    add(view, el("div", { class: "actions" }, open));
  }
  add(view, status);
  if (!sessions.length) {
    add(view, el("p", { class: "muted", id: "no-sessions" }, "No open session."));
    return;
  }
  add(view, table(["Session", "Owner", "State", "Opened", "Expires", "Documents staged"], sessions.map((session) => [
    el("a", { href: sessionHash(environment, session.id), class: "mono session-link" }, shortId(session.id)),
    session.user_id, stateBadge(session.state), when(session.created), when(session.expires),
    stagedList(session.documents)]), { class: "sessions" }));
}

// -- #/environments/<id>/sessions/<session> ---------------------------------------------------------------

/** The value a JSON pointer names in `data`, or `missing`. */
function pointed(data, pointer, missing) {
  if (pointer === "") return data;
  let node = data;
  for (const raw of pointer.split("/").slice(1)) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object" || !Object.prototype.hasOwnProperty.call(node, key)) return missing;
    node = node[key];
  }
  return node;
}

const MISSING = Symbol("missing");
const shown = (value) => (value === MISSING || value === undefined ? "" : json(value));

/** One staged document's RFC 6902 patch as rows: operation, path, what is deployed, what the session stages. */
function patchTable(patch, deployed) {
  const rows = patch.map((operation) => {
    const was = deployed === null ? MISSING : pointed(deployed, operation.path, MISSING);
    const kind = { add: "added", remove: "removed", replace: "changed" }[operation.op] || "changed";
    const before = operation.op === "add" ? "" : shown(was);
    const after = operation.op === "remove" ? "" : shown(operation.value);
    return el("tr", { class: `operation ${kind}` },
      el("td", {}, operation.op), el("td", { class: "mono" }, operation.path),
      el("td", { class: before ? "mono removed was" : "mono" }, before),
      el("td", { class: after ? "mono added now" : "mono" }, after));
  });
  return el("table", { class: "patch" },
    el("thead", {}, el("tr", {}, ["op", "path", "deployed", "staged"].map((heading) => el("th", {}, heading)))),
    el("tbody", {}, rows));
}

/** The document as deployed (no session header), raw; null when it cannot be read (the table then says less). */
async function deployedDocument(environment, document, signal) {
  if (!document || document.type !== "configdb") return null;
  try {
    return await api("GET", documentPath(environment, levelsOf(document.level), document.resource, document.kind),
      { signal });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    return null;
  }
}

async function diffSection(environment, session, signal) {
  const answer = await api("GET", `${sessionPath(environment, session.id)}/diff`, { signal });
  const documents = answer.documents || [];
  const section = el("section", { id: "session-diff" }, el("h2", {}, "Staged changes against what is deployed"));
  if (!documents.length) {
    add(section, el("p", { class: "muted", id: "no-changes" }, "Nothing staged."));
    return section;
  }
  const deployed = await Promise.all(documents.map((entry) => deployedDocument(environment, entry.document, signal)));
  documents.forEach((entry, index) => {
    const document = entry.document || {};
    const levels = levelsOf(document.level);
    add(section, el("div", { class: "staged-document" },
      el("h3", {}, label(document), " ",
        document.type === "configdb" && mayStage(session)
          ? el("a", { href: editPage(environment, session.id, document.kind, document.resource, levels),
            class: "edit-link" }, "edit") : null),
      entry.patch && entry.patch.length ? patchTable(entry.patch, deployed[index])
        : el("p", { class: "muted" }, "No change left against the deployed document.")));
  });
  return section;
}

/** Choose a data source, a kind and a level to stage a document of, and go to the editor. */
async function documentPicker(environment, session, signal) {
  const [info, pins] = await Promise.all([
    api("GET", base(environment), { signal }), api("GET", `${base(environment)}/pins`, { signal })]);
  const resource = el("select", { name: "resource", id: "pick-resource" },
    pins.map((pin) => el("option", { value: pin.id }, pin.resource)));
  const kind = el("select", { name: "kind", id: "pick-kind" }, KINDS.map((name) => el("option", { value: name }, name)));
  const levels = (info.hierarchy_levels || []).map((level) =>
    el("input", { name: `level-${level}`, "data-level": level, placeholder: "(empty: above)", size: 14 }));
  const form = el("form", { class: "actions picker", id: "pick-document", onsubmit: (event) => {
    event.preventDefault();
    // a level is taken only under the one above it: fill nodes to edit a node's document
    const path = [];
    for (const input of levels) {
      if (!input.value.trim()) break;
      path.push(input.dataset.level, input.value.trim());
    }
    location.hash = editPage(environment, session.id, kind.value, resource.value, path);
  } },
  el("label", {}, "Data source ", resource), el("label", {}, "Kind ", kind),
  levels.map((input) => el("label", {}, `${input.dataset.level} `, input)),
  el("button", { type: "submit" }, "Edit"));
  if (!pins.length) return el("p", { class: "muted" }, "The environment uses no data source yet.");
  return el("section", { id: "edit-a-document" }, el("h2", {}, "Stage a document"), form);
}

function deployedLinks(environment, session) {
  return el("section", { id: "deployed" },
    el("p", { class: "ok" }, `Deployed in revision ${session.revision} on ${when(session.deployed)}.`),
    el("ul", {}, (session.documents || []).map((entry) => {
      const document = entry.document || {};
      return el("li", {}, label(document), " ", document.type === "configdb"
        ? el("a", { href: historyPage(environment, document.kind, document.resource, levelsOf(document.level)),
          class: "history-link" }, "history") : null);
    })));
}

function conflictBox(message, conflicts) {
  return el("div", { class: "error conflict", role: "alert", id: "conflict" },
    el("p", {}, message),
    el("ul", {}, conflicts.map((conflict) => el("li", {}, conflictLine(conflict)))));
}

async function drawSession(view, [rawEnvironment, rawSession], signal) {
  const environment = decodeURIComponent(rawEnvironment);
  const id = decodeURIComponent(rawSession);
  const session = await loadSession(environment, id, signal);
  const status = el("div", { class: "status", id: "session-status" });
  const redraw = async (notice) => {
    const fresh = el("div", { class: "page" });
    await drawSession(fresh, [rawEnvironment, rawSession], signal);
    if (notice) fresh.querySelector("#session-status").prepend(notice);
    fill(view, ...fresh.childNodes);
  };
  add(view,
    el("h1", {}, "Session ", el("span", { class: "mono" }, shortId(session.id)), " ", stateBadge(session.state)),
    breadcrumbs(environment, el("span", { class: "mono" }, shortId(session.id))),
    el("table", { class: "fields" }, el("tbody", {},
      [["Session", el("span", { class: "mono" }, session.id)], ["Owner", session.user_id],
        ["State", el("span", { id: "session-state" }, session.state)], ["Opened", when(session.created)],
        ["Opened at revision", session.version],
        session.state === "open" ? ["Expires", when(session.expires)] : ["Last change", when(session.updated)]]
        .map(([name, value]) => el("tr", {}, el("th", {}, name), el("td", {}, value))))),
    status);
  if (session.state === "invalid") {
    add(status, conflictBox("This session is invalid: documents it stages changed since it was opened.",
      session.conflicts || []));
  }
  if (session.state === "deployed") {
    add(view, deployedLinks(environment, session));
    return;
  }
  if (session.state !== "open" && session.state !== "invalid") {
    add(view, el("p", { class: "muted" }, `This session is ${session.state}: nothing it staged will be deployed.`));
    return;
  }
  const actions = el("div", { class: "actions", id: "session-actions" });
  if (mayStage(session)) {
    const deploy = el("button", { class: "primary", id: "deploy", type: "button", onclick: async () => {
      deploy.disabled = true;
      fill(status, el("p", { class: "muted" }, "Deploying…"));
      try {
        await api("POST", `${sessionPath(environment, id)}/deploy`);
        await redraw();
      } catch (error) {
        if (error.name === "AbortError") return;
        if (error instanceof ApiError && error.status === 409) {
          // the session is invalid now: draw it anew (its state, the conflicts it keeps) under the 409's message
          const refused = el("p", { class: "error", id: "deploy-refused" }, `Deploy refused: ${error.message}`);
          await redraw(refused).catch(() => fill(status, conflictBox(error.message, error.errors)));
        } else {
          fill(status, errorBox(error));
          deploy.disabled = false;
        }
      }
    } }, "Deploy");
    add(actions, deploy);
  }
  if (mayAbandon(session)) {
    const confirm = el("div", { class: "confirm", id: "confirm-abandon", hidden: true },
      el("span", {}, isOwner(session) ? "Abandon this session? What it stages is dropped."
        : `Abandon ${session.user_id}'s session? What it stages is dropped.`),
      el("button", { class: "danger", id: "abandon-yes", type: "button", onclick: async () => {
        try {
          await api("DELETE", sessionPath(environment, id));
          await redraw();
        } catch (error) {
          if (error.name !== "AbortError") fill(status, errorBox(error));
        }
      } }, "Yes, abandon it"),
      el("button", { type: "button", id: "abandon-no", onclick: () => { confirm.hidden = true; } }, "Keep it"));
    add(actions, el("button", { class: "danger", id: "abandon", type: "button",
      onclick: () => { confirm.hidden = false; } }, "Abandon"), confirm);
  }
  if (actions.childNodes.length) add(view, actions);
  add(view, await diffSection(environment, session, signal));
  if (mayStage(session)) add(view, await documentPicker(environment, session, signal));
}

// -- #/environments/<id>/sessions/<session>/edit/<kind>/<resource>[/<levels>] -----------------------------

/** Where the first JSON syntax error of `text` is, and what was expected there; null when it parses. The
 * browser's own message does not always give a position, so the editor finds it itself (only after
 * JSON.parse failed). */
export function syntaxError(text) {
  let at = 0;
  const number = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
  const fail = (expected) => { throw { at, expected }; };
  const space = () => { while (at < text.length && " \t\n\r".includes(text[at])) at++; };
  const word = (literal) => { if (text.startsWith(literal, at)) at += literal.length; else fail("a value"); };
  const string = () => {
    at++;
    while (at < text.length) {
      const c = text[at];
      if (c === '"') { at++; return; }
      if (c === "\\") {
        const next = text[at + 1];
        if (next === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(at + 2, at + 6))) at += 6;
        else if (next !== undefined && '"\\/bfnrt'.includes(next)) at += 2;
        else { at++; fail("an escape sequence"); }
      } else if (c < " ") fail("no control character (a line break) inside a string");
      else at++;
    }
    fail('the end of the string (")');
  };
  const value = (depth) => {
    if (depth > 200) fail("less nesting");
    space();
    const c = text[at];
    if (c === "{") {
      at++; space();
      if (text[at] === "}") { at++; return; }
      for (;;) {
        space();
        if (text[at] !== '"') fail("a property name in double quotes");
        string(); space();
        if (text[at] !== ":") fail("':'");
        at++; value(depth + 1); space();
        if (text[at] === ",") { at++; continue; }
        if (text[at] === "}") { at++; return; }
        fail("',' or '}'");
      }
    }
    if (c === "[") {
      at++; space();
      if (text[at] === "]") { at++; return; }
      for (;;) {
        value(depth + 1); space();
        if (text[at] === ",") { at++; continue; }
        if (text[at] === "]") { at++; return; }
        fail("',' or ']'");
      }
    }
    if (c === '"') return string();
    if (c === "t") return word("true");
    if (c === "f") return word("false");
    if (c === "n") return word("null");
    number.lastIndex = at;
    if (number.test(text)) { at = number.lastIndex; return; }
    fail("a value");
  };
  try {
    value(0); space();
    if (at < text.length) fail("the end of the document");
    return null;
  } catch (error) {
    if (error.at === undefined) throw error;
    const before = text.slice(0, error.at).split("\n");
    return { offset: error.at, line: before.length, column: before[before.length - 1].length + 1,
      expected: error.expected };
  }
}

async function drawEditor(view, [rawEnvironment, rawSession, rawKind, rawResource, rawLevels], signal) {
  const environment = decodeURIComponent(rawEnvironment);
  const id = decodeURIComponent(rawSession);
  const kind = decodeURIComponent(rawKind);
  const resource = decodeURIComponent(rawResource);
  const levels = (rawLevels || "").split("/").filter(Boolean).map(decodeURIComponent);
  if (levels.length % 2) throw new Error(`Levels come in pairs (level/value): ${levels.join("/")}`);
  const path = documentPath(environment, levels, resource, kind);
  const [session, definition] = await Promise.all([
    loadSession(environment, id, signal), api("GET", `/config/resource_definitions/${seg(resource)}`, { signal })]);
  const where = levels.length ? "/" + levels.join("/") + "/" : "/";
  const back = sessionHash(environment, id);
  add(view,
    el("h1", {}, `Edit the ${kind} of ${definition.name} at ${where}`),
    breadcrumbs(environment, el("a", { href: back, class: "mono" }, shortId(id)), " / edit"));
  if (!mayStage(session)) {
    add(view, el("p", { class: "error", id: "not-editable" }, session.state !== "open"
      ? `Session ${shortId(id)} is ${session.state}: nothing more can be staged in it.`
      : "Only the session's owner stages into it."));
    return;
  }
  // raw, not effective: the document stored at this level, with what the session already staged over it
  const answer = await request("GET", path, { headers: { [HEADER]: id }, signal });
  const etag = answer.headers.get("ETag");
  const editor = el("textarea", { class: "editor", id: "editor", name: "document", spellcheck: "false",
    "aria-label": "The document, JSON" });
  // a draft is kept in the tab while it is typed: a session that ends before Stage signs in again and finds it here
  const draftKey = `nailgun-console-draft ${id} ${path}`;
  editor.value = sessionStorage.getItem(draftKey) ?? JSON.stringify(answer.data, null, 2);
  editor.addEventListener("input", () => sessionStorage.setItem(draftKey, editor.value));
  const problems = el("div", { id: "editor-errors" });
  const stage = el("button", { class: "primary", id: "stage", type: "submit" }, "Stage");
  const form = el("form", { id: "editor-form", onsubmit: async (event) => {
    event.preventDefault();
    fill(problems);
    let data;
    try {
      data = JSON.parse(editor.value);
    } catch (error) {
      const found = syntaxError(editor.value);
      add(problems, el("p", { class: "error syntax", role: "alert" }, found
        ? `JSON syntax error at line ${found.line}, column ${found.column}: expected ${found.expected}.`
        : `JSON syntax error: ${error.message}`));
      if (found) { editor.focus(); editor.setSelectionRange(found.offset, found.offset + 1); }
      return;
    }
    if (data === null || typeof data !== "object" || Array.isArray(data)) {
      add(problems, el("p", { class: "error syntax", role: "alert" }, "The document must be a JSON object ({...})."));
      return;
    }
    stage.disabled = true;
    const headers = { [HEADER]: id };
    if (etag) headers["If-Match"] = etag;
    try {
      await api("PUT", path, { body: JSON.stringify(data), headers });
      sessionStorage.removeItem(draftKey);
      location.hash = back;
    } catch (error) {
      if (error.name === "AbortError") return;
      // a session deployed or abandoned meanwhile (another tab, an admin) takes no more changes
      const ended = error.errors.find((item) => item && item.state && item.state !== "open");
      stage.disabled = Boolean(ended);
      const box = errorBox(error);
      box.classList.add("api");
      if (error.status === 412) add(box, el("p", {}, "The document changed since this page read it: reload it."));
      if (ended) add(box, el("p", {}, "Open a new session from ", el("a", { href: sessionsHash(environment) }, "the sessions"), " to stage a change."));
      add(problems, box);
    }
  } },
  editor, problems,
  el("div", { class: "actions" }, stage, el("a", { href: back, id: "cancel", class: "button",
    onclick: () => sessionStorage.removeItem(draftKey) }, "Cancel"),
    el("span", { class: "muted" }, `Staged in session ${shortId(id)}; nothing is deployed until the session is.`)));
  add(view, form);
}

export const routes = [
  [/^#\/environments\/([^/]+)\/sessions\/?$/, drawSessions],
  [/^#\/environments\/([^/]+)\/sessions\/([^/]+)\/?$/, drawSession],
  [/^#\/environments\/([^/]+)\/sessions\/([^/]+)\/edit\/([^/]+)\/([^/]+)(?:\/(.*?))?\/?$/, drawEditor],
];
