// Environments: the list, one environment (components, data sources and pins, levels, the level values it has
// documents at, a linked environment's nodes), and the effective values at a level as a tree where each leaf says
// which level and kind it comes from (show_lookup).
import { add, api, context, el, errorBox, fill, request, table } from "./console.js";

/** The mask the API puts in place of each secret value for an identity without nailgun:read_secrets. */
export const MASK = "<secret>";
/** The change feed's largest page (`?limit=`), to read an environment's documents in as few requests as can be. */
const FEED_PAGE = 5000;
/** At most this many feed pages for the environment page (an environment beyond that is drawn from what they hold). */
const FEED_PAGES = 4;

// -- levels: a hash's `nodes/5` <-> the segments ["nodes", "5"] <-> the API's `/nodes/5/` --------------------

/** The decoded segments of the raw (percent-encoded) `<levels>` of a hash; an Error unless they pair up. */
export function parseLevels(raw) {
  const segments = (raw || "").split("/").filter((segment) => segment !== "").map(decodeURIComponent);
  if (segments.length % 2) throw new Error(`Levels come in pairs (level/value): ${segments.join("/")}`);
  return segments;
}

/** The segments as the API and the change feed show a level: `/` or `/nodes/5/`. */
export const displayLevels = (segments) => (segments.length ? `/${segments.join("/")}/` : "/");

/** The segments of a level as the API shows it (`/nodes/5/`). */
export const levelsFromDisplay = (display) => (display || "").split("/").filter((segment) => segment !== "");

const encoded = (segments) => segments.map(encodeURIComponent).join("/");

/** The API path of one document (values or overrides) of a data source at a level. */
export function documentPath(environmentId, segments, resource, kind) {
  const levels = segments.length ? `${encoded(segments)}/` : "";
  return `/config/environments/${encodeURIComponent(environmentId)}/${levels}resources/${encodeURIComponent(resource)}/${kind}`;
}

export const environmentHash = (environmentId) => `#/environments/${encodeURIComponent(environmentId)}`;
export const effectiveHash = (environmentId, segments) =>
  `${environmentHash(environmentId)}/effective${segments.length ? "/" + encoded(segments) : ""}`;
export const historyHash = (environmentId, kind, resource, segments) =>
  `${environmentHash(environmentId)}/history/${kind}/${encodeURIComponent(resource)}${segments.length ? "/" + encoded(segments) : ""}`;
export const sessionsHash = (environmentId) => `${environmentHash(environmentId)}/sessions`;
export const sessionHash = (environmentId, session) => `${sessionsHash(environmentId)}/${encodeURIComponent(session)}`;
/** A session's id as pages show it: its first 8 characters (the whole id is the link and its title). */
export const shortId = (id) => String(id).slice(0, 8);
export const feedHash = (environmentId) => `${environmentHash(environmentId)}/feed`;

/** Links back up: Environments › Environment N › ... */
export function crumbs(environmentId, ...rest) {
  return el("p", { class: "crumbs muted" }, el("a", { href: "#/environments" }, "Environments"), " › ",
    el("a", { href: environmentHash(environmentId) }, `Environment ${environmentId}`),
    rest.map((item) => [" › ", item]));
}

// -- the list ------------------------------------------------------------------------------------------------

async function list(view, groups, signal) {
  const environments = await api("GET", "/config/environments", { signal });
  add(view, el("h1", {}, "Environments"),
    environments.length ? table(["Environment", "Levels", "Revision", "Linked to a cluster", ""],
      environments.map((environment) => [
        el("a", { href: environmentHash(environment.id) }, `Environment ${environment.id}`),
        environment.hierarchy_levels.join(" / ") || "(environment only)",
        String(environment.revision), environment.linked ? "yes" : "no",
        [el("a", { href: effectiveHash(environment.id, []) }, "effective values"), " · ",
          el("a", { href: feedHash(environment.id) }, "change feed")]]), { id: "environments" })
      : el("p", { class: "muted" }, "No ConfigDB environment yet."));
}

// -- one environment -----------------------------------------------------------------------------------------

