// Clusters and their upgrades: every cluster with its upgrade relation (seed of / original of), and one
// cluster with the nodes on either side of its upgrade, the task that moved each node to the seed, the
// progress of a move while it runs, and (for whoever may) cloning into a seed and moving nodes to it.
import { add, api, context, el, errorBox, fill, table, when } from "./console.js";

const ACTIVE = ["pending", "running"];
//: the statuses a node may leave its original in (the assign handler's rule: docs/api/upgrade.md)
const MOVABLE = ["ready", "provisioned", "error"];
//: how often a running move is asked about (ms)
const POLL = 1000;

const clusterLink = (id, text) => el("a", { href: `#/clusters/${encodeURIComponent(id)}` }, text || `Cluster ${id}`);
const badge = (status) => el("span", { class: `badge status-${status}` }, status);

function releaseName(releases, id) {
  const release = releases.find((item) => item.id === id);
  return release ? `${release.name} (${release.version})` : `release ${id}`;
}

/** {cluster id: {role: "seed of" | "original of", other: id}} from the orig ↔ seed pairs. */
function relationsById(relations) {
  const byId = {};
  for (const { orig_cluster_id: orig, seed_cluster_id: seed } of relations) {
    byId[orig] = { orig, seed, role: "original of", other: seed };
    byId[seed] = { orig, seed, role: "seed of", other: orig };
  }
  return byId;
}

/** The ConfigDB environments linked to clusters, by id; none when ConfigDB is not there to ask. */
async function linkedEnvironments(signal) {
  try {
    const environments = await api("GET", "/config/environments", { signal });
    return new Set(environments.filter((environment) => environment.linked).map((environment) => environment.id));
  } catch (error) {
    if (error.name === "AbortError") throw error;
    return new Set();
  }
}

// -- #/clusters ----------------------------------------------------------------------------------------

async function list(view, _groups, signal) {
  // five requests whatever the number of clusters: a Fuel master has tens of them and hundreds of nodes
  const [clusters, nodes, releases, relations, environments] = await Promise.all([
    api("GET", "/clusters", { signal }), api("GET", "/nodes", { signal }), api("GET", "/releases", { signal }),
    api("GET", "/upgrade/relations", { signal }), linkedEnvironments(signal)]);
  const counts = {};
  for (const node of nodes) if (node.cluster_id !== null) counts[node.cluster_id] = (counts[node.cluster_id] || 0) + 1;
  const related = relationsById(relations);
  add(view, el("h1", {}, "Clusters and upgrades"));
  if (!clusters.length) {
    add(view, el("p", { class: "muted" }, "No cluster yet."));
    return;
  }
  add(view, table(["Cluster", "Name", "Release", "Status", "Nodes", "Upgrade", "ConfigDB"],
    clusters.map((cluster) => {
      const relation = related[cluster.id];
      return [clusterLink(cluster.id, String(cluster.id)), clusterLink(cluster.id, cluster.name),
        releaseName(releases, cluster.release_id), badge(cluster.status), String(counts[cluster.id] || 0),
        relation ? el("span", { class: "relation" }, `${relation.role} `, clusterLink(relation.other)) : "",
        environments.has(cluster.id)
          ? el("a", { href: `#/environments/${encodeURIComponent(cluster.id)}` }, `Environment ${cluster.id}`) : ""];
    }), { id: "clusters" }));
}

// -- #/clusters/<id> -----------------------------------------------------------------------------------

/** The task that moved a node into the seed. Tasks name their cluster, not their nodes, so: the seed's
 * provisioning task running while the node provisions, else the seed's latest provisioning task that had
 * started (null for a seed without one: nodes moved without reinstallation). */
function movingTask(node, moves) {
  if (node.status === "provisioning") return moves.find((task) => ACTIVE.includes(task.status)) || null;
  return moves.length ? moves[moves.length - 1] : null;
}

function taskCell(task) {
  if (!task) return el("span", { class: "muted" }, "—");
  return el("span", { class: "task", dataset: { task: task.id } }, taskText(task));
}

const taskText = (task) => [`${task.name} #${task.id}: `, badge(task.status), ` ${task.progress}%`];

function nodeRows(nodes, { moves, selectable, selected }) {
  return nodes.map((node) => {
    const cells = [String(node.id), node.name || "", node.hostname || "",
      [...node.roles, ...node.pending_roles.map((role) => `${role} (pending)`)].join(", "), badge(node.status)];
    if (moves) cells.push(taskCell(movingTask(node, moves)));
    if (selectable) {
      cells.unshift(el("input", { type: "checkbox", name: "node", value: node.id, "aria-label": `Node ${node.id}`,
        disabled: !MOVABLE.includes(node.status),
        onchange: (event) => { if (event.target.checked) selected.add(node.id); else selected.delete(node.id); } }));
    }
    return cells;
  });
}

