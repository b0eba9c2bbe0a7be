/** The example manifests, loaded as an informer would deliver them, produce the expected policy. */
import { parseAllDocuments } from "yaml";
import { assertEquals } from "./assert.ts";
import type { Server as ProtoServer } from "../../proto/gen/inbound.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import { defaultPolicyConfig } from "./config.ts";
import { inboundPolicy } from "./inbound_index.ts";
import { kindOf } from "./manifest_kinds.ts";
import { outboundPolicy } from "./outbound_index.ts";
import type { Obj } from "./resources.ts";
import { PolicyStore } from "./store.ts";

const DIR = new URL("../../manifests/examples/policy/", import.meta.url);

export async function loadExamples(files: string[]): Promise<PolicyStore> {
  const store = new PolicyStore();
  let n = 0;
  for (const f of files) {
    for (const doc of parseAllDocuments(await Deno.readTextFile(new URL(f, DIR)))) {
      const o = doc.toJS() as Obj | null;
      if (!o) continue;
      const kind = kindOf(o.apiVersion, o.kind);
      if (!kind) continue;
      o.metadata.resourceVersion = String(++n);
      o.metadata.creationTimestamp = new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
      store.apply({ type: "added", kind, object: o });
    }
  }
  return store;
}

const cfg = defaultPolicyConfig();
const summary = (s: ProtoServer) => ({
  server: s.labels.name,
  protocol: s.protocol?.kind?.$case,
  authz: s.authorizations.map((a) => a.labels.name),
});

Deno.test("examples: Servers, AuthorizationPolicies and MeshTLSAuthentication by ServiceAccount", async () => {
  const store = await loadExamples(["emojivoto-app.yaml", "server-authorization-policy.yaml"]);
  const emoji = inboundPolicy(store, cfg, "emojivoto", "emoji", 8080);
  assertEquals(summary(emoji), { server: "emoji-grpc", protocol: "grpc", authz: ["emoji-grpc"] });
  const p = emoji.authorizations[0].authentication?.permit;
  assertEquals(
    p?.$case === "meshTLS" && p.value.clients?.$case === "identities" ? p.value.clients.value.identities : [],
    [{ name: "web.emojivoto.serviceaccount.identity.weft.cluster.local" }],
  );
  assertEquals(summary(inboundPolicy(store, cfg, "emojivoto", "voting", 8080)), {
    server: "voting-grpc",
    protocol: "grpc",
    authz: ["voting-grpc"],
  });
  // The emoji pod's other port has no Server: the cluster default.
  assertEquals(summary(inboundPolicy(store, cfg, "emojivoto", "emoji", 8801)).server, "all-unauthenticated");
});

Deno.test("examples: per-route policy puts authorizations on routes and keeps the probe route explicit", async () => {
  const store = await loadExamples(["emojivoto-app.yaml", "per-route-policy.yaml"]);
  const web = inboundPolicy(store, cfg, "emojivoto", "web", 8080);
  assertEquals(summary(web), { server: "web-http", protocol: "http1", authz: [] });
  const k = web.protocol?.kind;
  if (k?.$case !== "http1") throw new Error("want http1");
  const routes = k.value.routes.map((r) => {
    const m = r.metadata?.kind;
    return [m?.$case === "resource" ? m.value.name : "?", r.authorizations.map((a) => a.labels.name)];
  });
  assertEquals(routes, [["web-api", ["web-api"]], ["web-probes", ["web-probes"]]]);
});

Deno.test("examples: legacy ServerAuthorization by selector and by name", async () => {
  const store = await loadExamples(["emojivoto-app.yaml", "legacy-serverauthorization.yaml"]);
  assertEquals(summary(inboundPolicy(store, cfg, "emojivoto", "emoji", 8801)), {
    server: "emoji-prom",
    protocol: "http1",
    authz: ["prom-scrape", "prom-scrape-local"],
  });
});

Deno.test("examples: namespace-wide AuthorizationPolicy reaches every Server of the namespace", async () => {
  const store = await loadExamples([
    "emojivoto-app.yaml",
    "server-authorization-policy.yaml",
    "namespace-default-deny.yaml",
  ]);
  assertEquals(summary(inboundPolicy(store, cfg, "emojivoto", "emoji", 8080)).authz, [
    "emoji-grpc",
    "emojivoto-ingress",
  ]);
});

Deno.test("examples: outbound routes split traffic and make the emoji Service gRPC", async () => {
  const store = await loadExamples(["emojivoto-app.yaml", "outbound-routes.yaml"]);
  const svc = store.service("emojivoto", "web-svc")!;
  svc.spec!.clusterIP = "10.96.0.20";
  store.apply({
    type: "modified",
    kind: "Service",
    object: { ...svc, metadata: { ...svc.metadata, resourceVersion: "x" } },
  });
  const web = outboundPolicy(store, cfg, {
    sourceWorkload: "emojivoto:vote-bot",
    target: { $case: "addr", value: toTcpAddress("10.96.0.20", 80) },
  });
  const k = web.protocol?.kind;
  if (k?.$case !== "detect") throw new Error("want detect");
  const rule = k.value.http1!.routes[0].rules[0];
  const d = rule.backends?.kind;
  assertEquals(d?.$case === "randomAvailable" ? d.value.backends.map((b) => b.weight) : [], [90, 10]);
  assertEquals(rule.retry?.maxRetries, 2);
  assertEquals(rule.timeouts?.request, { seconds: 10n, nanos: 0 });
  const emoji = outboundPolicy(store, cfg, {
    sourceWorkload: "",
    target: { $case: "authority", value: "emoji-svc.emojivoto.svc.cluster.local:8080" },
  });
  assertEquals(emoji.protocol?.kind?.$case, "grpc");
});
