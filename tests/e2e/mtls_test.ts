// Cluster e2e: traffic between two meshed workloads is mutual TLS, and each side's proxy names the other's
// identity: the server's inbound metrics carry client_id, the client's outbound metrics carry server_id.
import assert from "node:assert/strict";
import { apply, inNamespace, requireMesh, waitForReadyPods } from "./lib/kube.ts";
import { proxyMetrics, waitForMetric } from "./lib/mesh.ts";
import { select, sum } from "./lib/prom.ts";
import { APP_PORT, appManifest, byPod, fetchFrom, identityOf } from "./lib/workloads.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test({
  name: "e2e: meshed traffic is mTLS with the expected client and server identities",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-mtls", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "server", serviceAccount: "server-sa", service: true }));
      await apply(ns, appManifest({ name: "client", serviceAccount: "client-sa" }));
      const [server] = await waitForReadyPods(ns, "app=server", 1);
      const [client] = await waitForReadyPods(ns, "app=client", 1);
      const clientId = identityOf("client-sa", ns);
      const serverId = identityOf("server-sa", ns);

      const answers = await fetchFrom(client.status.podIP, `server.${ns}.svc.cluster.local:80`, 5);
      assert.deepEqual(byPod(answers), { [server.metadata.name]: 5 });

      // The HTTP layer multiplexes the requests over one mesh connection (HTTP/2 between proxies), so
      // connections are counted at least once and requests one by one; without it, one connection each.
      const http = (await proxyMetrics(client.status.podIP)).some((s) => s.name === "request_total");
      const inbound = await waitForMetric(server.status.podIP, "tcp_open_total", {
        direction: "inbound",
        tls: "true",
        client_id: clientId,
      }, http ? 1 : 5);
      const plain = select(inbound, "tcp_open_total", {
        direction: "inbound",
        target_addr: (v) => v?.endsWith(`:${APP_PORT}`) ?? false,
        tls: (v) => v !== "true",
      });
      assert.equal(
        sum(plain, "tcp_open_total"),
        0,
        `plaintext inbound to the app port: ${JSON.stringify(plain)}`,
      );

      const outbound = await proxyMetrics(client.status.podIP);
      const family = http ? "request_total" : "tcp_open_total";
      const toServer = sum(outbound, family, { direction: "outbound", tls: "true", server_id: serverId });
      assert.ok(toServer >= 5, `client outbound ${family} tls=true server_id=${serverId}: ${toServer}`);
      if (http) {
        await waitForMetric(server.status.podIP, "request_total", {
          direction: "inbound",
          tls: "true",
          client_id: clientId,
        }, 5);
      }
    });
  },
});