/**
 * The documents the environment holds, by level (`/nodes/5/` -> [{resource, resource_name, kind, revision}]), from
 * its change feed since revision 0: the last entry of each document says whether it is there (write) or not
 * (delete). One request for an environment of hundreds of nodes (the feed's pages are large), where asking each
 * node would be one request per node. `complete` is false when the feed was pruned (or is longer than we read).
 */
async function documentsByLevel(environmentId, revision, signal) {
  const last = new Map();
  let since = 0, truncated = false;
  for (let page = 0; page < FEED_PAGES && since < revision; page++) {
    const answer = await api("GET", `/config/environments/${encodeURIComponent(environmentId)}/changes?since=${since}&limit=${FEED_PAGE}`, { signal });
    truncated = truncated || answer.truncated;
    for (const change of answer.changes) {
      if (change.change === "pin") continue;
      last.set(`${change.level}\u0000${change.resource}\u0000${change.kind}`, change);
    }
    if (!answer.changes.length || answer.revision <= since) break;
    since = answer.revision;
  }
  const levels = new Map();
  for (const change of last.values()) {
    if (change.change !== "write") continue;
    if (!levels.has(change.level)) levels.set(change.level, []);
    levels.get(change.level).push(change);
  }
  return { levels, complete: !truncated && since >= revision };
}

/** A linked environment's nodes by id (one request for the whole cluster), or an empty map. */
async function clusterNodes(environment, signal) {
  if (!environment.linked) return new Map();
  const nodes = await api("GET", `/nodes?cluster_id=${encodeURIComponent(environment.id)}`, { signal });
  return new Map(nodes.map((node) => [String(node.id), node]));
}

/** The node a level names (its last pair is `nodes/<id>`), if the cluster has it. */
function nodeOf(segments, nodes) {
  const n = segments.length;
  return n >= 2 && segments[n - 2] === "nodes" ? nodes.get(segments[n - 1]) : undefined;
}

const nodeName = (node) => node.name || node.hostname || node.fqdn || `node-${node.id}`;

function documentLinks(environmentId, segments, documents) {
  const sorted = [...documents].sort((a, b) =>
    String(a.resource_name).localeCompare(String(b.resource_name)) || a.kind.localeCompare(b.kind));
  return el("span", { class: "documents" }, sorted.map((change, index) => [index ? ", " : "",
    el("a", { href: historyHash(environmentId, change.kind, change.resource, segments) },
      `${change.resource_name ?? change.resource} ${change.kind}`)]));
}

/** A form that opens the effective values at any level value, one field per level of the hierarchy. */
function levelForm(environment) {
  const problem = el("span", { class: "error", role: "alert", id: "level-problem" });
  const inputs = environment.hierarchy_levels.map((level) => el("input", { name: level, placeholder: level, size: 14 }));
  const form = el("form", {
    class: "actions", id: "level-form", onsubmit(event) {
      event.preventDefault();
      const segments = [];
      for (const [index, input] of inputs.entries()) {
        if (!input.value.trim()) break;  // a level value needs the values of the levels above it
        segments.push(environment.hierarchy_levels[index], input.value.trim());
      }
      // the API's paths take a level value as one segment
      const slashed = segments.filter((value, index) => index % 2 && value.includes("/"));
      if (slashed.length) {
        fill(problem, `A level value cannot hold "/": ${slashed.join(", ")}`);
        return;
      }
      location.hash = effectiveHash(environment.id, segments);
    },
  }, "Effective values at", inputs.map((input, index) => el("label", {}, `${environment.hierarchy_levels[index]} `, input)),
  el("button", { type: "submit" }, "Show"), problem);
  return form;
}

