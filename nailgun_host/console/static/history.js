// History: a document's versions (author, time, changed keys), a side-by-side diff of any two, revert (writers
// only, after a confirmation step in the page), and the environment's change feed, live (long polls), below it
// and on a page of its own.
import { add, api, context, el, errorBox, fill, request, table, when } from "./console.js";
import {
  MASK, crumbs, displayLevels, documentPath, effectiveHash, feedHash, historyHash, levelsFromDisplay, parseLevels,
  sessionHash, sessionsHash, shortId,
} from "./environments.js";

/** How long one feed request waits for a change (seconds; the API holds at most FEED.max_wait). */
const FEED_WAIT = 20;
/** Entries a feed shows at most (the oldest go). */
const FEED_ROWS = 300;
/** Revisions before the current one a feed shows when it opens. */
const FEED_BACKLOG = 30;
/** Beyond this many lines on both sides a diff marks the changed middle whole rather than matching lines (cost). */
const DIFF_CELLS = 4e6;

const sleep = (ms, signal) => new Promise((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
});

// -- the live change feed ------------------------------------------------------------------------------------

function feedRow(environmentId, change, fresh) {
  const segments = levelsFromDisplay(change.level);
  const name = change.resource_name ?? `#${change.resource}`;
  return el("tr", { class: fresh ? "new" : null, dataset: { revision: change.revision } },
    [String(change.revision),
      change.change === "pin" ? name : el("a", { href: historyHash(environmentId, change.kind, change.resource, segments) }, name),
      change.change === "pin" ? "" : change.level, change.change === "pin" ? "" : change.kind, change.change,
      change.version === null || change.version === undefined ? "" : String(change.version),
      change.author || "", change.session === null || change.session === undefined ? ""
        : el("a", { class: "session-link", title: String(change.session),  // a deployed session is reached from here
          href: sessionHash(environmentId, change.session) }, shortId(change.session)),
      when(change.created)].map((cell) => el("td", {}, cell)));
}

/**
 * The environment's change feed, newest first, kept up to date by long polls (GET .../changes?since=R&wait=20)
 * until `signal` aborts; resolves once the recent entries are drawn. `onChange(change)` is called for each
 * entry that arrives after that.
 */
export async function liveFeed(environmentId, signal, { onChange } = {}) {
  const base = `/config/environments/${encodeURIComponent(environmentId)}/changes`;
  const { revision } = await api("GET", `/config/environments/${encodeURIComponent(environmentId)}`, { signal });
  const first = await api("GET", `${base}?since=${Math.max(0, revision - FEED_BACKLOG)}`, { signal });
  const body = el("tbody");
  const status = el("p", { class: "muted feed-status", role: "status" }, `Following the changes after revision ${first.revision}…`);
  const prependChanges = (changes, fresh) => {
    for (const change of changes) {
      body.prepend(feedRow(environmentId, change, fresh));
      if (fresh && onChange) onChange(change);
    }
    while (body.rows.length > FEED_ROWS) body.lastChild.remove();
  };
  prependChanges(first.changes, false);
  const empty = el("p", { class: "muted feed-empty", hidden: first.changes.length > 0 }, "No change yet.");
  const changesTable = feedTable(body, { hidden: !first.changes.length });

  (async function follow(since) {
    let backoff = 1000;
    while (!signal.aborted) {
      try {
        const answer = await request("GET", `${base}?since=${since}&wait=${FEED_WAIT}`, { signal });
        backoff = 1000;
        const feed = answer.data;
        if (feed.truncated) status.textContent = "Entries were pruned before they could be shown: reload the page for the current state.";
        if (feed.changes.length) {
          empty.hidden = true;
          changesTable.hidden = false;
          prependChanges(feed.changes, true);
        }
        since = Math.max(since, feed.revision);
        if (!feed.truncated) status.textContent = `Following the changes after revision ${since}…`;
        // the server holds no more waiting requests (FEED.thread_waiters): ask again in a while, not at once
        if (answer.headers.get("X-Feed-Waited") === "0" && !feed.changes.length) await sleep(2000, signal);
      } catch (error) {
        // aborted: the page was left; 401: the session ended, and the sign-in form is shown
        if (signal.aborted || error.name === "AbortError" || error.status === 401) return;
        status.textContent = `The feed is out of reach (${error.message}); trying again in ${backoff / 1000} s.`;
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, 30000);
      }
    }
  })(first.revision);

  return el("section", { class: "feed", id: "feed" }, status, empty, changesTable);
}

function feedTable(body, { hidden = false } = {}) {
  return el("table", { class: "feed", hidden },
    el("thead", {}, el("tr", {}, ["Revision", "Data source", "Level", "Kind", "Change", "Version", "Author", "Session", "Time"]
      .map((heading) => el("th", {}, heading)))), body);
}

async function feedPage(view, [rawId], signal) {
  const environmentId = decodeURIComponent(rawId);
  const feed = await liveFeed(environmentId, signal);
  add(view, crumbs(environmentId, el("span", {}, "change feed")),
    el("h1", {}, `Change feed of environment ${environmentId}`),
    el("p", { class: "hint" }, "New changes appear at the top as they are made; follow one to its document's history."),
    feed);
}

