// Cluster e2e: a meshed pod's proxy obtains its workload certificate from the identity controller, which
// checks the pod's projected ServiceAccount token with a real TokenReview.
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
import { proxyLog, proxyMetrics, proxyReady } from "./lib/mesh.ts";
import { parseMetrics, type Sample, sum } from "./lib/prom.ts";
import { appManifest, identityOf, PROXY_CONTAINER } from "./lib/workloads.ts";
import { waitFor } from "./lib/wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/** The identity controller's own metrics: the first container port of its pod that serves them. */
async function identityControllerMetrics(): Promise<Sample[]> {
  const list = await kjson([
    "-n",
    CONTROL_PLANE_NS,
    "get",
    "pods",
    "-l",
    "linkerd.io/control-plane-component=identity",
  ]);
  const tried: string[] = [];
  for (const pod of list.items as Json[]) {
    if (!pod.status?.podIP) continue;
    for (const c of pod.spec.containers as Json[]) {
      if (c.name === PROXY_CONTAINER) continue;
      for (const p of c.ports ?? []) {
        const url = `http://${pod.status.podIP}:${p.containerPort}/metrics`;
        tried.push(url);
        try {
          const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
          const text = await res.text();
          if (res.ok && text.includes("identity_token_reviews_total")) return parseMetrics(text);
        } catch { /* not this port */ }
      }
    }
  }
  throw new Error(
    `no identity controller metrics (identity_token_reviews_total) found; tried ${tried.join(", ")}`,
  );
}

Deno.test({
  name: "e2e: the proxy is certified through the identity controller's TokenReview",
  ...opts,
  fn: async () => {
    await requireMesh();
    const before = await identityControllerMetrics();
    await inNamespace("e2e-identity", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "certified", serviceAccount: "certified-sa" }));
      const [pod] = await waitForReadyPods(ns, "app=certified", 1);
      const ip = pod.status.podIP;
      const expected = identityOf("certified-sa", ns);

      const ready = await proxyReady(ip);
      assert.equal(ready.status, 200, `proxy /ready: ${ready.status} ${ready.body}`);
      const m = await proxyMetrics(ip);
      const expiry = sum(m, "identity_cert_expiration_timestamp_seconds");
      const now = Date.now() / 1000;
      assert.ok(
        expiry > now && expiry < now + 25 * 3600,
        `certificate expiry ${expiry} is not within 25 h of now`,
      );
      const log = await proxyLog(ns, pod.metadata.name);
      assert.ok(log.includes(expected), `the proxy log names its identity ${expected}:\n${log.slice(-2000)}`);

      // The controller reviewed a token and issued a certificate since this test began (other pods may add more).
      let after: Sample[] = [];
      await waitFor("identity controller counted the TokenReview and the issued certificate", async () => {
        after = await identityControllerMetrics();
        const reviewed = sum(after, "identity_token_reviews_total", { result: "authenticated" }) -
          sum(before, "identity_token_reviews_total", { result: "authenticated" });
        const issued = sum(after, "identity_certificates_issued_total") -
          sum(before, "identity_certificates_issued_total");
        return reviewed >= 1 && issued >= 1;
      }, {
        timeoutMs: 15_000,
        describe: () =>
          after.filter((s) =>
            s.name.startsWith("identity_token_reviews") || s.name.startsWith("identity_cert")
          )
            .map((s) => `${s.name}${JSON.stringify(s.labels)} ${s.value}`).join(", "),
      });
    });
  },
});
