// Cluster e2e: an HTTPLocalRateLimitPolicy on a meshed pod's Server. The policy controller marks it Accepted and
// sends it to the pod's proxy, which answers 429 above the limits: a client over its per-identity limit is
// refused while a client named in an override keeps its higher limit; lowering the total then limits everyone.
// The backend's proxy counts the refusals in inbound_http_local_ratelimit_total. The admission webhook refuses a
// policy whose target is not a Server. Load is bounded: at most 10 requests per
// check, one check a second.
import assert from "node:assert/strict";
import { apply, inNamespace, kjson, kubectl, requireMesh, waitForReadyPods } from "./lib/kube.ts";
import { proxyMetrics } from "./lib/mesh.ts";
import { sum } from "./lib/prom.ts";
import { type Answer, APP_PORT, appManifest, fetchFrom, identityOf } from "./lib/workloads.ts";
import { sleep, waitFor } from "./lib/wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const BURST = 10;

const server = {
  apiVersion: "policy.linkerd.io/v1beta3",
  kind: "Server",
  metadata: { name: "backend-http" },
  spec: {
    podSelector: { matchLabels: { app: "backend" } },
    port: APP_PORT,
    proxyProtocol: "HTTP/1",
    // Authorization is not what this test is about: let every client in.
    accessPolicy: "all-unauthenticated",
  },
};

function rateLimit(spec: Record<string, unknown>) {
  return {
    apiVersion: "policy.linkerd.io/v1alpha1",
    kind: "HTTPLocalRateLimitPolicy",
    metadata: { name: "backend-rl" },
    spec: { targetRef: { group: "policy.linkerd.io", kind: "Server", name: "backend-http" }, ...spec },
  };
}

const count = (answers: Answer[], status: number) => answers.filter((a) => a.status === status).length;
const summary = (answers: Answer[]) => answers.map((a) => a.status ?? a.error).join(",");

/** BURST requests from a pod, each on a new connection, back to back; with the time they took. */
async function burst(fromIp: string, target: string): Promise<{ answers: Answer[]; seconds: number }> {
  const t0 = performance.now();
  const answers = await fetchFrom(fromIp, target, BURST, 3000);
  return { answers, seconds: (performance.now() - t0) / 1000 };
}

/** What a token bucket of `rps` (starting full) can let through in `seconds`, with one token of slack. */
const allowance = (rps: number, seconds: number) => rps + Math.ceil(rps * seconds) + 1;

Deno.test({
  name: "e2e: HTTPLocalRateLimitPolicy answers 429 above the limit and honours a per-identity override",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-ratelimit", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "backend", service: true }));
      await apply(ns, appManifest({ name: "vip" }));
      await apply(ns, appManifest({ name: "plain" }));
      const [backend] = await waitForReadyPods(ns, "app=backend", 1);
      const [vip] = await waitForReadyPods(ns, "app=vip", 1);
      const [plain] = await waitForReadyPods(ns, "app=plain", 1);
      const target = `backend.${ns}.svc.cluster.local:80`;

      // Admission: a target that is not a Server is refused, naming the field.
      const bad = await kubectl(["-n", ns, "apply", "--dry-run=server", "-f", "-"], {
        stdin: JSON.stringify({
          ...rateLimit({}),
          spec: { targetRef: { kind: "Service", name: "backend" } },
        }),
      });
      assert.notEqual(bad.code, 0, "a policy targeting a Service must be refused");
      assert.match(bad.stderr, /spec\.targetRef\.kind/);

      await apply(ns, JSON.stringify(server));
      await apply(
        ns,
        JSON.stringify(rateLimit({
          total: { requestsPerSecond: 50 },
          identity: { requestsPerSecond: 2 },
          overrides: [{ requestsPerSecond: 20, clientRefs: [{ kind: "ServiceAccount", name: "vip" }] }],
        })),
      );

      // The controller accepts the policy in its status.
      let status: unknown;
      await waitFor("the policy to be Accepted", async () => {
        status = (await kjson(["-n", ns, "get", "httplocalratelimitpolicy", "backend-rl"])).status;
        const c = (status as { conditions?: { type: string; status: string }[] })?.conditions;
        return c?.some((x) => x.type === "Accepted" && x.status === "True") ?? false;
      }, { timeoutMs: 30_000, intervalMs: 1000, describe: () => JSON.stringify(status) });

      // The limit reaches the backend's proxy through the policy watch: wait until the plain client is limited.
      let last: Answer[] = [];
      await waitFor("the plain client to be rate limited", async () => {
        last = (await burst(plain.status.podIP, target)).answers;
        return count(last, 429) > 0;
      }, { timeoutMs: 60_000, intervalMs: 1000, describe: () => summary(last) });

      // Let both buckets refill, then the same burst from each client.
      await sleep(1500);
      const v = await burst(vip.status.podIP, target);
      const p = await burst(plain.status.podIP, target);
      assert.equal(count(v.answers, 200), BURST, `vip (override 20/s): ${summary(v.answers)}`);
      assert.ok(count(p.answers, 429) >= 1, `plain (2/s): want 429s, got ${summary(p.answers)}`);
      assert.ok(
        count(p.answers, 200) <= allowance(2, p.seconds),
        `plain (2/s) got ${count(p.answers, 200)} answers in ${p.seconds.toFixed(2)}s: ${summary(p.answers)}`,
      );
      assert.equal(count(p.answers, 200) + count(p.answers, 429), BURST, summary(p.answers));
      // The backend's proxy counts the refusals by policy and scope (an override counts as identity), as Linkerd.
      const m = await proxyMetrics(backend.status.podIP);
      const limitedOf = (sa: string) =>
        sum(m, "inbound_http_local_ratelimit_total", {
          srv_name: "backend-http",
          ratelimit_kind: "HTTPLocalRateLimitPolicy",
          ratelimit_name: "backend-rl",
          ratelimit_scope: "identity",
          client_id: identityOf(sa, ns),
        });
      assert.ok(limitedOf("plain") >= count(p.answers, 429), `plain refusals counted: ${limitedOf("plain")}`);
      assert.equal(limitedOf("vip"), 0, "the vip client was never limited");

      // Lowering the total limits the vip client too: the total is checked before any override.
      await apply(ns, JSON.stringify(rateLimit({ total: { requestsPerSecond: 3 } })));
      let lastVip: Answer[] = [];
      await waitFor("the vip client to be limited by the lower total", async () => {
        const b = await burst(vip.status.podIP, target);
        lastVip = b.answers;
        return count(b.answers, 429) > 0 && count(b.answers, 200) <= allowance(3, b.seconds);
      }, { timeoutMs: 60_000, intervalMs: 1000, describe: () => summary(lastVip) });
    });
  },
});
