// Cluster e2e: the deployed dashboard's API, through a port-forward as `weft dashboard` reaches it, with the
// demo running (`deno task demo`; started here when absent): the demo's three request-serving services appear with non-zero RPS, the
// workload charts have points, the overview's checks and certificates are there; and a viewer can change
// nothing — every method but GET is refused, and the dashboard's ServiceAccount may not write.
import assert from "node:assert/strict";
import { kubectl, requireMesh } from "./lib/kube.ts";
import { DEMO_NS, DEMO_SERVICES, ensureDemo, openDashboard } from "./lib/dashboard.ts";
import { waitFor } from "./lib/wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const SA = "system:serviceaccount:weft:weft-dashboard";

async function getJson(base: string, path: string) {
  const r = await fetch(base + path, { signal: AbortSignal.timeout(30_000) });
  const text = await r.text();
  assert.equal(r.status, 200, `${path}: HTTP ${r.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

Deno.test({
  name: "dashboard API: demo services with RPS, charts, overview; read-only for the viewer",
  ...opts,
  async fn(t) {
    await requireMesh();
    assert.deepEqual(await ensureDemo(), [], `the demo is not running in ${DEMO_NS} (deno task demo)`);
    const pf = await openDashboard(AbortSignal.timeout(180_000));
    try {
      const base = pf.url;

      await t.step(`/api/stat lists ${DEMO_SERVICES.join(", ")} with non-zero RPS`, async () => {
        let rows: { name: string; rps: number | null; success: number | null }[] = [];
        await waitFor(`RPS for ${DEMO_SERVICES.join(", ")}`, async () => {
          rows = (await getJson(base, `/api/stat?ns=${DEMO_NS}&kind=deployment&window=1m`)).rows;
          return DEMO_SERVICES.every((n) => (rows.find((r) => r.name === n)?.rps ?? 0) > 0);
        }, { timeoutMs: 90_000, describe: () => JSON.stringify(rows) });
        for (const n of DEMO_SERVICES) {
          const r = rows.find((x) => x.name === n)!;
          console.log(`  ${n}: ${r.rps?.toFixed(2)} rps, success ${r.success}`);
        }
      });

      await t.step("/api/series for web: inbound and outbound charts with points on a 5m grid", async () => {
        // A demo started moments ago has few points yet: wait for two (each new step adds one).
        // deno-lint-ignore no-explicit-any
        let s: any;
        const points = (xs: (number | null)[]) => xs.filter((v) => v !== null && v > 0).length;
        await waitFor("two inbound and outbound RPS points for web", async () => {
          s = await getJson(base, `/api/series?ns=${DEMO_NS}&kind=deployment&name=web&window=5m`);
          return points(s.inbound.rps) >= 2 && points(s.outbound.rps) >= 2;
        }, { timeoutMs: 90_000, intervalMs: 5_000, describe: () => JSON.stringify(s?.inbound.rps) });
        assert.equal(s.count, 31);
        for (const dir of ["inbound", "outbound"]) {
          for (const k of ["rps", "success", "p50", "p95", "p99"]) {
            assert.equal(s[dir][k].length, s.count, `${dir}.${k}`);
          }
        }
        assert.ok(s.inbound.p99.some((v: number | null) => v !== null && v > 0), "p99 points");
        console.log(
          `  web: ${points(s.inbound.rps)} inbound, ${points(s.outbound.rps)} outbound RPS points of 31`,
        );
      });

      await t.step(
        "/api/overview: checks run, certificates with days left, the demo namespace meshed",
        async () => {
          const o = await getJson(base, "/api/overview");
          const names = o.checks.map((c: { group: string; name: string }) => `${c.group}/${c.name}`);
          for (const want of ["cluster/API server", "control plane/weft-dashboard", "data plane/proxies"]) {
            assert.ok(names.includes(want), `${want} in ${names}`);
          }
          const fails = o.checks.filter((c: { outcome: string }) => c.outcome === "fail");
          assert.deepEqual(
            fails,
            [],
            "no check fails with read-only access (a forbidden read would fail here)",
          );
          assert.ok(o.skipped.length > 0);
          const roles = o.certificates.map((c: { role: string; daysLeft: number }) => c.role);
          assert.ok(roles.includes("anchor") && roles.includes("issuer"), JSON.stringify(o.certificates));
          for (const c of o.certificates) assert.ok(c.daysLeft > 0, JSON.stringify(c));
          const demo = o.namespaces.find((n: { name: string }) => n.name === DEMO_NS);
          assert.ok(demo?.meshed >= 5, JSON.stringify(demo));
        },
      );

      await t.step("/api/routes and /api/policy answer for web", async () => {
        const r = await getJson(base, `/api/routes?ns=${DEMO_NS}&kind=deployment&name=web&window=1m`);
        assert.ok(r.rows.length > 0, "web's inbound routes");
        const p = await getJson(base, `/api/policy?ns=${DEMO_NS}&kind=deployment&name=web`);
        assert.ok(p.defaultPolicy.value, JSON.stringify(p));
      });

      await t.step(
        "/api/pods lists web's pods; /api/route reads both route API groups with the dashboard's RBAC",
        async () => {
          const pods = await getJson(base, `/api/pods?ns=${DEMO_NS}&kind=deployment&name=web`);
          assert.ok(pods.pods.length >= 1, JSON.stringify(pods));
          assert.ok(
            pods.pods.every((p: { name: string; meshed: boolean }) => p.name.startsWith("web-") && p.meshed),
          );
          // No such route: a 404 that names where it looked (a 403 would mean the ServiceAccount may not read them).
          for (const kind of ["httproutes", "grpcroutes", "serviceprofiles"]) {
            const r = await fetch(`${base}/api/route?ns=${DEMO_NS}&kind=${kind}&name=no-such-route`, {
              signal: AbortSignal.timeout(30_000),
            });
            const body = await r.json();
            assert.equal(r.status, 404, `${kind}: ${JSON.stringify(body)}`);
            assert.match(body.error, /does not exist/);
          }
          // The older duplicates of /api/topology and /api/tap/rows are gone.
          for (const path of ["/api/edges?ns=weft-demo", "/api/tap?ns=weft-demo&resource=deploy/web"]) {
            const r = await fetch(base + path, { signal: AbortSignal.timeout(10_000) });
            await r.body?.cancel();
            assert.equal(r.status, 404, path);
          }
        },
      );

      await t.step("attack: POST/PUT/PATCH/DELETE are refused and change nothing", async () => {
        for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
          for (const path of ["/api/stat", "/api/tap/rows?ns=weft-demo&resource=deploy/web", "/overview"]) {
            const r = await fetch(base + path, { method, body: "{}", signal: AbortSignal.timeout(10_000) });
            await r.body?.cancel();
            assert.equal(r.status, 405, `${method} ${path}`);
          }
        }
        // fetch() will not send a Host of our choosing: a raw request, as a rebinding page's browser would send it.
        const u = new URL(base);
        const conn = await Deno.connect({ hostname: u.hostname, port: Number(u.port) });
        await conn.write(new TextEncoder().encode(
          "GET /api/stat?ns=weft-demo HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
        ));
        const head = new TextDecoder().decode((await new Response(conn.readable).bytes()).slice(0, 64));
        assert.match(head, /^HTTP\/1\.1 421 /, "a foreign Host (DNS rebinding) is refused");
      });

      await t.step("attack: the dashboard's ServiceAccount cannot write or read Secrets", async () => {
        for (
          const [verb, res, sub] of [
            ["create", "pods"],
            ["delete", "pods"],
            ["patch", "deployments"],
            ["create", "pods", "--subresource=exec"],
            ["get", "secrets"],
            ["list", "secrets"],
            ["update", "configmaps"],
            ["create", "servers.policy.linkerd.io"],
            ["get", "pods", "--subresource=proxy"],
            ["create", "services", "--subresource=proxy"],
          ]
        ) {
          for (const ns of ["weft", DEMO_NS]) {
            const r = await kubectl([
              "auth",
              "can-i",
              `--as=${SA}`,
              "-n",
              ns,
              verb,
              res,
              ...(sub ? [sub] : []),
            ]);
            assert.equal(r.stdout.trim(), "no", `${SA} can ${verb} ${res} ${sub ?? ""} in ${ns}`);
          }
        }
        const yes = await kubectl(["auth", "can-i", `--as=${SA}`, "-n", DEMO_NS, "list", "pods"]);
        assert.equal(yes.stdout.trim(), "yes", "it can read what the pages show");
      });
    } finally {
      await pf.close();
    }
  },
});
