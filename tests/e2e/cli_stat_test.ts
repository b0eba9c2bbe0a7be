// Cluster e2e of the operator's views (issue 22, part B): the demo (HTTP/1 web → api, gRPC, raw TCP, each with a
// load client at 5 requests/s) runs in its own namespace; the embedded Prometheus scrapes its proxies. Then:
// - `weft stat deploy -n NS` gives each service's RPS and success rate within a stated tolerance of what the load
//   clients themselves counted over the same minute (RPS: 10% plus 0.6 rps per pod for the kubelet's readiness
//   probes, one every 2 s per pod, which reach the server proxies too and which the clients do not count;
//   success: 2 points); every pod meshed;
//   the clients' own view (`--to`) within 10% with no probe allowance;
// - `weft edges deploy -n NS` lists every demo edge with both identities, all mTLS;
// - `weft top -n NS` lists the edges heaviest first, web-load → web within 10% of the client's count;
// - an HTTPRoute sending a quarter of web's traffic to a Service that does not exist (the proxy answers 500, as
//   Linkerd's does for an invalid backend) shows in `weft routes svc/web` and `weft stat svc/web` at the success
//   rate the load client saw (±8 points), about 75%; `weft stat httproute/web-split` gives one row on
//   svc/web:8080 at that success rate (±8 points) and the client's rate (±10%).
// Needs the mesh deployed with its embedded Prometheus (deno task deploy). Load is the demo's: bounded rates.
import assert from "node:assert/strict";
import { dispatch } from "../../cli/dispatch.ts";
import { COMMANDS } from "../../cli/commands.ts";
import { recordingContext } from "../../cli/testing.ts";
import { formatWorkloadIdentity } from "../../proto/identity_name.ts";
import { apply, CONTROL_PLANE_NS, type Json, kjson, KUBECONFIG, kubectl, requireMesh } from "./lib/kube.ts";
import { parseMetrics, sum } from "./lib/prom.ts";
import { sleep } from "./lib/wait.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const TRUST_DOMAIN = Deno.env.get("WEFT_TRUST_DOMAIN") ?? "cluster.local";
/** Kubelet readiness probes: one every 2 s per pod (the demo manifests), through the server proxy. */
const PROBE_RPS_PER_POD = 0.6;

async function weft(args: string[]): Promise<Json> {
  const ctx = recordingContext({ env: { KUBECONFIG } });
  const code = await dispatch(COMMANDS, args, ctx);
  if (code !== 0) throw new Error(`weft ${args.join(" ")} exited ${code}: ${ctx.stderr.join("\n")}`);
  return JSON.parse(ctx.stdout.join(""));
}

/** Per load client app: the requests it counted, by result. */
async function clientCounts(ns: string): Promise<Map<string, { success: number; failure: number }>> {
  const list = (await kjson(["-n", ns, "get", "pods", "-l", "demo.weft.io/role=load"])).items as Json[];
  const out = new Map<string, { success: number; failure: number }>();
  for (const p of list.filter((x) => x.status?.phase === "Running")) {
    const res = await fetch(`http://${p.status.podIP}:9990/metrics`, { signal: AbortSignal.timeout(5000) });
    const s = parseMetrics(await res.text());
    out.set(p.metadata.labels.app, {
      success: sum(s, "demo_client_requests_total", { result: "success" }),
      failure: sum(s, "demo_client_requests_total", { result: "failure" }),
    });
  }
  return out;
}

/** What each load client saw between two counts: requests per second and success rate. */
function clientView(a: Map<string, { success: number; failure: number }>, b: typeof a, seconds: number) {
  const out = new Map<string, { rps: number; success: number }>();
  for (const [app, x] of b) {
    const y = a.get(app) ?? { success: 0, failure: 0 };
    const ok = x.success - y.success, bad = x.failure - y.failure;
    out.set(app, { rps: (ok + bad) / seconds, success: ok / Math.max(1, ok + bad) });
  }
  return out;
}

