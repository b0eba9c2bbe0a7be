// HA rendering (issue 19): what --ha and a values file change in the rendered control plane, and that
// without either the render is byte-for-byte what it was.
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { Annotations } from "../proto/annotations.ts";
import { PROXY_CONTAINER } from "../control/injector/decision.ts";
import { createWebhookCa } from "./certs.ts";
import { CONTROL_PLANE_DIR } from "./deploy.ts";
import { applyHa, HA_RESOURCES, haPlan, HOSTNAME_KEY, schedulableNodes } from "./ha.ts";
import { parseValues } from "./ha_values.ts";
import type { Manifest } from "./kinds.ts";
import { loadDir, NAMESPACE, renderControlPlane } from "./render.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

const ANCHORS = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
const ca = await createWebhookCa(NAMESPACE, Date.now());
const docs = await loadDir(CONTROL_PLANE_DIR);
const params = {
  image: "registry.example/weft:1.2.3",
  imagePullPolicy: "IfNotPresent" as const,
  imageDigest: "sha256:abc",
  trustAnchorsPem: ANCHORS,
  nativeSidecars: true,
  webhookCaPem: ca.certPem,
};
const yaml = (ms: Manifest[]) => ms.map((o) => stringify(o, { lineWidth: 0 })).join("---\n");
const HA = ["weft-destination", "weft-identity", "weft-proxy-injector"];
const OTHERS = ["weft-dashboard", "weft-tap"];

async function rendered(plan: ReturnType<typeof haPlan>): Promise<Obj[]> {
  return await renderControlPlane(applyHa(docs, plan), params) as Obj[];
}
const deployment = (os: Obj[], name: string) =>
  os.find((o) => o.kind === "Deployment" && o.metadata.name === name);
const containers = (
  d: Obj,
) => [...(d.spec.template.spec.initContainers ?? []), ...d.spec.template.spec.containers];

Deno.test("without --ha and without a values file the render is byte-identical", async () => {
  assert.equal(haPlan({ flag: false, nodes: 5 }), undefined);
  assert.equal(haPlan({ flag: false, values: {}, nodes: 5 }), undefined);
  assert.equal(haPlan({ flag: false, values: { ha: false }, nodes: 5 }), undefined);
  const before = yaml(await renderControlPlane(docs, params));
  assert.equal(yaml(await rendered(haPlan({ flag: false, nodes: 5 }))), before);
  // applyHa leaves its input alone.
  const copy = structuredClone(docs);
  applyHa(docs, haPlan({ flag: true, nodes: 3 }));
  assert.deepEqual(docs, copy);
});

Deno.test("--ha: 3 replicas, one pod at a time, spread over hostnames; tap and dashboard unchanged", async () => {
  const base = await rendered(undefined);
  const os = await rendered(haPlan({ flag: true, nodes: 1 }));
  for (const name of HA) {
    const d = deployment(os, name);
    const component = d.metadata.labels["linkerd.io/control-plane-component"];
    assert.equal(d.spec.replicas, 3, name);
    assert.deepEqual(d.spec.strategy, {
      type: "RollingUpdate",
      rollingUpdate: { maxSurge: 0, maxUnavailable: 1 },
    });
    assert.deepEqual(d.spec.template.spec.topologySpreadConstraints, [{
      maxSkew: 1,
      topologyKey: HOSTNAME_KEY,
      whenUnsatisfiable: "ScheduleAnyway",
      labelSelector: { matchLabels: { "linkerd.io/control-plane-component": component } },
    }]);
    // The component label is on the pod template (else neither affinity nor spread selects anything).
    assert.equal(d.spec.template.metadata.labels["linkerd.io/control-plane-component"], component);
  }
  for (const name of OTHERS) assert.deepEqual(deployment(os, name), deployment(base, name), name);
  // Nothing but Deployments and PDBs changes.
  const rest = (xs: Obj[]) => xs.filter((o) => o.kind !== "Deployment" && o.kind !== "PodDisruptionBudget");
  assert.deepEqual(rest(os), rest(base));
});

