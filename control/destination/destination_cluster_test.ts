/**
 * Destination.Get against a real API server (KUBECONFIG): a selector-less Service whose
 * EndpointSlices the test writes itself, so the sequence of changes is exact. Served over real
 * gRPC on 127.0.0.1 from informers on the real API.
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { CoreV1Api, DiscoveryV1Api, type V1EndpointSlice } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { DestinationClient, type Update } from "../../proto/gen/destination.ts";
import { fromTcpAddress } from "../../proto/ip.ts";
import { KubeApiSource, loadKubeConfig } from "../k8s/mod.ts";
import { ClusterState } from "./cluster_state.ts";
import { defaultConfig } from "./config.ts";
import { serveDestination } from "./server.ts";

const kubeconfig = Deno.env.get("KUBECONFIG");

function describe(u: Update): string {
  switch (u.update?.$case) {
    case "add":
      return `add ${u.update.value.addrs.map((a) => fromTcpAddress(a.addr!)).sort().join(",")}`;
    case "remove":
      return `remove ${u.update.value.addrs.map((a) => fromTcpAddress(a)).sort().join(",")}`;
    case "noEndpoints":
      return `noEndpoints exists=${u.update.value.exists}`;
    default:
      return "empty";
  }
}

Deno.test({
  name: "Get follows a real Service through scale up, scale down and deletion",
  ignore: !kubeconfig,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kc = loadKubeConfig(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const discovery = kc.makeApiClient(DiscoveryV1Api);
    const ns = `weft-dst-${crypto.randomUUID().slice(0, 8)}`;
    await core.createNamespace({ body: { metadata: { name: ns } } });
    const ctrl = new AbortController();
    let server: grpc.Server | undefined;
    let client: DestinationClient | undefined;
    try {
      const registry = new Registry();
      const state = new ClusterState({
        sources: (ref) => new KubeApiSource(kc, ref),
        registry,
        watchServers: false,
        watchServiceProfiles: false,
        log: () => {},
      });
      const informers = state.start(ctrl.signal);
      await state.synced;
      const s = await serveDestination({
        state,
        config: defaultConfig(),
        registry,
        hostname: "127.0.0.1",
        port: 0,
        log: () => {},
        signal: ctrl.signal,
      });
      server = s.server;
      client = new DestinationClient(`127.0.0.1:${s.port}`, grpc.credentials.createInsecure());

      await core.createNamespacedService({
        namespace: ns,
        body: { metadata: { name: "web" }, spec: { ports: [{ name: "http", port: 80, targetPort: 8080 }] } },
      });
      const body = (ips: string[]): V1EndpointSlice => ({
        metadata: {
          name: "web-1",
          namespace: ns,
          labels: {
            "kubernetes.io/service-name": "web",
            "endpointslice.kubernetes.io/managed-by": "weft-test",
          },
        },
        addressType: "IPv4",
        ports: [{ name: "http", port: 8080, protocol: "TCP" }],
        endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
      });
      // The Service must be in the cache before Get (otherwise NotFound).
      const deadline = Date.now() + 20_000;
      while (!state.services.get(ns, "web")) {
        if (Date.now() > deadline) throw new Error("Service never reached the informer");
        await new Promise((r) => setTimeout(r, 20));
      }

      const seen: string[] = [];
      let notify: (() => void) | undefined;
      const call = client.get({ scheme: "", path: `web.${ns}.svc.cluster.local:80`, contextToken: "" });
      call.on("data", (u: Update) => {
        seen.push(describe(u));
        notify?.();
      });
      call.on("error", () => {});
      const waitCount = async (n: number) => {
        const until = Date.now() + 20_000;
        while (seen.length < n) {
          if (Date.now() > until) throw new Error(`want ${n} messages, have ${JSON.stringify(seen)}`);
          await new Promise<void>((r) => {
            notify = r;
            setTimeout(r, 100);
          });
        }
      };
      await waitCount(1);
      await discovery.createNamespacedEndpointSlice({ namespace: ns, body: body(["10.250.0.1"]) });
      await waitCount(2);
      await discovery.replaceNamespacedEndpointSlice({
        name: "web-1",
        namespace: ns,
        body: body(["10.250.0.1", "10.250.0.2", "10.250.0.3"]),
      });
      await waitCount(3);
      await discovery.replaceNamespacedEndpointSlice({
        name: "web-1",
        namespace: ns,
        body: body(["10.250.0.3"]),
      });
      await waitCount(4);
      await core.deleteNamespacedService({ name: "web", namespace: ns });
      await waitCount(5);
      assert.deepEqual(seen, [
        "noEndpoints exists=true",
        "add 10.250.0.1:8080",
        "add 10.250.0.2:8080,10.250.0.3:8080",
        "remove 10.250.0.1:8080,10.250.0.2:8080",
        "noEndpoints exists=false",
      ]);
      call.cancel();
      assert.match(
        await registry.getSingleMetricAsString("endpointslices_informer_lag_seconds"),
        /_count\{event="add"\} [1-9]/,
      );
      ctrl.abort();
      await informers;
    } finally {
      client?.close();
      server?.forceShutdown();
      ctrl.abort();
      await core.deleteNamespace({ name: ns }).catch(() => {});
    }
  },
});
