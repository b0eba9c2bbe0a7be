// Cluster e2e, hostile: attacks that come from another pod, as a tenant of a shared cluster could make them.
// Each test attacks through the real cluster network (pod → pod, pod → Service) and checks both that the attack
// fails and that a well-behaved client sharing the attacked proxy keeps being served.
import assert from "node:assert/strict";
import {
  apply,
  CONTROL_PLANE_NS,
  inNamespace,
  type Json,
  kjson,
  requireMesh,
  waitForReadyPods,
} from "./lib/kube.ts";
import { proxyReady } from "./lib/mesh.ts";
import { Annotations } from "../../proto/annotations.ts";
import { ProxyEnv } from "../../proto/env.ts";
import {
  APP_PORT,
  appManifest,
  byPod,
  certifyFloodFrom,
  fetchFrom,
  PROXY_ADMIN_PORT,
  PROXY_CONTAINER,
  startSession,
  stopSession,
} from "./lib/workloads.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const UNMESHED = { "linkerd.io/inject": "disabled" };

/** Restarts of every container of the pods matching `selector` (the proxy is an init container when native). */
async function restarts(ns: string, selector: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of (await kjson(["-n", ns, "get", "pods", "-l", selector])).items as Json[]) {
    for (const c of [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])]) {
      out[`${p.metadata.name}/${c.name}`] = c.restartCount ?? 0;
    }
  }
  return out;
}

/** The proxy container's environment variable `name` in `pod`, or undefined. */
function proxyEnv(pod: Json, name: string): string | undefined {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  const proxy = all.find((c: Json) => c.name === PROXY_CONTAINER);
  return proxy?.env?.find((e: Json) => e.name === name)?.value;
}

Deno.test({
  name: "hostile (cluster): another pod cannot stop a proxy through its admin port",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-hostile-admin", { inject: true }, async (ns) => {
      // The worst case: a pod that opted in to the shutdown endpoint (a Job's, say).
      const optIn = { [Annotations.proxyAdminShutdown]: "enabled" };
      await apply(ns, appManifest({ name: "server", service: true, podAnnotations: optIn }));
      await apply(ns, appManifest({ name: "plain" }));
      await apply(ns, appManifest({ name: "client" }));
      await apply(ns, appManifest({ name: "outsider", podAnnotations: UNMESHED }));
      const [server] = await waitForReadyPods(ns, "app=server", 1);
      const [plain] = await waitForReadyPods(ns, "app=plain", 1);
      const [client] = await waitForReadyPods(ns, "app=client", 1);
      const [outsider] = await waitForReadyPods(ns, "app=outsider", 1);
      // The injector turns the endpoint on only for the pod that asked for it.
      assert.equal(proxyEnv(server, ProxyEnv.shutdownEndpointEnabled), "true");
      assert.equal(proxyEnv(plain, ProxyEnv.shutdownEndpointEnabled), undefined);
      const before = await restarts(ns, "app in (server,plain)");

      // A well-behaved client keeps one connection open to the server through the whole attack.
      await startSession(client.status.podIP, `server.${ns}.svc.cluster.local:80`, 100);
      const shutdown = { method: "POST", path: "/shutdown" };
      const admin = (pod: Json) => `${pod.status.podIP}:${PROXY_ADMIN_PORT}`;
      const fromMeshed = await fetchFrom(client.status.podIP, admin(server), 5, 3000, 100, shutdown);
      const fromOutsider = await fetchFrom(outsider.status.podIP, admin(server), 5, 3000, 100, shutdown);
      const toPlain = await fetchFrom(outsider.status.podIP, admin(plain), 3, 3000, 100, shutdown);
      // Probes and Prometheus still reach the admin port from outside the pod.
      const probes = await Promise.all(
        ["/live", "/ready", "/metrics"].map(async (path) =>
          [
            path,
            (await fetchFrom(outsider.status.podIP, admin(server), 1, 3000, 0, { path }))[0].status,
          ] as const
        ),
      );
      await new Promise((r) => setTimeout(r, 2000));
      const stats = await stopSession(client.status.podIP);

      for (const [who, answers] of [["meshed pod", fromMeshed], ["unmeshed pod", fromOutsider]] as const) {
        const stopped = answers.filter((a) => a.status === 200);
        assert.equal(
          stopped.length,
          0,
          `POST /shutdown from a ${who} was accepted: ${JSON.stringify(answers)}`,
        );
      }
      // Straight to the admin port, the refusal is explicit: 403 where enabled, 404 where not.
      assert.deepEqual(fromOutsider.map((a) => a.status), [403, 403, 403, 403, 403]);
      assert.deepEqual(toPlain.map((a) => a.status), [404, 404, 404]);
      assert.deepEqual(Object.fromEntries(probes), { "/live": 200, "/ready": 200, "/metrics": 200 });
      assert.deepEqual(await restarts(ns, "app in (server,plain)"), before, "a proxy restarted");
      assert.ok(stats.ok >= 10, `the well-behaved session made too few requests: ${JSON.stringify(stats)}`);
      assert.equal(
        stats.failed,
        0,
        `the well-behaved session failed during the attack: ${JSON.stringify(stats)}`,
      );
      assert.equal(
        stats.reconnects,
        0,
        `the well-behaved session lost its connection: ${JSON.stringify(stats)}`,
      );
    });
  },
});