Deno.test("--ha: a PodDisruptionBudget with maxUnavailable 1 per HA component, selecting its pods", async () => {
  const os = await rendered(haPlan({ flag: true, nodes: 3 }));
  for (const name of HA) {
    const d = deployment(os, name);
    const pdbs = os.filter((o) =>
      o.kind === "PodDisruptionBudget" &&
      Object.entries(o.spec.selector.matchLabels).every(([k, v]) => d.spec.template.metadata.labels[k] === v)
    );
    assert.equal(pdbs.length, 1, name);
    assert.equal(pdbs[0].spec.maxUnavailable, 1);
    assert.equal(pdbs[0].spec.minAvailable, undefined);
  }
  // A PDB the manifests lack is added.
  const without = docs.filter((m) =>
    !(m.kind === "PodDisruptionBudget" && m.metadata.name === "weft-identity")
  );
  const added = applyHa(without, haPlan({ flag: true, nodes: 1 })).filter((m) =>
    m.kind === "PodDisruptionBudget" && m.metadata.name === "weft-identity"
  ) as Obj[];
  assert.equal(added.length, 1);
  assert.deepEqual(added[0].spec, {
    maxUnavailable: 1,
    selector: { matchLabels: { "linkerd.io/control-plane-component": "identity" } },
  });
  assert.equal(added[0].metadata.namespace, NAMESPACE);
});

Deno.test("--ha anti-affinity: preferred below 3 schedulable nodes, required from 3; values may choose", async () => {
  const anti = async (plan: ReturnType<typeof haPlan>) =>
    deployment(await rendered(plan), "weft-destination").spec.template.spec.affinity?.podAntiAffinity;
  const term = {
    labelSelector: { matchLabels: { "linkerd.io/control-plane-component": "destination" } },
    topologyKey: HOSTNAME_KEY,
  };
  for (const nodes of [1, 2]) {
    assert.deepEqual(await anti(haPlan({ flag: true, nodes })), {
      preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: term }],
    });
  }
  for (const nodes of [3, 7]) {
    assert.deepEqual(await anti(haPlan({ flag: true, nodes })), {
      requiredDuringSchedulingIgnoredDuringExecution: [term],
    });
  }
  // 5 replicas need 5 nodes before required.
  assert.equal(
    haPlan({ flag: true, values: { replicas: { identity: 5 } }, nodes: 4 })!.antiAffinity,
    "preferred",
  );
  assert.equal(
    haPlan({ flag: true, values: { replicas: { identity: 5 } }, nodes: 5 })!.antiAffinity,
    "required",
  );
  assert.equal(
    haPlan({ flag: true, values: { antiAffinity: "preferred" }, nodes: 9 })!.antiAffinity,
    "preferred",
  );
  assert.equal(
    haPlan({ flag: true, values: { antiAffinity: "required" }, nodes: 1 })!.antiAffinity,
    "required",
  );
  // The values file's ha: true is --ha.
  assert.equal(haPlan({ flag: false, values: { ha: true }, nodes: 3 })!.antiAffinity, "required");
});

Deno.test("--ha resources: controllers and the control plane's proxies get the measured figures", async () => {
  const os = await rendered(haPlan({ flag: true, nodes: 1 }));
  const dst = deployment(os, "weft-destination");
  const byName = Object.fromEntries(containers(dst).map((c: Obj) => [c.name, c]));
  assert.deepEqual(byName.destination.resources, {
    requests: { cpu: "50m", memory: "160Mi" },
    limits: { memory: "768Mi" },
  });
  assert.deepEqual(byName.policy.resources, {
    requests: { cpu: "50m", memory: "160Mi" },
    limits: { memory: "768Mi" },
  });
  assert.deepEqual(byName.validator.resources, {
    requests: { cpu: "50m", memory: "160Mi" },
    limits: { memory: "512Mi" },
  });
  for (const [d, c] of [["weft-identity", "identity"], ["weft-proxy-injector", "proxy-injector"]]) {
    const x = containers(deployment(os, d)).find((k: Obj) => k.name === c);
    assert.deepEqual(x.resources, HA_RESOURCES[c as "identity"]);
  }
  // The proxies: through the injector's annotations, into the injected container.
  for (const name of HA) {
    const d = deployment(os, name);
    assert.equal(d.spec.template.metadata.annotations[Annotations.proxyMemoryRequest], "64Mi");
    const proxy = containers(d).find((c: Obj) => c.name === PROXY_CONTAINER);
    assert.equal(proxy.resources.requests.memory, "64Mi", name);
    assert.equal(proxy.resources.requests.cpu, "20m", name);
    assert.equal(proxy.resources.limits.memory, "256Mi", name);
  }
});

