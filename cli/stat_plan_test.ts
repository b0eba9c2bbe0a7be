import assert from "node:assert/strict";
import { parseTarget } from "./kinds.ts";
import { quote, regexLiteral, selector } from "./promql.ts";
import { planStat } from "./stat_plan.ts";
import { foldStat, renderStat, statRow } from "./stat.ts";

Deno.test("promql: label values are quoted and escaped; label names are checked", () => {
  assert.equal(quote('a"b\\c\nd'), '"a\\"b\\\\c\\nd"');
  assert.equal(
    selector([{ label: "namespace", value: "x" }, { label: "pod", op: "!=", value: "" }]),
    '{namespace="x", pod!=""}',
  );
  assert.throws(() => selector([{ label: "bad-label", value: "x" }]), /not a Prometheus label/);
  assert.equal(regexLiteral("a.b*c"), "a\\.b\\*c");
});

Deno.test("stat plan: without --from/--to, the resources' own inbound traffic, grouped by namespace and name", () => {
  const p = planStat({ target: parseTarget("deploy", "weft-demo"), window: "1m" });
  assert.deepEqual(p.groupBy, ["namespace", "deployment"]);
  assert.equal(p.rowsFromMetrics, false);
  assert.equal(
    p.queries.responses,
    'sum(increase(response_total{direction="inbound", namespace="weft-demo", deployment!=""}[1m])) ' +
      "by (namespace, deployment, classification, tls)",
  );
  assert.equal(
    p.queries.p95,
    'histogram_quantile(0.95, sum(rate(response_latency_ms_bucket{direction="inbound", namespace="weft-demo", ' +
      'deployment!=""}[1m])) by (le, namespace, deployment))',
  );
  assert.equal(
    p.queries.tcp,
    'sum(tcp_open_connections{direction="inbound", namespace="weft-demo", deployment!="", peer="src"}) ' +
      "by (namespace, deployment)",
  );
});

Deno.test("stat plan: --to is the source's outbound traffic to the destination's dst_* labels", () => {
  const p = planStat({
    target: parseTarget("deploy/web", "a"),
    to: parseTarget("deploy/api", "b"),
    window: "30s",
  });
  assert.match(
    p.queries.responses,
    /\{direction="outbound", namespace="a", deployment="web", dst_namespace="b", dst_deployment="api"\}\[30s\]/,
  );
  assert.deepEqual(p.groupBy, ["namespace", "deployment"]);
  assert.equal(p.rowsFromMetrics, true);
});

Deno.test("stat plan: --from groups by the destination labels; services are seen from the clients", () => {
  const f = planStat({
    target: parseTarget("deploy", "a"),
    from: parseTarget("deploy/web", "a"),
    window: "1m",
  });
  assert.deepEqual(f.groupBy, ["dst_namespace", "dst_deployment"]);
  assert.match(f.queries.responses, /namespace="a", deployment="web", dst_namespace="a", dst_deployment!=""/);
  const s = planStat({ target: parseTarget("svc/web", "a"), window: "1m" });
  assert.deepEqual(s.groupBy, ["dst_namespace", "dst_service"]);
  assert.match(s.queries.responses, /\{direction="outbound", dst_namespace="a", dst_service="web"\}/);
  const ns = planStat({ target: parseTarget("ns"), window: "1m" });
  assert.deepEqual(ns.groupBy, ["namespace"]);
  assert.throws(() => planStat({ target: parseTarget("deploy"), from: parseTarget("svc/x"), window: "1m" }));
});

Deno.test("stat fold: success rate and RPS from classified counts, quantiles and TCP by resource", () => {
  const p = planStat({ target: parseTarget("deploy", "a"), window: "1m" });
  const m = (deployment: string, extra: Record<string, string> = {}) => ({
    namespace: "a",
    deployment,
    ...extra,
  });
  const figures = foldStat(p, {
    responses: [
      { metric: m("web", { classification: "success", tls: "true" }), value: 570 },
      { metric: m("web", { classification: "failure", tls: "true" }), value: 30 },
      { metric: m("api", { classification: "success", tls: "no_identity" }), value: 60 },
    ],
    p50: [{ metric: m("web"), value: 2.5 }, { metric: m("api"), value: NaN }],
    p95: [{ metric: m("web"), value: 9 }],
    p99: [{ metric: m("web"), value: 48 }],
    tcp: [{ metric: m("web"), value: 3 }],
    read: [],
    write: [],
    routeHttp: [],
    routeGrpc: [],
  });
  const web = statRow("a/web", "deploy", figures.get("a/web"), 60, { meshed: 2, total: 2 });
  assert.equal(web.success, 0.95);
  assert.equal(web.rps, 10);
  assert.equal(web.latency_ms_p99, 48);
  assert.equal(web.tls_share, 1);
  assert.equal(web.meshed, "2/2");
  const api = statRow("a/api", "deploy", figures.get("a/api"), 60, { meshed: 0, total: 1 });
  assert.equal(api.latency_ms_p50, null);
  assert.equal(api.tls_share, 0);
  const idle = statRow("a/idle", "deploy", undefined, 60, { meshed: 1, total: 1 });
  assert.equal(idle.rps, null);
  assert.equal(
    renderStat([web, api, idle], false, false, false),
    [
      "NAME   MESHED   SUCCESS   RPS       LATENCY_P50   LATENCY_P95   LATENCY_P99   TCP_CONN",
      "web    2/2      95.00%    10.0rps   2.5ms         9ms           48ms          3",
      "api    0/1      100.00%   1.0rps    -             -             -             -",
      "idle   1/1      -         -         -             -             -             -",
      "",
    ].join("\n"),
  );
  assert.ok(renderStat([web], false, false, true).includes("\x1b[33m95.00%\x1b[0m"), "yellow below 99%");
});

Deno.test("stat svc: success and RPS from the clients' logical requests, counting the proxy's own 500s", () => {
  const p = planStat({ target: parseTarget("svc/web", "a"), window: "1m" });
  assert.equal(
    p.queries.routeHttp,
    'sum(increase(outbound_http_route_request_statuses_total{parent_kind="Service", parent_namespace="a", ' +
      'parent_name="web"}[1m])) by (parent_namespace, parent_name, http_status, error)',
  );
  assert.equal(planStat({ target: parseTarget("deploy", "a"), window: "1m" }).queries.routeHttp, "");
  const svc = { dst_namespace: "a", dst_service: "web" };
  const parent = { parent_namespace: "a", parent_name: "web" };
  const figures = foldStat(p, {
    // The endpoints answered 300, all well; the client proxy answered another 100 itself with 500.
    responses: [{ metric: { ...svc, classification: "success", tls: "true" }, value: 300 }],
    p50: [],
    p95: [],
    p99: [],
    tcp: [],
    read: [],
    write: [],
    routeHttp: [
      { metric: { ...parent, http_status: "200", error: "" }, value: 300 },
      { metric: { ...parent, http_status: "500", error: "" }, value: 100 },
    ],
    routeGrpc: [],
  });
  const row = statRow("a/web", "svc", figures.get("a/web"), 60, undefined);
  assert.equal(row.success, 0.75);
  assert.equal(row.rps, 400 / 60);
  assert.equal(row.tls_share, 1);
});
