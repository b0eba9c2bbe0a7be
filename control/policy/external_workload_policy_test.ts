/**
 * Inbound policy of ExternalWorkloads: Servers select them through externalWorkloadSelector (and
 * only through it), named Server ports resolve against the workload's ports, defaults come from
 * the workload's annotations; and the policy API serves it to a proxy naming itself
 * `{"ns":..,"external_workload":..}`, over real grpc-js.
 */
import { assertEquals, assertThrows } from "./assert.ts";
import { RequestError } from "../grpc/request_error.ts";
import type { ExternalWorkload } from "../k8s/external_workload.ts";
import { defaultPolicyConfig } from "./config.ts";
import {
  externalWorkloadInboundPolicy,
  matchingExternalWorkloadServers,
} from "./external_workload_policy.ts";
import { inboundPolicy } from "./inbound_index.ts";
import type { Kind, Obj } from "./resources.ts";
import { startPolicyServer } from "./test_server.ts";
import { meta, namespace, pod, server, storeWith } from "./testing.ts";

const cfg = defaultPolicyConfig({ clusterNetworks: ["10.0.0.0/8"] });
const NS = "legacy";

function ew(
  name: string,
  labels: Record<string, string>,
  annotations?: Record<string, string>,
): Obj {
  return {
    apiVersion: "workload.linkerd.io/v1beta1",
    kind: "ExternalWorkload",
    metadata: meta(NS, name, { labels, annotations }),
    spec: {
      meshTLS: { identity: `spiffe://root.linkerd.cluster.local/${name}`, serverName: `${name}.legacy` },
      ports: [{ name: "http", port: 8080 }, { name: "db", port: 5432 }],
      workloadIPs: [{ ip: "192.0.2.10" }],
    },
  };
}

const vmServer = (name: string, port: number | string, extra: Record<string, unknown> = {}) =>
  server(NS, name, { externalWorkloadSelector: { matchLabels: { app: "vm" } }, port, ...extra });

function policyOf(objects: [Kind, Obj][], port = 8080) {
  return externalWorkloadInboundPolicy(
    storeWith(["Namespace", namespace(NS)], ...objects),
    cfg,
    NS,
    "vm-a",
    port,
  );
}

Deno.test("ExternalWorkload inbound: a Server's externalWorkloadSelector selects it, by port number or declared name", () => {
  const vm = ew("vm-a", { app: "vm" });
  const byName = policyOf([["ExternalWorkload", vm], ["Server", vmServer("vm-http", "http")]]);
  assertEquals([byName.labels.kind, byName.labels.name], ["server", "vm-http"]);
  const byNumber = policyOf([["ExternalWorkload", vm], [
    "Server",
    vmServer("vm-db", 5432, { proxyProtocol: "opaque" }),
  ]], 5432);
  assertEquals([byNumber.labels.name, byNumber.protocol?.kind?.$case], ["vm-db", "opaque"]);
  // A name the workload does not declare selects nothing: the default policy answers.
  const undeclared = policyOf([["ExternalWorkload", vm], ["Server", vmServer("vm-grpc", "grpc")]]);
  assertEquals([undeclared.labels.kind, undeclared.labels.name], ["default", "all-unauthenticated"]);
});

Deno.test("ExternalWorkload inbound: podSelector Servers never select workloads, workload Servers never select pods", () => {
  const store = storeWith(
    ["Namespace", namespace(NS)],
    ["ExternalWorkload", ew("vm-a", { app: "vm" })],
    ["Pod", pod(NS, "web-1", { app: "vm" })],
    ["Server", server(NS, "pods-only", { podSelector: { matchLabels: { app: "vm" } }, port: 8080 })],
    ["Server", vmServer("vms-only", 8080)],
  );
  const ewServers = matchingExternalWorkloadServers(
    store,
    ew("vm-a", { app: "vm" }) as ExternalWorkload,
    8080,
  );
  assertEquals(ewServers.map((s) => s.metadata.name), ["vms-only"]);
  assertEquals(externalWorkloadInboundPolicy(store, cfg, NS, "vm-a", 8080).labels.name, "vms-only");
  assertEquals(inboundPolicy(store, cfg, NS, "web-1", 8080).labels.name, "pods-only");
});

Deno.test("ExternalWorkload inbound: the default policy and opaque ports come from its annotations; unknown is not_found", () => {
  const vm = ew("vm-a", { app: "vm" }, {
    "config.linkerd.io/default-inbound-policy": "all-authenticated",
    "config.linkerd.io/opaque-ports": "db",
  });
  const http = policyOf([["ExternalWorkload", vm]]);
  assertEquals([http.labels.name, http.protocol?.kind?.$case], ["all-authenticated", "detect"]);
  const db = policyOf([["ExternalWorkload", vm]], 5432);
  assertEquals(db.protocol?.kind?.$case, "opaque");
  const e = assertThrows(() => policyOf([]), RequestError);
  assertEquals(e.kind, "not_found");
});

Deno.test("ExternalWorkload inbound over gRPC: WatchPort for {ns, external_workload} follows Servers and label changes", async () => {
  await using t = await startPolicyServer();
  t.source.emit("added", "Namespace", namespace(NS));
  t.source.emit("added", "ExternalWorkload", ew("vm-a", { app: "vm" }));
  const call = t.inbound.watchPort({
    workload: JSON.stringify({ ns: NS, external_workload: "vm-a" }),
    port: 8080,
  });
  const items: { labels: Record<string, string> }[] = [];
  let failed: Error | undefined;
  call.on("data", (m) => items.push(m));
  call.on("error", (e: Error) => failed = e);
  const nth = async (i: number) => {
    const deadline = Date.now() + 5000;
    while (items.length <= i) {
      if (failed) throw failed;
      if (Date.now() > deadline) throw new Error(`no message #${i} within 5s (have ${items.length})`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return items[i];
  };
  assertEquals((await nth(0)).labels.name, "all-unauthenticated");
  t.source.emit("added", "Server", vmServer("vm-http", "http"));
  assertEquals((await nth(1)).labels.name, "vm-http");
  // Relabelled out of the Server's selector: back to the default.
  t.source.emit("modified", "ExternalWorkload", ew("vm-a", { app: "other" }));
  assertEquals((await nth(2)).labels.name, "all-unauthenticated");
  call.cancel();
});