Deno.test("a values file: replicas and resources per field, over the HA defaults; also without ha", async () => {
  const v = parseValues(
    `ha: true
replicas: { destination: 5, identity: 2 }
resources:
  policy: { requests: { cpu: 200m }, limits: { cpu: "1", memory: 1Gi } }
`,
    "v.yaml",
  );
  const os = await rendered(haPlan({ flag: false, values: v, nodes: 1 }));
  assert.deepEqual(
    HA.map((n) => deployment(os, n).spec.replicas),
    [5, 2, 3],
  );
  const policy = containers(deployment(os, "weft-destination")).find((c: Obj) => c.name === "policy");
  assert.deepEqual(policy.resources, {
    requests: { cpu: "200m", memory: "160Mi" },
    limits: { cpu: "1", memory: "1Gi" },
  });
  // Without ha: only what the file says; no affinity, spread or strategy.
  const plain = await rendered(
    haPlan({ flag: false, values: parseValues("replicas: { identity: 2 }", "v"), nodes: 3 }),
  );
  const id = deployment(plain, "weft-identity");
  assert.equal(id.spec.replicas, 2);
  assert.equal(id.spec.strategy, undefined);
  assert.equal(id.spec.template.spec.affinity, undefined);
  assert.equal(id.spec.template.spec.topologySpreadConstraints, undefined);
  assert.equal(deployment(plain, "weft-destination").spec.replicas, 1);
});

Deno.test("values file errors name the field", () => {
  const bad = (text: string, re: RegExp) => assert.throws(() => parseValues(text, "v.yaml"), re);
  bad("ha: yes please", /^ValuesError: v\.yaml: ha: "yes please" is not true or false/);
  bad("replica: { destination: 3 }", /v\.yaml: replica: unknown field; did you mean replicas\?/);
  bad("replicas: { destinaton: 3 }", /replicas\.destinaton: unknown field; did you mean destination\?/);
  bad("replicas: { identity: 0 }", /replicas\.identity: 0 is not a whole number from 1 to 15/);
  bad("replicas: { identity: 2.5 }", /replicas\.identity: 2\.5 is not a whole number/);
  bad("replicas: [3]", /replicas: want a map/);
  bad("antiAffinity: always", /antiAffinity: "always" is not auto, preferred or required/);
  bad("resources: { polcy: {} }", /resources\.polcy: unknown field; did you mean policy\?/);
  bad(
    "resources: { policy: { request: {} } }",
    /resources\.policy\.request: unknown field; did you mean requests\?/,
  );
  bad(
    "resources: { policy: { limits: { cpu: lots } } }",
    /resources\.policy\.limits\.cpu: "lots" is not a Kubernetes quantity/,
  );
  bad(
    "resources: { identity: { requests: { storage: 1Gi } } }",
    /resources\.identity\.requests\.storage: unknown field/,
  );
  bad("ha: [", /v\.yaml: not YAML/);
  bad("- 1", /v\.yaml: want a map/);
  assert.deepEqual(parseValues("# nothing\n", "v"), {});
  assert.deepEqual(parseValues("resources: { identity: { requests: { cpu: 0.5 } } }", "v"), {
    resources: { identity: { requests: { cpu: "0.5" } } },
  });
});

Deno.test("schedulable nodes: Ready, not cordoned, not tainted NoSchedule/NoExecute", () => {
  const ready = { conditions: [{ type: "Ready", status: "True" }] };
  assert.equal(
    schedulableNodes([
      { status: ready },
      { spec: { taints: [{ effect: "PreferNoSchedule" }] }, status: ready },
      { spec: { unschedulable: true }, status: ready },
      { spec: { taints: [{ effect: "NoSchedule" }] }, status: ready },
      { spec: { taints: [{ effect: "NoExecute" }] }, status: ready },
      { status: { conditions: [{ type: "Ready", status: "Unknown" }] } },
      {},
    ]),
    2,
  );
});

Deno.test("docs/ha.md's example values file is valid and means what it says", async () => {
  const md = await Deno.readTextFile(new URL("../docs/ha.md", import.meta.url));
  const block = /```yaml\n(# ha-values\.yaml[\s\S]*?)```/.exec(md)?.[1];
  assert.ok(block, "no values example in docs/ha.md");
  const plan = haPlan({ flag: false, values: parseValues(block, "docs/ha.md"), nodes: 3 })!;
  assert.equal(plan.ha, true);
  assert.equal(plan.antiAffinity, "required");
  assert.deepEqual(plan.resources.policy, {
    requests: { cpu: "100m", memory: "192Mi" },
    limits: { cpu: "1", memory: "1Gi" },
  });
  assert.deepEqual(plan.resources["linkerd-proxy"], {
    requests: { cpu: "20m", memory: "96Mi" },
    limits: { memory: "256Mi" },
  });
});
