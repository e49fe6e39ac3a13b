// The console's core: requests to the API under /ui/api/v1 with the CSRF token, DOM building without
// innerHTML (every value from the API becomes text), the identity and its rules, and the router that draws
// a page for each location hash (#/environments/1 ...). Each page module exports `routes`: [pattern, draw].
import * as environments from "./environments.js";
import * as history from "./history.js";
import * as sessions from "./sessions.js";
import * as upgrade from "./upgrade.js";

const API = "/ui/api/v1";
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content || "";
export const csrf = meta("csrf-token");

/** An answer of the API other than 2xx: its status, message and errors (the API's JSON error body). */
export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.errors = (body && body.errors) || [];
    this.body = body;
  }
}

/** The API's answer to `method path`: {data, status, headers}; an ApiError unless 2xx or 304. */
export async function request(method, path, { body, headers = {}, signal } = {}) {
  // a "." or ".." segment (from a crafted link) would take the request to another path of the API
  if (path.split("?")[0].split("/").some((segment) => [".", ".."].includes(decodeURIComponent(segment).trim()))) {
    throw new ApiError(400, { message: `Not a path of the API: ${path}` });
  }
  const init = { method, headers: { Accept: "application/json", ...headers }, credentials: "same-origin", signal };
  if (!["GET", "HEAD"].includes(method)) init.headers["X-CSRF-Token"] = csrf;
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers["Content-Type"] = init.headers["Content-Type"] || "application/json";
  }
  const response = await fetch(API + path, init);
  const text = await response.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch (error) { data = { message: text }; }
  }
  if (response.status === 401) {
    showSignIn("Your session has ended: sign in again.");
  }
  if (!response.ok && response.status !== 304) throw new ApiError(response.status, data);
  return { data, status: response.status, headers: response.headers };
}

/** The data of the API's answer to `method path` (see request). */
export async function api(method, path, options) {
  return (await request(method, path, options)).data;
}

/** An element: el("a", {href: "#/x", class: "c"}, "text", child, ...); strings become text nodes. */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  return add(node, ...children);
}

/** Appends `children` to `parent` as el() takes them: strings become text, arrays their items, and null, undefined
 * or false nothing (a DOM append would show them as "null"). The one way the pages add to an element. */
export function add(parent, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** Replaces what `parent` holds with `children` (taken as add() takes them). */
export function fill(parent, ...children) {
  parent.textContent = "";
  return add(parent, ...children);
}

/** A table of `rows` (arrays of cells) under `headings`. */
export function table(headings, rows, attributes = {}) {
  return el("table", attributes,
    el("thead", {}, el("tr", {}, headings.map((heading) => el("th", {}, heading)))),
    el("tbody", {}, rows.map((row) => el("tr", {}, row.map((cell) => el("td", {}, cell))))));
}

/** The message of an error for the page: the API's message and each of its errors. */
export function errorBox(error) {
  const errors = (error && error.errors) || [];
  return el("div", { class: "error", role: "alert" },
    el("p", {}, (error && error.message) || String(error)),
    errors.length ? el("ul", {}, errors.map((item) => el("li", {}, typeof item === "string" ? item : Object.entries(item)
      .map(([name, value]) => `${name}: ${typeof value === "string" ? value : JSON.stringify(value)}`).join(", ")))) : null);
}

/** A date of the API in the browser's locale, to the second. */
export function when(value) {
  if (!value) return "";
  const date = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : value + "Z");
  return Number.isNaN(date.getTime()) ? value : date.toLocaleString();
}

/** A value as compact JSON text. */
export const json = (value) => JSON.stringify(value);

// -- who is signed in ----------------------------------------------------------------------------------

export const context = { identity: null, may: () => false };

function showSignIn(message) {
  document.getElementById("app").hidden = true;
  document.getElementById("nav").hidden = true;
  document.getElementById("sign-out").hidden = true;
  document.getElementById("sign-in").hidden = false;
  if (message) document.getElementById("sign-in-error").textContent = message;
}

async function loadIdentity() {
  const identity = await api("GET", "/identity");
  context.identity = identity;
  context.may = (rule) => Boolean(identity.rules[rule]);
  document.getElementById("who").textContent = identity.authenticated
    ? `${identity.name} (${identity.roles.join(", ")})` : "authentication off";
  document.getElementById("sign-out").hidden = !identity.authenticated;
  document.getElementById("nav").hidden = false;
}

// -- the router ----------------------------------------------------------------------------------------

const home = [[/^#?\/?$/, () => { location.replace("#/environments"); }]];
const routes = [...home, ...environments.routes, ...history.routes, ...sessions.routes, ...upgrade.routes];
let current = null;

async function draw() {
  if (current) current.abort();
  const controller = current = new AbortController();
  const app = document.getElementById("app");
  document.body.dataset.ready = "";
  const hash = location.hash || "#/";  // raw: a page decodes each segment it takes (decodeURIComponent)
  for (const [pattern, page] of routes) {
    const match = hash.match(pattern);
    if (!match) continue;
    const view = el("div", { class: "page" });
    try {
      await page(view, match.slice(1), controller.signal);
    } catch (error) {
      if (error.name === "AbortError") return;
      // decodeURIComponent of a segment such as "%E0%A4%A" (a crafted or cut link)
      fill(view, errorBox(error instanceof URIError
        ? new Error(`The address has a malformed %-escape: ${hash}`) : error));
    }
    if (controller.signal.aborted) return;
    fill(app, view);
    document.body.dataset.ready = "1";
    performance.mark("console-ready");
    return;
  }
  fill(app, el("p", { class: "error" }, `No page at ${hash}`));
  document.body.dataset.ready = "1";
}

// a sign-in comes back to the page it was asked on (a session that ended while a page was open)
document.querySelector("#sign-in form").addEventListener("submit", (event) => {
  event.target.elements.next.value = location.hash;
});

async function start() {
  if (!document.getElementById("sign-in").hidden) return;
  try {
    await loadIdentity();
  } catch (error) {
    if (error.status !== 401) fill(document.getElementById("app"), errorBox(error));
    return;
  }
  window.addEventListener("hashchange", draw);
  await draw();
}

start();