Deno.test({
  name: "hostile (cluster): an app port bound to 127.0.0.1 is unreachable from other pods",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-hostile-loopback", { inject: true }, async (ns) => {
      const LOOPBACK_PORT = 7000;
      await apply(ns, appManifest({ name: "server", env: { LOOPBACK_PORT: String(LOOPBACK_PORT) } }));
      await apply(ns, appManifest({ name: "client" }));
      await apply(ns, appManifest({ name: "outsider", podAnnotations: UNMESHED }));
      const [server] = await waitForReadyPods(ns, "app=server", 1);
      const [client] = await waitForReadyPods(ns, "app=client", 1);
      const [outsider] = await waitForReadyPods(ns, "app=outsider", 1);

      // Control: the private port is alive, and answers inside its own pod.
      const inside = await fetchFrom(server.status.podIP, `127.0.0.1:${LOOPBACK_PORT}`, 1);
      assert.ok(inside[0].ok, `the private port does not answer inside its pod: ${JSON.stringify(inside)}`);

      const privateTarget = `${server.status.podIP}:${LOOPBACK_PORT}`;
      const publicTarget = `${server.status.podIP}:${APP_PORT}`;
      for (const [who, from] of [["meshed", client], ["unmeshed", outsider]] as const) {
        const attack = await fetchFrom(from.status.podIP, privateTarget, 3, 3000);
        assert.equal(
          attack.filter((a) => a.ok).length,
          0,
          `a ${who} pod reached 127.0.0.1:${LOOPBACK_PORT} of another pod: ${JSON.stringify(byPod(attack))}`,
        );
        const good = await fetchFrom(from.status.podIP, publicTarget, 5, 3000);
        assert.deepEqual(byPod(good), { [server.metadata.name]: 5 }, `the ${who} pod's good requests`);
      }
    });
  },
});

/** Seconds from applying `name` (a meshed Deployment) to all its pods being Ready. */
async function timeToReady(ns: string, name: string, replicas: number): Promise<number> {
  const t0 = performance.now();
  await apply(ns, appManifest({ name, replicas }));
  await waitForReadyPods(ns, `app=${name}`, replicas, 180_000);
  return (performance.now() - t0) / 1000;
}

Deno.test({
  name: "hostile (cluster): a pod flooding identity with junk tokens does not stop other pods certifying",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-hostile-identity", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "flooder", podAnnotations: UNMESHED }));
      const [flooder] = await waitForReadyPods(ns, "app=flooder", 1);
      const identityRestarts = await restarts(
        CONTROL_PLANE_NS,
        "linkerd.io/control-plane-component=identity",
      );
      const calm = await timeToReady(ns, "calm", 2);

      const target = `weft-identity.${CONTROL_PLANE_NS}.svc.cluster.local:8080`;
      const flood = certifyFloodFrom(flooder.status.podIP, target, 25, 16);
      await new Promise((r) => setTimeout(r, 3000));
      const during = await timeToReady(ns, "late", 2);
      const report = await flood;
      console.log(
        `pods ready: ${calm.toFixed(1)} s without the flood, ${during.toFixed(1)} s during it; ` +
          `flood: ${JSON.stringify(report)}`,
      );

      // The flooder got answers, every one a refusal: no certificate for a junk or forged token.
      assert.ok(report.sent >= 100, `the flood sent too little to mean anything: ${JSON.stringify(report)}`);
      assert.equal(
        report.statuses["grpc-status 0"] ?? 0,
        0,
        `a hostile Certify succeeded: ${JSON.stringify(report)}`,
      );
      // The pods started during the flood certified: a proxy is ready only once it holds a certificate.
      for (const p of await waitForReadyPods(ns, "app=late", 2)) {
        const r = await proxyReady(p.status.podIP);
        assert.equal(r.status, 200, `${p.metadata.name}'s proxy: ${r.body}`);
      }
      assert.deepEqual(
        await restarts(CONTROL_PLANE_NS, "linkerd.io/control-plane-component=identity"),
        identityRestarts,
        "the identity pod restarted during the flood",
      );
      // Still serving after the flood: one more workload certifies.
      await timeToReady(ns, "after", 1);
    });
  },
});
