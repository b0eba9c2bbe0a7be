// Cluster e2e: an identity-restricted policy.linkerd.io Server lets the authorized client's identity in and
// refuses another meshed client; a Server with no authorization refuses everyone.
import assert from "node:assert/strict";
import { apply, inNamespace, requireMesh, waitForReadyPods } from "./lib/kube.ts";
import { proxyMetrics } from "./lib/mesh.ts";
import { sum } from "./lib/prom.ts";
import { type Answer, APP_PORT, appManifest, byPod, fetchFrom, identityOf } from "./lib/workloads.ts";
import { waitFor } from "./lib/wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

function serverPolicy(allowSa: string | undefined): string {
  const items: unknown[] = [{
    apiVersion: "policy.linkerd.io/v1beta3",
    kind: "Server",
    metadata: { name: "backend-http" },
    spec: { podSelector: { matchLabels: { app: "backend" } }, port: APP_PORT, proxyProtocol: "unknown" },
  }];
  if (allowSa) {
    items.push({
      apiVersion: "policy.linkerd.io/v1alpha1",
      kind: "MeshTLSAuthentication",
      metadata: { name: "allowed-client" },
      spec: { identityRefs: [{ kind: "ServiceAccount", name: allowSa }] },
    }, {
      apiVersion: "policy.linkerd.io/v1alpha1",
      kind: "AuthorizationPolicy",
      metadata: { name: "backend-http" },
      spec: {
        targetRef: { group: "policy.linkerd.io", kind: "Server", name: "backend-http" },
        requiredAuthenticationRefs: [{
          group: "policy.linkerd.io",
          kind: "MeshTLSAuthentication",
          name: "allowed-client",
        }],
      },
    });
  }
  return JSON.stringify({ apiVersion: "v1", kind: "List", items });
}

Deno.test({
  name: "e2e: an identity-restricted Server allows the right client and refuses the wrong one",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-policy", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "backend", service: true }));
      await apply(ns, appManifest({ name: "good" }));
      await apply(ns, appManifest({ name: "bad" }));
      const [backend] = await waitForReadyPods(ns, "app=backend", 1);
      const [good] = await waitForReadyPods(ns, "app=good", 1);
      const [bad] = await waitForReadyPods(ns, "app=bad", 1);
      const target = `backend.${ns}.svc.cluster.local:80`;
      const ok = { [backend.metadata.name]: 3 };
      // Before any policy the namespace default lets both in.
      assert.deepEqual(byPod(await fetchFrom(bad.status.podIP, target, 3)), ok);

      await apply(ns, serverPolicy("good"));
      // The policy reaches the backend's proxy through the policy controller's watch: wait for it, bounded.
      let last: Answer[] = [];
      await waitFor("the wrong client to be refused", async () => {
        last = await fetchFrom(bad.status.podIP, target, 3, 2000);
        return last.every((a) => !a.ok);
      }, { timeoutMs: 60_000, intervalMs: 1000, describe: () => JSON.stringify(byPod(last)) });
      assert.deepEqual(byPod(await fetchFrom(good.status.podIP, target, 3)), ok, "the authorized client");

      // Refusals are counted per connection for TCP and per request once the proxy speaks HTTP.
      const counted = (kind: "allow" | "deny", sa: string) => async () => {
        const m = await proxyMetrics(backend.status.podIP);
        const labels = { srv_name: "backend-http", client_id: identityOf(sa, ns) };
        return sum(m, `inbound_tcp_authz_${kind}_total`, labels) +
            sum(m, `inbound_http_authz_${kind}_total`, labels) >= 1;
      };
      await waitFor("the refusal of the wrong client to be counted", counted("deny", "bad"), {
        timeoutMs: 30_000,
        intervalMs: 1000,
      });
      await waitFor("the authorized client to be counted", counted("allow", "good"), {
        timeoutMs: 30_000,
        intervalMs: 1000,
      });
    });
  },
});

Deno.test({
  name: "e2e: a Server without any authorization refuses every client",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-deny", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "backend", service: true }));
      await apply(ns, appManifest({ name: "client" }));
      const [backend] = await waitForReadyPods(ns, "app=backend", 1);
      const [client] = await waitForReadyPods(ns, "app=client", 1);
      const target = `backend.${ns}.svc.cluster.local:80`;
      assert.deepEqual(byPod(await fetchFrom(client.status.podIP, target, 2)), {
        [backend.metadata.name]: 2,
      });

      await apply(ns, serverPolicy(undefined));
      let last: Answer[] = [];
      await waitFor("every request to be refused", async () => {
        last = await fetchFrom(client.status.podIP, target, 3, 2000);
        return last.every((a) => !a.ok);
      }, { timeoutMs: 60_000, intervalMs: 1000, describe: () => JSON.stringify(byPod(last)) });
      // The pod stays ready: its probe port is not covered by the Server.
      await waitForReadyPods(ns, "app=backend", 1, 10_000);
    });
  },
});
