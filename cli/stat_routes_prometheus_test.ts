/**
 * `weft stat httproute|grpcroute|sp` against a real Prometheus (Debian's binary on loopback) scraping the
 * proxy's own route metrics code: a client proxy's HTTPRoute with an invalid backend (a quarter of its
 * requests answered 500), a GRPCRoute and a ServiceProfile route, each at a known rate, so success rate and
 * RPS are checked end to end through the queries `weft routes` uses.
 */
import assert from "node:assert/strict";
import { HeaderList } from "../proxy/http/message.ts";
import { HttpMetrics } from "../proxy/metrics/http_metrics.ts";
import { HttpRouteMetrics } from "../proxy/metrics/http_route_metrics.ts";
import { Registry } from "../proxy/metrics/registry.ts";
import { COMMANDS } from "./commands.ts";
import { dispatch } from "./dispatch.ts";
import { parseFlags } from "./flags.ts";
import { UrlPrometheus } from "./prometheus.ts";
import { STAT_FLAGS } from "./stat.ts";
import { collectRouteStat, routeStatOptions } from "./stat_routes.ts";
import {
  offlineKubeconfig,
  prometheusBinary,
  recordingContext,
  serveMetrics,
  startPrometheus,
} from "./testing.ts";

const NS = "demo";
const web = { group: "core", kind: "Service", namespace: NS, name: "web", port: 8080 };
const grpc = { group: "core", kind: "Service", namespace: NS, name: "grpc", port: 9090 };
const split = { group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: NS, name: "web-split" };
const calls = { group: "gateway.networking.k8s.io", kind: "GRPCRoute", namespace: NS, name: "grpc-calls" };
const OK = new HeaderList(["grpc-status", "0"]);
const UNAVAILABLE = new HeaderList(["grpc-status", "14"]);