// -- a side-by-side diff -------------------------------------------------------------------------------------

/** A value with its objects' keys in order, so that equal documents print equal. */
function sorted(value) {
  if (Array.isArray(value)) return value.map(sorted);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sorted(value[key])]));
  }
  return value;
}

const linesOf = (document) => JSON.stringify(sorted(document), null, 2).split("\n");

/** The lines of `a` and `b` as [kind, line] with kind "same", "removed" or "added" (a longest common subsequence). */
export function lineDiff(a, b) {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length, endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
  const ops = a.slice(0, start).map((line) => ["same", line]);
  const midA = a.slice(start, endA), midB = b.slice(start, endB);
  const n = midA.length, m = midB.length;
  if (n * m > DIFF_CELLS) {
    ops.push(...midA.map((line) => ["removed", line]), ...midB.map((line) => ["added", line]));
  } else {
    // lengths[i * (m + 1) + j]: the longest common subsequence of midA[i:] and midB[j:]
    const lengths = new Uint32Array((n + 1) * (m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lengths[i * (m + 1) + j] = midA[i] === midB[j] ? lengths[(i + 1) * (m + 1) + j + 1] + 1
          : Math.max(lengths[(i + 1) * (m + 1) + j], lengths[i * (m + 1) + j + 1]);
      }
    }
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && midA[i] === midB[j]) { ops.push(["same", midA[i]]); i++; j++; }
      else if (j < m && (i === n || lengths[i * (m + 1) + j + 1] >= lengths[(i + 1) * (m + 1) + j])) ops.push(["added", midB[j++]]);
      else ops.push(["removed", midA[i++]]);
    }
  }
  ops.push(...a.slice(endA).map((line) => ["same", line]));
  return ops;
}

/** Rows of two columns: unchanged lines side by side, a run of removed lines next to the run added in its place. */
function sideBySide(ops) {
  const rows = [];
  for (let k = 0; k < ops.length;) {
    if (ops[k][0] === "same") { rows.push([ops[k][1], ops[k][1], "same"]); k++; continue; }
    const removed = [], added = [];
    while (k < ops.length && ops[k][0] !== "same") (ops[k][0] === "removed" ? removed : added).push(ops[k++][1]);
    for (let r = 0; r < Math.max(removed.length, added.length); r++) rows.push([removed[r], added[r], "changed"]);
  }
  return rows;
}

function line(text, kind) {
  if (text === undefined) return el("span", { class: "line blank" }, " ");
  const classes = ["line", kind, text.includes(JSON.stringify(MASK)) ? "secret" : ""].filter(Boolean).join(" ");
  return el("span", { class: classes }, text);
}

function diffView(fromVersion, toVersion, from, to, patch) {
  const rows = sideBySide(lineDiff(linesOf(from), linesOf(to)));
  return el("div", { id: "diff-view" },
    el("div", { class: "diff" },
      el("div", { class: "diff-from" }, el("h3", {}, `version ${fromVersion}`),
        el("pre", {}, rows.map(([left, right, kind]) => line(left, kind === "changed" && left !== undefined ? "removed" : null)))),
      el("div", { class: "diff-to" }, el("h3", {}, `version ${toVersion}`),
        el("pre", {}, rows.map(([left, right, kind]) => line(right, kind === "changed" && right !== undefined ? "added" : null))))),
    el("h3", {}, "Changes (JSON patch)"),
    patch.length ? el("ul", { class: "patch" }, patch.map((operation) => el("li", { class: "mono" },
      `${operation.op} ${operation.path}`, "value" in operation ? ` = ${JSON.stringify(operation.value)}` : "")))
      : el("p", { class: "muted" }, "The two versions are equal."));
}

// -- a document's history ------------------------------------------------------------------------------------