async function show(view, [rawId], signal) {
  const environmentId = decodeURIComponent(rawId);
  const path = `/config/environments/${encodeURIComponent(environmentId)}`;
  const [environment, components] = await Promise.all([
    api("GET", path, { signal }), api("GET", "/config/components", { signal })]);
  const nodes = await clusterNodes(environment, signal);
  const used = components.filter((component) => environment.components.includes(component.id));
  const componentOf = new Map();
  for (const component of used) {
    for (const definition of component.resource_definitions) componentOf.set(definition.name, component.name);
  }

  const levelsBox = el("section", { id: "level-values-box" },
    el("p", { class: "muted" }, "Reading the change feed for the level values…"),
    nodes.size ? levelTable(environment, new Map(), nodes) : null);
  add(view, crumbs(environment.id),
    el("h1", {}, `Environment ${environment.id}`),
    el("p", {}, "Revision ", el("strong", { id: "revision" }, String(environment.revision)),
      environment.linked ? [" · linked to ", el("a", { href: `#/clusters/${encodeURIComponent(environment.id)}` }, `cluster ${environment.id}`)] : " · not linked to a cluster"),
    el("p", { class: "actions" },
      el("a", { href: effectiveHash(environment.id, []) }, "Effective values (environment level)"),
      el("a", { href: sessionsHash(environment.id) }, "Sessions"),
      el("a", { href: feedHash(environment.id) }, "Live change feed")),

    el("h2", {}, "Components"),
    used.length ? el("ul", { id: "components" }, used.map((component) => el("li", {}, component.name)))
      : el("p", { class: "muted" }, "No component."),

    el("h2", {}, "Data sources"),
    environment.pins.length ? table(["Data source", "Component", "Pinned version", "Latest version", "Environment level"],
      environment.pins.map((pin) => [
        pin.resource, componentOf.get(pin.resource) || "",
        String(pin.version),
        pin.latest_version === pin.version ? String(pin.latest_version)
          : el("span", { class: "badge overrides", title: "a newer version exists: move the pin to use it" }, `${pin.latest_version} (newer)`),
        [el("a", { href: historyHash(environment.id, "values", pin.id, []) }, "values history"), " · ",
          el("a", { href: historyHash(environment.id, "overrides", pin.id, []) }, "overrides history")]]),
    { id: "data-sources" }) : el("p", { class: "muted" }, "No data source."),

    el("h2", {}, "Hierarchy levels"),
    el("p", { id: "levels" }, ["environment", ...environment.hierarchy_levels].join(" › ")),
    environment.hierarchy_levels.length ? levelForm(environment) : null,

    el("h2", {}, "Level values with documents"), levelsBox);
  // the documents by level come from the whole change feed, whose length is the environment's history, not its
  // size: the page is drawn without waiting for it (a linked environment's nodes are listed at once)
  documentsByLevel(environment.id, environment.revision, signal).then(({ levels, complete }) => {
    fill(levelsBox, complete ? "" : el("p", { class: "muted" },
      "The change feed does not reach back to the environment's first writes (pruned): level values written only before it may be missing."),
    levelTable(environment, levels, nodes));
  }, (error) => { if (error.name !== "AbortError") fill(levelsBox, errorBox(error)); });
}

function levelTable(environment, levels, nodes) {
  const rows = [...levels.entries()].map(([display, documents]) => ({ segments: levelsFromDisplay(display), display, documents }));
  const shown = new Set(rows.map((row) => row.display));
  // a linked environment's nodes the environment has no document for yet are levels all the same
  for (const node of nodes.values()) {
    const display = `/nodes/${node.id}/`;
    if (environment.hierarchy_levels.length === 1 && environment.hierarchy_levels[0] === "nodes" && !shown.has(display)) {
      rows.push({ segments: ["nodes", String(node.id)], display, documents: [] });
    }
  }
  rows.sort((a, b) => a.segments.length - b.segments.length
    || a.display.localeCompare(b.display, undefined, { numeric: true }));
  if (!rows.length) return el("p", { class: "muted" }, "No document yet.");
  const linked = environment.linked;
  const headings = ["Level", ...(linked ? ["Node", "Status"] : []), "Documents", "Last revision"];
  return table(headings, rows.map(({ segments, display, documents }) => {
    const node = nodeOf(segments, nodes);
    return [
      el("a", { href: effectiveHash(environment.id, segments), class: "level" }, display),
      ...(linked ? [node ? nodeName(node) : "", node ? node.status || "" : ""] : []),
      documents.length ? documentLinks(environment.id, segments, documents) : el("span", { class: "muted" }, "none"),
      documents.length ? String(Math.max(...documents.map((change) => change.revision))) : ""];
  }), { id: "level-values" });
}

