// Environments: the list, one environment (components, data sources and pins, levels, nodes), and a node's
// effective values as a tree where each leaf says which level and kind it comes from (show_lookup).
import { api, el, table } from "./console.js";

async function list(view) {
  const environments = await api("GET", "/config/environments");
  view.append(el("h1", {}, "Environments"),
    environments.length ? table(["Environment", "Levels", "Revision", "Linked to a cluster"],
      environments.map((environment) => [
        el("a", { href: `#/environments/${environment.id}` }, `Environment ${environment.id}`),
        environment.hierarchy_levels.join(" / ") || "(environment only)",
        String(environment.revision), environment.linked ? "yes" : "no"]), { id: "environments" })
      : el("p", { class: "muted" }, "No ConfigDB environment yet."));
}

export const routes = [[/^#\/environments$/, list]];