async function historyPage(view, [rawId, kind, rawResource, rawLevels], signal) {
  const environmentId = decodeURIComponent(rawId);
  const resource = decodeURIComponent(rawResource);
  const segments = parseLevels(rawLevels);
  const where = displayLevels(segments);
  const path = documentPath(environmentId, segments, resource, kind);
  const writer = context.may("nailgun:write");
  let name = resource, drawn = false;
  // a change of this document (a write elsewhere, a session's deploy) shows as a new version at once
  const concerns = (change) => drawn && change.level === where && change.kind === kind
    && (change.resource_name === name || String(change.resource) === resource);
  const [definition, feed] = await Promise.all([
    api("GET", `/config/resource_definitions/${encodeURIComponent(resource)}`, { signal }).catch(() => null),
    liveFeed(environmentId, signal, {
      onChange: (change) => {
        if (concerns(change)) refresh().catch((error) => { if (error.name !== "AbortError") fill(message, errorBox(error)); });
      },
    })]);
  if (definition) name = definition.name;

  const versionsBox = el("section", { id: "versions" });
  const diffBox = el("section", { id: "diff" });
  const confirmBox = el("div", { id: "revert-confirm", class: "actions", hidden: true });
  const message = el("div", { id: "history-message" });
  const documents = new Map();  // version -> its data, as this identity reads it
  let versions = [], fromVersion = null, toVersion = null, asked = 0;

  const version = (number) => {
    if (!documents.has(number)) documents.set(number, api("GET", `${path}?version=${number}`, { signal }));
    return documents.get(number);
  };

  async function compare() {
    if (fromVersion === null || toVersion === null) {
      fill(diffBox, el("p", { class: "muted" }, "Two versions are needed for a diff."));
      return;
    }
    const ask = ++asked;  // the last choice wins over slower answers to earlier ones
    const [from, to, patch] = await Promise.all([version(fromVersion), version(toVersion),
      api("GET", `${path}/diff?from=${fromVersion}&to=${toVersion}`, { signal })]);
    if (ask === asked) fill(diffBox, el("h2", {}, `Diff of versions ${fromVersion} and ${toVersion}`), diffView(fromVersion, toVersion, from, to, patch));
  }

  const choice = (group, number) => el("input", {
    type: "radio", name: group, value: number, checked: (group === "from" ? fromVersion : toVersion) === number,
    "aria-label": `${group} version ${number}`,
    onchange() {
      if (group === "from") fromVersion = number; else toVersion = number;
      compare().catch((error) => fill(diffBox, errorBox(error)));
    },
  });

  function askRevert(number) {
    confirmBox.hidden = false;
    fill(confirmBox,
      el("span", {}, `Revert the ${kind} of ${name} at ${where} to version ${number}? A new version equal to it is written.`),
      el("button", {
        type: "button", class: "danger", id: "confirm-revert", async onclick(event) {
          event.target.disabled = true;
          const before = versions.length ? versions[versions.length - 1].version : null;
          try {
            const written = await api("POST", `${path}/revert`, { body: { version: number }, signal });
            confirmBox.hidden = true;
            fill(message, el("p", { class: "ok", role: "status" }, written.version === before
              ? `Version ${before} already equals version ${number}: nothing was written.`
              : `Reverted: version ${written.version} equals version ${number}.`));
            await refresh();
          } catch (error) {
            if (error.name !== "AbortError") add(confirmBox, errorBox(error));
            event.target.disabled = false;
          }
        },
      }, `Revert to version ${number}`),
      el("button", { type: "button", id: "cancel-revert", onclick() { confirmBox.hidden = true; } }, "Cancel"));
  }

  function drawVersions() {
    const current = versions.length ? versions[versions.length - 1].version : null;
    const headings = ["From", "To", "Version", "Revision", "Time", "Author", "Changed keys", ...(writer ? [""] : [])];
    fill(versionsBox, el("h2", {}, "Versions"), versions.length ? table(headings, [...versions].reverse().map((item) => [
      choice("from", item.version), choice("to", item.version), String(item.version), String(item.revision),
      when(item.created_at), item.author || "", el("span", { class: "mono" }, (item.changed_keys || []).join(", ")),
      ...(writer ? [item.version === current ? el("span", { class: "muted" }, "current")
        : el("button", { type: "button", class: "revert", dataset: { version: item.version }, onclick: () => askRevert(item.version) },
          "Revert…")] : [])]), { id: "versions-table" })
      : el("p", { class: "muted" }, "No version: nothing was ever written here."));
  }

  async function refresh() {
    const previous = versions.length ? versions[versions.length - 1].version : null;
    const previousVersions = versions;
    versions = await api("GET", `${path}/history`, { signal });
    const numbers = versions.map((item) => item.version);
    const last = numbers.length ? numbers[numbers.length - 1] : null;
    // a diff of the newest two versions keeps showing the newest two; one ending at the newest follows it
    const beforeLast = numbers.length > 1 ? numbers[numbers.length - 2] : null;
    const lastTwo = toVersion === previous && fromVersion !== null && fromVersion === previousVersions.at(-2)?.version;
    if (toVersion === null || toVersion === previous || !numbers.includes(toVersion)) toVersion = last;
    if (fromVersion === null || lastTwo || !numbers.includes(fromVersion)) fromVersion = beforeLast;
    drawVersions();
    await compare();
  }

  await refresh();
  drawn = true;
  const other = kind === "values" ? "overrides" : "values";
  add(view, crumbs(environmentId, el("a", { href: effectiveHash(environmentId, segments) }, `effective values at ${where}`),
    el("span", {}, "history")),
  el("h1", {}, `History of the ${kind} of ${name} at ${where}`),
  el("p", { class: "actions" },
    el("a", { href: historyHash(environmentId, other, resource, segments) }, `${other} at ${where}`),
    writer ? el("a", { href: sessionsHash(environmentId) }, "Edit in a session") : null),
  message, versionsBox, confirmBox, diffBox,
  el("h2", {}, "Changes of the environment, live"), el("p", { class: "actions" }, el("a", { href: feedHash(environmentId) }, "the feed on its own page")),
  feed);
}

export const routes = [
  [/^#\/environments\/([^/]+)\/history\/(values|overrides)\/([^/]+)(?:\/(.*))?$/, historyPage],
  [/^#\/environments\/([^/]+)\/feed\/?$/, feedPage],
];