// -- effective values at a level -----------------------------------------------------------------------------

/** Whether a value (a leaf's, masks of structured secrets included) holds the mask. */
function masked(value) {
  if (value === MASK) return true;
  if (value && typeof value === "object") return Object.values(value).some(masked);
  return false;
}

/** A `show_lookup` leaf: `[value, "/nodes/5/", "values"|"overrides"]`; objects are walked, anything else is a leaf. */
const isLeaf = (node) => Array.isArray(node);

function leafItem(environmentId, resource, key, [value, source, kind]) {
  const secret = masked(value);
  return el("li", { class: "leaf", dataset: { key } },
    el("span", { class: "key" }, key), ": ",
    el("span", { class: secret ? "value secret" : "value", title: secret ? "masked: reading secrets needs nailgun:read_secrets" : null },
      JSON.stringify(value)),
    el("a", { class: `source badge ${kind}`, href: historyHash(environmentId, kind, resource, levelsFromDisplay(source)),
      title: `the ${kind} of ${source}: its history` }, `${source} ${kind}`));
}

function tree(environmentId, resource, object) {
  const keys = Object.keys(object).sort();
  return el("ul", { class: "tree" }, keys.map((key) => isLeaf(object[key])
    ? leafItem(environmentId, resource, key, object[key])
    : el("li", {}, el("span", { class: "key" }, key), Object.keys(object[key]).length
      ? tree(environmentId, resource, object[key]) : el("span", { class: "muted" }, " {}"))));
}

async function effective(view, [rawId, rawLevels], signal) {
  const environmentId = decodeURIComponent(rawId);
  const segments = parseLevels(rawLevels);
  const pins = await api("GET", `/config/environments/${encodeURIComponent(environmentId)}/pins`, { signal });
  // one request per data source (a handful), whatever the number of nodes
  const answers = await Promise.all(pins.map((pin) =>
    request("GET", `${documentPath(environmentId, segments, pin.id, "values")}?effective&show_lookup`, { signal })));
  const where = displayLevels(segments);
  add(view, crumbs(environmentId, el("span", {}, `effective values at ${where}`)),
    el("h1", {}, `Effective values at ${where}`),
    el("p", { class: "hint" }, "Each value shows the level and kind it comes from; follow it to that document's history."),
    el("p", { class: "actions" },
      context.may("nailgun:write") ? el("a", { href: sessionsHash(environmentId), id: "edit-in-session" }, "Edit in a session") : null,
      el("a", { href: feedHash(environmentId) }, "Live change feed")));
  if (answers.some((answer) => answer.headers.get("X-Level-Unknown") === "true")) {
    add(view, el("p", { class: "muted", id: "level-unknown" },
      `The environment stores nothing at ${where}: these are the values of the levels above it.`));
  }
  if (answers.some((answer) => answer.headers.get("X-Secrets-Masked") === "true")) {
    add(view, el("p", { class: "secret", id: "masked-note" }, `Secret values read as ${MASK}: you may not read secrets.`));
  }
  if (!pins.length) add(view, el("p", { class: "muted" }, "The environment uses no data source."));
  pins.forEach((pin, index) => {
    const values = answers[index].data || {};
    add(view, el("section", { class: "data-source", dataset: { resource: pin.resource } },
      el("h2", {}, pin.resource, " ", el("span", { class: "badge" }, `version ${pin.version}`)),
      el("p", { class: "actions" },
        el("a", { href: historyHash(environmentId, "values", pin.id, segments) }, `values at ${where}: history`),
        el("a", { href: historyHash(environmentId, "overrides", pin.id, segments) }, `overrides at ${where}: history`)),
      Object.keys(values).length ? tree(environmentId, pin.id, values) : el("p", { class: "muted" }, "No value.")));
  });
}

export const routes = [
  [/^#\/environments\/?$/, list],
  [/^#\/environments\/([^/]+)\/?$/, show],
  [/^#\/environments\/([^/]+)\/effective(?:\/(.*))?$/, effective],
];