function side(title, cluster, nodes, options, id) {
  const headings = ["Node", "Name", "Hostname", "Roles", "Status"];
  if (options.moves) headings.push("Moved by");
  if (options.selectable) headings.unshift("");
  return el("section", { id },
    el("h2", {}, `${title}: `, clusterLink(cluster.id, `${cluster.name} (${cluster.id})`), " ", badge(cluster.status)),
    nodes.length ? table(headings, nodeRows(nodes, options), { class: "nodes" }) : el("p", { class: "muted" }, "No node."));
}

/** An in-page confirmation in `place`: the question, then `act` on Confirm (its error shown there). */
function confirm(place, question, label, act) {
  const answer = el("div", { class: "confirm", role: "dialog" });
  const cancel = el("button", { type: "button", onclick: () => fill(place) }, "Cancel");
  const yes = el("button", { type: "button", class: "primary", onclick: async () => {
    yes.disabled = cancel.disabled = true;
    try {
      await act();
      fill(place);
    } catch (error) {
      if (error.name === "AbortError") return;
      fill(answer, errorBox(error), el("div", { class: "actions" }, cancel));
      cancel.disabled = false;
    }
  } }, label);
  add(answer, el("p", {}, question), el("div", { class: "actions" }, yes, cancel));
  fill(place, answer);
}

