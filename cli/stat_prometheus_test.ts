/**
 * `weft stat`'s queries against a real Prometheus (Debian's binary on loopback) scraping the proxy's own
 * metrics code: a server proxy's inbound and a client proxy's outbound figures for a known request mix,
 * so success rate and RPS are checked end to end through PromQL, not against a fake answer.
 */
import assert from "node:assert/strict";
import { HeaderList } from "../proxy/http/message.ts";
import { HttpMetrics } from "../proxy/metrics/http_metrics.ts";
import { Registry } from "../proxy/metrics/registry.ts";
import { queryAll } from "./connect.ts";
import { parseTarget } from "./kinds.ts";
import { UrlPrometheus } from "./prometheus.ts";
import { planStat } from "./stat_plan.ts";
import { foldStat, statRow } from "./stat.ts";
import { prometheusBinary, recordingContext, serveMetrics, startPrometheus } from "./testing.ts";

const NS = "demo";
const WEB_ID = "web.demo.serviceaccount.identity.weft.cluster.local";
const LOAD_ID = "web-load.demo.serviceaccount.identity.weft.cluster.local";
const ref = (kind: string, name: string) => ({ group: "policy.linkerd.io", kind, name });

Deno.test({
  name: "stat against a real Prometheus: success rate and RPS of a 90%-successful ~20 rps stream, both sides",
  ignore: prometheusBinary() === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const serverReg = new Registry();
    const clientReg = new Registry();
    const server = new HttpMetrics(serverReg);
    const client = new HttpMetrics(clientReg);
    const inbound = server.inbound({
      authority: "web.demo.svc.cluster.local:8080",
      targetAddr: "10.0.0.7:8080",
      tls: { tls: "true", client_id: LOAD_ID },
      server: ref("server", "web-http"),
      route: ref("httproute", "default"),
      authz: ref("authorizationpolicy", "all"),
    });
    const outbound = client.outbound({
      authority: "web.demo.svc.cluster.local:8080",
      targetAddr: "10.0.0.7:8080",
      tls: { tls: "true", server_id: WEB_ID },
      dst: { namespace: NS, service: "web", deployment: "web", pod: "web-1", serviceaccount: "web" },
    });
    const s1 = serveMetrics(() => serverReg.metrics());
    const s2 = serveMetrics(() => clientReg.metrics());
    const prom = await startPrometheus([
      { address: s1.address, labels: { namespace: NS, deployment: "web", pod: "web-1" } },
      { address: s2.address, labels: { namespace: NS, deployment: "web-load", pod: "web-load-1" } },
    ]);
    let sent = 0;
    const one = (status: number) => {
      for (const m of [inbound, outbound]) {
        const rec = m.start(false);
        rec.head(status, new HeaderList());
        rec.firstByte();
        rec.end(undefined);
      }
    };
    // 20 requests a second, every tenth failing with 500; the rate actually achieved (a loaded machine may
    // fire the timer late) is what the figures are judged against.
    const started = performance.now();
    const timer = setInterval(() => one(++sent % 10 === 0 ? 500 : 200), 50);
    try {
      await new Promise((r) => setTimeout(r, 14_000));
      const rate = sent / ((performance.now() - started) / 1000);
      const near = (rps: number | null) => rps !== null && Math.abs(rps - rate) <= 0.15 * rate;
      const p = new UrlPrometheus(prom.url);
      const ctx = recordingContext();
      const windowS = 10;
      const check = async (what: string, target: string, extra: { to?: string; from?: string } = {}) => {
        const plan = planStat({
          target: parseTarget(target, NS),
          ...(extra.to ? { to: parseTarget(extra.to, NS) } : {}),
          ...(extra.from ? { from: parseTarget(extra.from, NS) } : {}),
          window: `${windowS}s`,
        });
        const figures = foldStat(plan, await queryAll(p, plan.queries, ctx));
        return {
          figures,
          row: (key: string) => statRow(key, "deploy", figures.get(key), windowS, undefined),
          what,
        };
      };
      // Without --to/--from: the server's own inbound view.
      const inb = await check("inbound", "deploy");
      const web = inb.row(`${NS}/web`);
      assert.ok(Math.abs(web.success! - 0.9) < 0.03, `inbound success ${web.success}`);
      assert.ok(near(web.rps), `inbound rps ${web.rps} vs ${rate} sent`);
      assert.ok(web.latency_ms_p50! <= 1, `p50 ${web.latency_ms_p50}`);
      assert.equal(web.tls_share, 1);
      assert.equal(inb.figures.get(`${NS}/web-load`), undefined, "the load client serves nothing");
      // --to: the client's outbound view of the same stream.
      const to = await check("to", "deploy/web-load", { to: "deploy/web" });
      const load = to.row(`${NS}/web-load`);
      assert.ok(Math.abs(load.success! - 0.9) < 0.03, `outbound success ${load.success}`);
      assert.ok(near(load.rps), `outbound rps ${load.rps} vs ${rate} sent`);
      // --from: the destination's rows, seen from the client.
      const from = await check("from", "deploy", { from: "deploy/web-load" });
      assert.deepEqual([...from.figures.keys()], [`${NS}/web`]);
      // Services: from the clients' side, by dst_service.
      const svc = await check("svc", "svc/web");
      const row = svc.row(`${NS}/web`);
      assert.ok(near(row.rps), `svc rps ${row.rps} vs ${rate} sent`);
      assert.ok(sent > 200, `sent ${sent}`);
    } finally {
      clearInterval(timer);
      await prom.stop();
      await s1.stop();
      await s2.stop();
    }
  },
});