Deno.test({
  name: "stat httproute/grpcroute/sp against a real Prometheus: success and RPS of known route streams",
  ignore: prometheusBinary() === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const reg = new Registry();
    const routes = new HttpRouteMetrics(reg);
    const profiles = new HttpMetrics(reg);
    const hr = routes.route(web, split, "web.demo.svc.cluster.local", false);
    const gr = routes.route(grpc, calls, "grpc.demo.svc.cluster.local", true);
    const sp = profiles.route({
      direction: "outbound",
      dst: "web.demo.svc.cluster.local:8080",
      labels: { route: "GET /books" },
    });
    const s = serveMetrics(() => reg.metrics());
    const prom = await startPrometheus([
      { address: s.address, labels: { namespace: NS, deployment: "web-load", pod: "web-load-1" } },
    ]);
    let ticks = 0;
    const tick = () => {
      ticks++;
      // HTTPRoute: 20 rps, every fourth request to the missing backend (the proxy's 500).
      hr.recordResponse(ticks % 4 === 0 ? 500 : 200, undefined, new HeaderList(), 0.004);
      // GRPCRoute: 10 rps, every tenth UNAVAILABLE.
      if (ticks % 2 === 0) {
        const n = ticks / 2;
        gr.recordResponse(200, n % 10 === 0 ? UNAVAILABLE : OK, new HeaderList(), 0.003);
      }
      // ServiceProfile route: 5 rps, all answered 200.
      if (ticks % 4 === 0) {
        const rec = sp.requests.start(false);
        rec.head(200, new HeaderList());
        rec.firstByte();
        rec.end(undefined);
      }
    };
    const started = performance.now();
    const timer = setInterval(tick, 50);
    try {
      await new Promise((r) => setTimeout(r, 14_000));
      // Judged against the rate actually achieved (a loaded machine may fire the timer late).
      const rate = ticks / ((performance.now() - started) / 1000);
      const near = (rps: number | null, want: number) => rps !== null && Math.abs(rps - want) <= 0.15 * want;
      const p = new UrlPrometheus(prom.url);
      const ctx = recordingContext();
      const stat = (args: string[]) =>
        collectRouteStat(
          routeStatOptions(parseFlags([...args, "-t", "10s"], STAT_FLAGS), () => NS)!,
          { prom: p },
          ctx,
        );

      const [h] = await stat(["httproute"]);
      assert.deepEqual([h?.namespace, h?.kind, h?.name, h?.parent], [
        NS,
        "httproute",
        "web-split",
        "svc/web:8080",
      ]);
      assert.ok(Math.abs(h.success! - 0.75) < 0.04, `httproute success ${h.success}`);
      assert.ok(near(h.rps, rate), `httproute rps ${h.rps} vs ${rate} sent`);
      assert.ok(h.latency_ms_p50! <= 50, `p50 ${h.latency_ms_p50} inside the first bucket (50 ms)`);
      assert.equal((await stat(["hr/web-split"])).length, 1, "by name");
      assert.equal((await stat(["hr", "other"])).length, 0, "another name has no traffic");
      assert.equal((await stat(["hr", "-n", "elsewhere"])).length, 0, "another namespace has none");

      const [g, ...moreG] = await stat(["grpcroutes"]);
      assert.equal(moreG.length, 0, "the HTTPRoute is not a GRPCRoute");
      assert.deepEqual([g?.name, g?.parent], ["grpc-calls", "svc/grpc:9090"]);
      assert.ok(Math.abs(g.success! - 0.9) < 0.04, `grpcroute success ${g.success}`);
      assert.ok(near(g.rps, rate / 2), `grpcroute rps ${g.rps} vs ${rate / 2}`);

      const [prof, ...moreP] = await stat(["sp"]);
      assert.equal(moreP.length, 0);
      assert.deepEqual([prof?.name, prof?.parent], ["web.demo.svc.cluster.local", "svc/web:8080"]);
      assert.equal(prof.success, 1);
      assert.ok(near(prof.rps, rate / 4), `sp rps ${prof.rps} vs ${rate / 4}`);
      assert.ok(prof.latency_ms_p99 !== null, "profile latency from route_response_latency_ms");
      assert.equal((await stat(["sp/web.demo.svc.cluster.local"])).length, 1);
      assert.equal((await stat(["sp", "api.demo.svc.cluster.local"])).length, 0);

      // --from the client that sent them; another client sent nothing.
      assert.equal((await stat(["hr", "--from", "deploy/web-load"])).length, 1);
      assert.equal((await stat(["hr", "--from", "deploy/grpc-load"])).length, 0);
      // The whole command: table and JSON.
      const kubeconfig = await offlineKubeconfig();
      try {
        const run = async (args: string[]) => {
          const c = recordingContext();
          const code = await dispatch(COMMANDS, [
            "stat",
            ...args,
            "-n",
            NS,
            "-t",
            "10s",
            "--kubeconfig",
            kubeconfig,
            "--prometheus-url",
            prom.url,
          ], c);
          assert.equal(code, 0, c.stderr.join("\n"));
          return c.stdout.join("");
        };
        const table = await run(["httproutes"]);
        assert.match(table, /^NAME\s+PARENT\s+SUCCESS\s+RPS\s+LATENCY_P50\s+LATENCY_P95\s+LATENCY_P99\n/);
        assert.match(table, /^web-split\s+svc\/web:8080\s+7\d\.\d\d%\s+\d+\.\drps\s+≤50ms/m);
        const json = JSON.parse(await run(["sp", "-o", "json"]));
        assert.deepEqual(Object.keys(json[0]), [
          "namespace",
          "kind",
          "name",
          "parent",
          "direction",
          "success",
          "rps",
          "latency_ms_p50",
          "latency_ms_p95",
          "latency_ms_p99",
          "requests_success",
          "requests_failure",
        ]);
        console.log(
          `sent ${rate.toFixed(1)} rps: httproute ${(h.success! * 100).toFixed(1)}% ${
            h.rps!.toFixed(1)
          } rps; ` +
            `grpcroute ${(g.success! * 100).toFixed(1)}% ${g.rps!.toFixed(1)} rps; sp ${
              prof.rps!.toFixed(1)
            } rps\n${table}`,
        );
      } finally {
        await Deno.remove(kubeconfig);
      }
      assert.ok(ticks > 200, `ticks ${ticks}`);
    } finally {
      clearInterval(timer);
      await prom.stop();
      await s.stop();
    }
  },
});