Deno.test({
  name: "e2e: weft stat, edges and routes on the demo agree with what the load clients measured",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await requireMesh();
    const svc = await kubectl(["-n", CONTROL_PLANE_NS, "get", "service", "weft-prometheus"]);
    if (svc.code !== 0) {
      throw new Error(
        "needs the embedded Prometheus: Service weft/weft-prometheus is missing (deno task deploy)",
      );
    }
    const ns = `e2e-cli-${crypto.randomUUID().slice(0, 6)}`;
    try {
      const demo = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "tests/demo/main.ts", "--namespace", ns, "--window", "5", "--warmup", "2"],
        cwd: ROOT,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const dec = new TextDecoder();
      if (!demo.success) {
        throw new Error(`the demo failed:\n${dec.decode(demo.stdout)}${dec.decode(demo.stderr)}`);
      }
      // More than a window of steady traffic in the store (10 s scrapes) before the measured minute.
      await sleep(70_000);

      const c0 = await clientCounts(ns);
      const t0 = Date.now();
      await sleep(60_000);
      const c1 = await clientCounts(ns);
      const seen = clientView(c0, c1, (Date.now() - t0) / 1000);
      const stat: Json[] = await weft(["stat", "deploy", "-n", ns, "-t", "1m", "-o", "json"]);
      const row = (name: string) => stat.find((r) => r.name === name);
      for (const [load, server] of [["web-load", "web"], ["web-load", "api"], ["grpc-load", "grpc"]]) {
        const c = seen.get(load)!;
        const r = row(server);
        console.log(
          `${server}: weft stat ${r?.rps?.toFixed(2)} rps, ${
            (r?.success * 100).toFixed(1)
          }% (meshed ${r?.meshed}); ` +
            `${load} counted ${c.rps.toFixed(2)} rps, ${(c.success * 100).toFixed(1)}%`,
        );
        assert.ok(r, `no stat row for ${server}: ${JSON.stringify(stat)}`);
        assert.ok(
          r.running_pods >= 1 && r.meshed === `${r.running_pods}/${r.running_pods}`,
          `meshed ${r.meshed}`,
        );
        const tolerance = 0.1 * c.rps + PROBE_RPS_PER_POD * r.running_pods;
        assert.ok(Math.abs(r.rps - c.rps) <= tolerance, `${server} rps ${r.rps} vs ${c.rps} (±${tolerance})`);
        assert.ok(Math.abs(r.success - c.success) <= 0.02, `${server} success ${r.success} vs ${c.success}`);
      }
      const to: Json[] = await weft([
        "stat",
        "deploy/web-load",
        "-n",
        ns,
        "--to",
        "deploy/web",
        "-t",
        "1m",
        "-o",
        "json",
      ]);
      const web = seen.get("web-load")!;
      console.log(
        `web-load --to web: weft stat ${to[0]?.rps?.toFixed(2)} rps; web-load counted ${web.rps.toFixed(2)}`,
      );
      assert.ok(Math.abs(to[0].rps - web.rps) <= 0.1 * web.rps, `--to rps ${to[0]?.rps} vs ${web.rps}`);

      const edges: Json[] = await weft(["edges", "deploy", "-n", ns, "-t", "1m", "-o", "json"]);
      const id = (sa: string) =>
        formatWorkloadIdentity({
          serviceAccount: sa,
          namespace: ns,
          controlPlaneNamespace: CONTROL_PLANE_NS,
          trustDomain: TRUST_DOMAIN,
        });
      for (
        const [src, dst] of [["web-load", "web"], ["web", "api"], ["grpc-load", "grpc"], ["tcp-load", "tcp"]]
      ) {
        const e = edges.find((x) => x.src.name === src && x.dst.name === dst && x.src.namespace === ns);
        assert.ok(e, `no edge ${src} → ${dst}: ${JSON.stringify(edges)}`);
        assert.deepEqual([e.client_id, e.server_id, e.secured], [id(src), id(dst), true], JSON.stringify(e));
      }
      console.log(`edges: ${edges.map((e) => `${e.src.name || "(unmeshed)"}→${e.dst.name}`).join(", ")}`);

      // `weft top`: the clients' outbound view, heaviest first; web-load → web at the rate web-load counted.
      const topCtx = recordingContext({ env: { KUBECONFIG } });
      const topArgs = ["top", "-n", ns, "-t", "1m", "--duration", "1s", "--interval", "5s"];
      assert.equal(await dispatch(COMMANDS, [...topArgs, "-o", "json"], topCtx), 0, topCtx.stderr.join("\n"));
      const topRows: Json[] = JSON.parse(topCtx.stdout.join("").trim().split("\n")[0]).rows;
      for (let i = 1; i < topRows.length; i++) {
        assert.ok(topRows[i - 1].rps >= topRows[i].rps, "heaviest first");
      }
      const topWeb = topRows.find((r) => r.source === "web-load" && r.destination === "web");
      assert.ok(topWeb, `no top row web-load → web: ${JSON.stringify(topRows)}`);
      assert.ok(
        Math.abs(topWeb.rps - web.rps) <= 0.1 * web.rps,
        `top web-load→web ${topWeb.rps} vs ${web.rps}`,
      );
      const topTable = recordingContext({ env: { KUBECONFIG } });
      await dispatch(COMMANDS, topArgs, topTable);
      console.log(
        `weft top: web-load→web ${topWeb.rps.toFixed(2)} rps vs ${web.rps.toFixed(2)} counted\n${
          topTable.stdout.join("")
        }`,
      );

      // A quarter of web's traffic to a backend that does not exist: the client proxy answers those with 500.
      await apply(
        ns,
        JSON.stringify({
          apiVersion: "gateway.networking.k8s.io/v1",
          kind: "HTTPRoute",
          metadata: { name: "web-split" },
          spec: {
            parentRefs: [{ group: "core", kind: "Service", name: "web", port: 8080 }],
            rules: [{
              backendRefs: [{ name: "web", port: 8080, weight: 3 }, {
                name: "no-such-web",
                port: 8080,
                weight: 1,
              }],
            }],
          },
        }),
      );
      await sleep(15_000);
      const f0 = await clientCounts(ns);
      const f0t = Date.now();
      await sleep(60_000);
      const failing = clientView(f0, await clientCounts(ns), (Date.now() - f0t) / 1000).get("web-load")!;
      const routes: Json[] = await weft(["routes", "svc/web", "-n", ns, "-t", "1m", "-o", "json"]);
      const split = routes.find((r) => r.route === "web-split");
      const statSvc: Json[] = await weft(["stat", "svc/web", "-n", ns, "-t", "1m", "-o", "json"]);
      const statRoute: Json[] = await weft([
        "stat",
        "httproute/web-split",
        "-n",
        ns,
        "-t",
        "1m",
        "-o",
        "json",
      ]);
      console.log(
        `failing route: weft routes ${(split?.success * 100).toFixed(1)}% at ${
          split?.rps?.toFixed(2)
        } rps; ` +
          `weft stat svc/web ${(statSvc[0]?.success * 100).toFixed(1)}%; weft stat httproute ${
            (statRoute[0]?.success * 100).toFixed(1)
          }% at ${statRoute[0]?.rps?.toFixed(2)} rps; web-load counted ` +
          `${(failing.success * 100).toFixed(1)}% at ${failing.rps.toFixed(2)} rps`,
      );
      assert.ok(split, `no row for HTTPRoute web-split: ${JSON.stringify(routes)}`);
      assert.equal(split.kind, "HTTPRoute");
      assert.ok(Math.abs(failing.success - 0.75) < 0.12, `the client saw ${failing.success}, not about 75%`);
      assert.ok(
        Math.abs(split.success - failing.success) <= 0.08,
        `routes ${split.success} vs ${failing.success}`,
      );
      const sv = statSvc.find((r) => r.name === "web");
      assert.ok(
        Math.abs(sv.success - failing.success) <= 0.08,
        `stat svc/web ${sv.success} vs ${failing.success}`,
      );
      // The same route through `weft stat httproute`: one row per parent, the client's success and rate.
      assert.deepEqual(
        statRoute.map((r) => [r.kind, r.name, r.parent, r.direction]),
        [["httproute", "web-split", "svc/web:8080", "outbound"]],
        JSON.stringify(statRoute),
      );
      assert.ok(
        Math.abs(statRoute[0].success - failing.success) <= 0.08,
        `stat httproute ${statRoute[0].success} vs ${failing.success}`,
      );
      assert.ok(
        Math.abs(statRoute[0].rps - failing.rps) <= 0.1 * failing.rps,
        `stat httproute ${statRoute[0].rps} rps vs ${failing.rps}`,
      );
    } finally {
      await kubectl(["delete", "namespace", ns, "--wait=false"], { timeoutMs: 15_000 });
    }
  },
});
