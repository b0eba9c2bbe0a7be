import assert from "node:assert/strict";
import { PROXY_CONTAINER } from "../../control/injector/decision.ts";
import type { Manifest } from "../kinds.ts";
import {
  CONFIG_HASH_ANNOTATION,
  PROMETHEUS_DIGEST_ANNOTATION,
  renderStore,
  type StoreRenderParams,
} from "./render_store.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

const PARAMS: StoreRenderParams = {
  image: "registry.example/weft:1.2.3",
  imagePullPolicy: "IfNotPresent",
  imageDigest: "sha256:weft",
  trustAnchorsPem: "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n",
  nativeSidecars: true,
  webhookCaPem: "unused",
  prometheusImage: "registry.example/prometheus:2.42",
  prometheusImageDigest: "sha256:prom",
};

const names = (ms: Manifest[]) => ms.map((m) => `${m.kind}/${m.metadata.name}`).sort();

Deno.test("embedded store: Prometheus meshed by the injector's code, both images substituted, config hashed", async () => {
  const { apply, remove } = await renderStore({ mode: "embedded" }, PARAMS);
  assert.deepEqual(remove, []);
  assert.deepEqual(names(apply), [
    "AuthorizationPolicy/weft-prometheus-api-api-server",
    "AuthorizationPolicy/weft-prometheus-api-clients",
    "ClusterRole/weft-prometheus",
    "ClusterRoleBinding/weft-prometheus",
    "ConfigMap/weft-metrics",
    "ConfigMap/weft-prometheus-config",
    "Deployment/weft-prometheus",
    "MeshTLSAuthentication/weft-prometheus-api-clients",
    "Server/weft-prometheus-api",
    "Service/weft-prometheus",
    "ServiceAccount/weft-prometheus",
  ]);
  // 9090 is guarded: the Server selects the Prometheus pod on the Service's port.
  const server = apply.find((m) => m.kind === "Server") as Obj;
  assert.deepEqual(server.spec.podSelector.matchLabels, {
    "linkerd.io/control-plane-component": "prometheus",
  });
  assert.equal(server.spec.port, 9090);
  const d = apply.find((m) => m.kind === "Deployment") as Obj;
  const tpl = d.spec.template;
  const all = [...(tpl.spec.initContainers ?? []), ...tpl.spec.containers];
  assert.ok(all.some((c: Obj) => c.name === PROXY_CONTAINER), "a proxy is injected");
  const byName = (n: string) => all.find((c: Obj) => c.name === n);
  assert.equal(byName("prometheus").image, "registry.example/prometheus:2.42");
  assert.equal(byName("prometheus").imagePullPolicy, "IfNotPresent");
  assert.equal(byName("scrape-targets").image, "registry.example/weft:1.2.3");
  assert.ok(byName("prometheus").args.includes("--storage.tsdb.retention.time=6h"));
  assert.ok(byName("prometheus").resources.requests && byName("prometheus").resources.limits.memory);
  assert.match(tpl.metadata.annotations[CONFIG_HASH_ANNOTATION], /^[0-9a-f]{16}$/);
  assert.equal(tpl.metadata.annotations[PROMETHEUS_DIGEST_ANNOTATION], "sha256:prom");
  // 4191 (plain-HTTP proxy admin) skips this pod's outbound proxy; the workload label the scrape config reads.
  assert.match(tpl.metadata.annotations["config.linkerd.io/skip-outbound-ports"], /(^|,)4191(,|$)/);
  assert.equal(tpl.metadata.labels["linkerd.io/proxy-deployment"], "weft-prometheus");
  const svc = apply.find((m) => m.kind === "Service") as Obj;
  assert.deepEqual(svc.spec.ports, [{ name: "http", port: 9090, targetPort: "http" }]);
});

Deno.test("no store or an external one: only weft-metrics applied, every embedded object to remove", async () => {
  for (const store of [{ mode: "none" as const }, { mode: "external" as const, url: "http://p:9090" }]) {
    const { apply, remove } = await renderStore(store, PARAMS);
    assert.deepEqual(names(apply), ["ConfigMap/weft-metrics"]);
    assert.deepEqual(names(remove), [
      "AuthorizationPolicy/weft-prometheus-api-api-server",
      "AuthorizationPolicy/weft-prometheus-api-clients",
      "ClusterRole/weft-prometheus",
      "ClusterRoleBinding/weft-prometheus",
      "ConfigMap/weft-prometheus-config",
      "Deployment/weft-prometheus",
      "MeshTLSAuthentication/weft-prometheus-api-clients",
      "Server/weft-prometheus-api",
      "Service/weft-prometheus",
      "ServiceAccount/weft-prometheus",
    ]);
  }
});