function cloneForm(cluster, releases) {
  const choices = releases.filter((release) => release.id !== cluster.release_id);
  const name = el("input", { name: "name", required: true, value: `${cluster.name}-upgrade` });
  const release = el("select", { name: "release_id" },
    choices.map((item) => el("option", { value: item.id }, `${item.name} (${item.version})`)));
  const place = el("div", { class: "confirmation" });
  const form = el("form", { id: "clone", onsubmit: (event) => {
    event.preventDefault();
    const chosen = release.selectedOptions[0];
    if (!chosen || !name.value.trim()) return;
    confirm(place, `Clone ${cluster.name} (${cluster.id}) into a new upgrade seed named "${name.value.trim()}" ` +
      `on ${chosen.textContent}?`, "Clone", async () => {
      const seed = await api("POST", `/clusters/${cluster.id}/upgrade/clone`,
        { body: { name: name.value.trim(), release_id: Number(release.value) } });
      location.hash = `#/clusters/${encodeURIComponent(seed.id)}`;
    });
  } }, el("h2", {}, "Clone into an upgrade seed"),
  choices.length ? [el("label", {}, "Seed name ", name), el("label", {}, "Release ", release),
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Clone into an upgrade seed"))]
    : el("p", { class: "muted" }, "No other release to clone into."));
  return [form, place];
}

/** The two sides of an upgrade, redrawn after a move; polls a running move until it ends or `signal` aborts. */
function upgradeView(relation, signal, { onClusters } = {}) {
  const columns = el("div", { class: "columns", id: "sides" });
  const progress = el("div", { id: "move-progress" });
  const actions = el("div", { id: "move" });
  const selected = new Set();
  let polling = false;

  // `known`: a cluster and its nodes the page has read already ({cluster, nodes}), not asked for again
  async function refresh(known = {}) {
    const ours = (clusterId) => known.cluster && known.cluster.id === clusterId;
    const [orig, seed, origNodes, seedNodes, tasks] = await Promise.all([
      ...[relation.orig, relation.seed].map((clusterId) => ours(clusterId) ? known.cluster
        : api("GET", `/clusters/${clusterId}`, { signal })),
      ...[relation.orig, relation.seed].map((clusterId) => ours(clusterId) ? known.nodes
        : api("GET", `/nodes?cluster_id=${clusterId}`, { signal })),
      api("GET", `/tasks?cluster_id=${relation.seed}`, { signal })]);
    const moves = tasks.filter((task) => task.name === "provision");
    const mayMove = context.may("nailgun:write");
    selected.clear();
    fill(columns,
      side("Original", orig, origNodes, { selectable: mayMove, selected }, "orig-side"),
      side("Upgrade seed", seed, seedNodes, { moves }, "seed-side"));
    const running = moves.find((task) => ACTIVE.includes(task.status));
    fill(actions, ...(mayMove ? moveForm(seed, origNodes, running) : []));
    if (onClusters) onClusters(orig, seed);
    if (running) follow(running);
    else fill(progress);
  }

  function showProgress(task) {
    for (const cell of columns.querySelectorAll(`.task[data-task="${task.id}"]`)) fill(cell, ...taskText(task));
    fill(progress, el("p", {}, `Moving: ${task.name} #${task.id} `, badge(task.status), ` ${task.progress}% `,
      el("progress", { max: 100, value: task.progress }), task.time_start ? ` since ${when(task.time_start)}` : ""));
  }

  async function follow(task) {
    showProgress(task);
    if (polling) return;
    polling = true;
    try {
      while (ACTIVE.includes(task.status)) {
        await new Promise((resolve) => setTimeout(resolve, POLL));
        if (signal.aborted) return;
        task = await api("GET", `/tasks/${task.id}`, { signal });
        showProgress(task);
      }
    } catch (error) {
      if (error.name !== "AbortError") fill(progress, errorBox(error));
      return;
    } finally {
      polling = false;
    }
    await refresh().catch((error) => { if (error.name !== "AbortError") fill(progress, errorBox(error)); });
  }

  /** The move form; its button waits while `running` (a move's task) runs. */
  function moveForm(seed, origNodes, running) {
    if (!origNodes.length) return [];
    const reprovision = el("input", { type: "checkbox", name: "reprovision", checked: true });
    const place = el("div", { class: "confirmation" });
    const button = el("button", { type: "button", id: "move-nodes", onclick: () => {
      const ids = [...selected].sort((a, b) => a - b);
      if (!ids.length) {
        fill(place, el("p", { class: "error" }, "Select the nodes to move in the original's column."));
        return;
      }
      confirm(place, `Move node${ids.length > 1 ? "s" : ""} ${ids.join(", ")} to the seed ${seed.name} (${seed.id})` +
        (reprovision.checked ? ", reinstalling " : " without reinstalling ") + (ids.length > 1 ? "them?" : "it?"), "Move", async () => {
        await api("POST", `/clusters/${seed.id}/upgrade/assign`,
          { body: { nodes_ids: ids, reprovision: reprovision.checked }, signal });
        await refresh();  // it follows the move's task while that runs
      });
    }, disabled: Boolean(running), title: running ? "a move is running" : null }, "Move nodes to the seed");
    return [el("div", { class: "actions" }, button,
      el("label", {}, reprovision, " reinstall (provision) the moved nodes")), place];
  }

  return { element: el("div", {}, progress, actions, columns), refresh };
}

async function cluster(view, [rawId], signal) {
  const id = decodeURIComponent(rawId);
  if (!/^[1-9][0-9]{0,9}$/.test(id)) {
    add(view, el("p", { class: "error" }, `No cluster ${id}: a cluster's id is a number.`));
    return;
  }
  // the cluster's nodes are asked at once, with or without an upgrade: one round trip fewer
  const [current, relations, releases, environments, nodes] = await Promise.all([
    api("GET", `/clusters/${id}`, { signal }), api("GET", `/upgrade/relations?cluster_id=${id}`, { signal }),
    api("GET", "/releases", { signal }), linkedEnvironments(signal),
    api("GET", `/nodes?cluster_id=${id}`, { signal })]);
  const relation = relationsById(relations)[current.id];
  add(view, el("h1", {}, `Cluster ${current.id}: ${current.name}`),
    table(["Release", "Status", "Upgrade", "ConfigDB"], [[releaseName(releases, current.release_id),
      el("span", { id: "cluster-status" }, badge(current.status)),
      relation ? el("span", { class: "relation" }, `${relation.role} `, clusterLink(relation.other)) : "none",
      environments.has(current.id)
        ? el("a", { href: `#/environments/${encodeURIComponent(current.id)}` }, `Environment ${current.id}`)
        : el("span", { class: "muted" }, "no linked environment")]], { id: "cluster" }));
  if (relation) {
    // a move changes the seed's status: the table above follows what the sides were drawn from
    const upgrade = upgradeView(relation, signal, { onClusters: (...clusters) => {
      const drawn = clusters.find((item) => item.id === current.id);
      if (drawn) fill(view.querySelector("#cluster-status"), badge(drawn.status));
    } });
    await upgrade.refresh({ cluster: current, nodes });
    add(view, upgrade.element);
    return;
  }
  add(view, side("Nodes of", current, nodes, {}, "nodes"));
  // the clone handler asks nailgun:change_secrets (the seed takes the orig's credentials)
  if (context.may("nailgun:change_secrets")) add(view, ...cloneForm(current, releases));
}

export const routes = [
  [/^#\/clusters\/?$/, list],
  [/^#\/clusters\/([^/]+)\/?$/, cluster],
];
