import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { parse } from "yaml";
import { type PodLike, podTargets, type TargetGroup } from "../../control/scrape_targets/targets.ts";
import {
  DEFAULT_CONFIG_PARAMS,
  prometheusConfigMap,
  prometheusConfigYaml,
  type RelabelRule,
  type ScrapeJob,
} from "./config.ts";

const PARAMS = { ...DEFAULT_CONFIG_PARAMS, controlPlaneNamespace: "weft" };

/**
 * Prometheus' relabelling, as documented (anchored RE2 regexes, `;`-joined source labels, `$1` replacements,
 * `__`-prefixed labels dropped at the end): enough of it to run the rendered rules on discovered targets.
 */
function relabel(labels: Record<string, string>, rules: RelabelRule[]): Record<string, string> | undefined {
  let ls = { ...labels };
  for (const r of rules) {
    const re = new RegExp(`^(?:${r.regex ?? "(.*)"})$`);
    const expand = (m: RegExpExecArray) =>
      (r.replacement ?? "$1").replace(/\$\{?(\d+)\}?/g, (_, i) => m[Number(i)] ?? "");
    const value = (r.source_labels ?? []).map((s) => ls[s] ?? "").join(r.separator ?? ";");
    switch (r.action ?? "replace") {
      case "keep":
        if (!re.test(value)) return undefined;
        break;
      case "drop":
        if (re.test(value)) return undefined;
        break;
      case "replace": {
        const m = re.exec(value);
        if (m) {
          const v = expand(m);
          if (v === "") delete ls[r.target_label!];
          else ls[r.target_label!] = v;
        }
        break;
      }
      case "labelmap": {
        const add: Record<string, string> = {};
        for (const [k, v] of Object.entries(ls)) {
          const m = re.exec(k);
          if (m) add[expand(m)] = v;
        }
        ls = { ...ls, ...add };
        break;
      }
      case "labeldrop":
        ls = Object.fromEntries(Object.entries(ls).filter(([k]) => !re.test(k)));
        break;
      default:
        throw new Error(`relabel action ${r.action} not modelled`);
    }
  }
  return Object.fromEntries(Object.entries(ls).filter(([k]) => !k.startsWith("__") || k === "__address__"));
}

function scrape(job: ScrapeJob, groups: TargetGroup[]) {
  return groups.flatMap((g) =>
    g.targets.map((t) => relabel({ ...g.labels, __address__: t }, job.relabel_configs ?? []))
  ).filter((x) => x !== undefined);
}

function meshedPod(
  name: string,
  ns: string,
  ip: string,
  extra: Record<string, string>,
  cp = "weft",
): PodLike {
  return {
    metadata: {
      name,
      namespace: ns,
      labels: { app: "web", "linkerd.io/control-plane-ns": cp, "linkerd.io/workload-ns": ns, ...extra },
    },
    spec: {
      initContainers: [{
        name: "linkerd-proxy",
        ports: [{ name: "linkerd-proxy", containerPort: 4143 }, {
          name: "linkerd-admin",
          containerPort: 4191,
        }],
      }],
      containers: [{ name: "web", ports: [{ name: "http", containerPort: 8080 }] }],
    },
    status: { phase: "Running", podIP: ip },
  };
}

const rendered = parse(prometheusConfigYaml(PARAMS)) as {
  global: Record<string, string>;
  scrape_configs: ScrapeJob[];
};
const job = (name: string) => rendered.scrape_configs.find((j) => j.job_name === name)!;

Deno.test("rendered config: Linkerd's interval and jobs, targets from the sidecar", () => {
  assertEquals(rendered.global, {
    scrape_interval: "10s",
    scrape_timeout: "10s",
    evaluation_interval: "10s",
  });
  assertEquals(rendered.scrape_configs.map((j) => j.job_name), [
    "prometheus",
    "linkerd-controller",
    "linkerd-proxy",
  ]);
  assertEquals(job("linkerd-proxy").http_sd_configs, [
    { url: "http://127.0.0.1:9992/targets", refresh_interval: "10s" },
  ]);
  const cm = prometheusConfigMap(PARAMS);
  equal(cm.metadata.namespace, "weft");
  equal((cm.data as Record<string, string>)["prometheus.yml"], prometheusConfigYaml(PARAMS));
});

Deno.test("linkerd-proxy job: only proxy admin ports of this control plane, labelled as Linkerd's", () => {
  const web = meshedPod("web-1", "shop", "10.0.0.7", { "linkerd.io/proxy-deployment": "web" });
  const other = meshedPod("x-1", "shop", "10.0.0.8", { "linkerd.io/proxy-deployment": "x" }, "linkerd");
  const batch = meshedPod("m-1", "jobs", "10.0.0.9", { "linkerd.io/proxy-job": "migrate" });
  const out = scrape(job("linkerd-proxy"), [web, other, batch].flatMap(podTargets));
  assertEquals(out, [
    {
      __address__: "10.0.0.7:4191",
      namespace: "shop",
      pod: "web-1",
      deployment: "web",
      control_plane_ns: "weft",
      workload_ns: "shop",
      app: "web",
    },
    {
      __address__: "10.0.0.9:4191",
      namespace: "jobs",
      pod: "m-1",
      k8s_job: "migrate",
      control_plane_ns: "weft",
      workload_ns: "jobs",
      app: "web",
    },
  ]);
});

Deno.test("linkerd-proxy job: a finished pod is not scraped", () => {
  const done = meshedPod("web-1", "shop", "10.0.0.7", { "linkerd.io/proxy-deployment": "web" });
  done.status!.phase = "Succeeded";
  assertEquals(scrape(job("linkerd-proxy"), podTargets(done)), []);
});

Deno.test("linkerd-controller job: control-plane admin ports only, with the component label", () => {
  const dst: PodLike = {
    metadata: {
      name: "weft-destination-1",
      namespace: "weft",
      labels: { "linkerd.io/control-plane-ns": "weft" },
    },
    spec: {
      initContainers: [{ name: "linkerd-proxy", ports: [{ name: "linkerd-admin", containerPort: 4191 }] }],
      containers: [
        {
          name: "destination",
          ports: [{ name: "grpc", containerPort: 8086 }, { name: "admin-http", containerPort: 9996 }],
        },
        { name: "policy", ports: [{ name: "policy-admin", containerPort: 9990 }] },
      ],
    },
    status: { phase: "Running", podIP: "10.0.0.2" },
  };
  const elsewhere = structuredClone(dst);
  elsewhere.metadata.namespace = "shop";
  const out = scrape(job("linkerd-controller"), [dst, elsewhere].flatMap(podTargets));
  assertEquals(out.map((l) => [l!.__address__, l!.component]), [
    ["10.0.0.2:9996", "destination"],
    ["10.0.0.2:9990", "policy"],
  ]);
});
