import assert from "node:assert/strict";
import { UsageError } from "./context.ts";
import { parseFlags } from "./flags.ts";
import { parseTarget } from "./kinds.ts";
import { findRouteKind } from "./route_kinds.ts";
import { foldRoutes, routeQueries } from "./routes.ts";
import { STAT_FLAGS, statOptions } from "./stat.ts";
import { renderRouteStat, routeStatOptions, routeStatRows } from "./stat_routes.ts";

const opts = (args: string[]) => routeStatOptions(parseFlags(args, STAT_FLAGS), () => "ctx-ns");

Deno.test("stat route kinds: the names Linkerd and kubectl users type", () => {
  for (const t of ["httproute", "httproutes", "hr", "HTTPRoute"]) {
    assert.equal(findRouteKind(t)?.kind, "HTTPRoute");
  }
  for (const t of ["grpcroute", "grpcroutes", "GRPCRoute"]) assert.equal(findRouteKind(t)?.kind, "GRPCRoute");
  for (const t of ["sp", "serviceprofile", "serviceprofiles"]) {
    assert.equal(findRouteKind(t)?.kind, "ServiceProfile");
  }
  assert.equal(findRouteKind("deploy"), undefined);
  assert.equal(findRouteKind("route"), undefined);
});

Deno.test("stat route options: NAME either way, -n / -A, --from a workload; --to and bad names refused", () => {
  assert.equal(opts(["deploy"]), undefined, "a workload kind is stat's ordinary path");
  assert.deepEqual(opts(["hr"]), { kind: findRouteKind("hr"), namespace: "ctx-ns", windowS: 60 });
  const a = opts(["httproute/web-split", "-n", "demo", "-t", "30s"])!;
  assert.deepEqual([a.kind.kind, a.name, a.namespace, a.windowS], ["HTTPRoute", "web-split", "demo", 30]);
  assert.equal(opts(["httproutes", "web-split"])!.name, "web-split");
  assert.equal(opts(["sp", "web.demo.svc.cluster.local", "-A"])!.namespace, undefined);
  const f = opts(["grpcroute", "-n", "demo", "--from", "deploy/grpc-load"])!;
  assert.deepEqual([f.from?.kind.label, f.from?.name, f.from?.namespace], [
    "deployment",
    "grpc-load",
    "demo",
  ]);
  const bad: [string[], RegExp][] = [
    [["hr", "--to", "deploy/web"], /--to does not apply to httproute/],
    [["hr/a", "b"], /unexpected argument "b"/],
    [["hr", "a", "b"], /unexpected argument "b"/],
    [["hr/a/b"], /is not KIND or KIND\/NAME/],
    [["hr/Web"], /"Web" is not a route name/],
    [["hr", "--from", "svc/web"], /--from needs a workload/],
    [["sp", "-t", "soon"], /time-window/],
  ];
  for (const [args, re] of bad) {
    assert.throws(
      () => opts(args),
      (e: Error) => e instanceof UsageError && re.test(e.message),
      args.join(" "),
    );
  }
});

Deno.test("stat route queries: `weft routes`' families filtered to the kind, namespace and name", () => {
  const hr = routeQueries({
    route: { kind: "HTTPRoute", namespace: "demo", name: "web-split" },
    window: "1m",
  });
  assert.deepEqual(Object.keys(hr).filter((k) => k.endsWith(":statuses")), [
    "policy-http:statuses",
    "inbound:statuses",
  ]);
  assert.equal(
    hr["policy-http:statuses"],
    'sum(increase(outbound_http_route_request_statuses_total{route_kind=~"(?i)HTTPRoute", ' +
      'route_namespace="demo", route_name="web-split"}[1m])) by (parent_kind, parent_namespace, parent_name, ' +
      "parent_port, route_kind, route_namespace, route_name, http_status, error)",
  );
  // A Server's inbound HTTPRoute: the route lives in the pod's namespace.
  assert.match(
    hr["inbound:statuses"],
    /response_total\{direction="inbound", route_kind=~"\(\?i\)HTTPRoute", namespace="demo", route_name="web-split", route_name!=""\}/,
  );
  const gr = routeQueries({ route: { kind: "GRPCRoute", namespace: "demo" }, window: "1m" });
  assert.ok(
    gr["policy-grpc:statuses"].startsWith("sum(increase(outbound_grpc_route_request_statuses_total{"),
  );
  assert.equal(gr["policy-http:statuses"], undefined);
  assert.equal(gr["profile:statuses"], undefined);
  const sp = routeQueries({ route: { kind: "ServiceProfile", namespace: "demo" }, window: "1m" });
  assert.deepEqual(Object.keys(sp).filter((k) => k.endsWith(":statuses")), ["profile:statuses"]);
  assert.equal(
    sp["profile:statuses"],
    'sum(increase(route_response_total{direction="outbound", dst=~"[^.]+\\\\.demo\\\\.svc\\\\.cluster\\\\.local(:\\\\d+)?"}[1m])) ' +
      "by (dst, classification)",
  );
  const one = routeQueries({
    route: { kind: "ServiceProfile", name: "web.demo.svc.cluster.local" },
    window: "1m",
  });
  assert.match(one["profile:0.99"], /dst=~"web\\\\\.demo\\\\\.svc\\\\\.cluster\\\\\.local\(:\\\\d\+\)\?"/);
  // A client (--from): its outbound routes only, so no inbound query.
  const from = routeQueries({
    route: { kind: "HTTPRoute", namespace: "demo" },
    workload: parseTarget("deploy/web-load", "demo"),
    window: "1m",
  });
  assert.equal(from["inbound:statuses"], undefined);
  assert.match(from["policy-http:statuses"], /\{namespace="demo", deployment="web-load", route_kind=~/);
});

Deno.test("stat route rows: per route and parent, the route's own namespace, a profile by its name", () => {
  const parent = {
    parent_kind: "Service",
    parent_namespace: "demo",
    parent_name: "web",
    parent_port: "8080",
  };
  const rt = { ...parent, route_kind: "HTTPRoute", route_namespace: "demo", route_name: "web-split" };
  const hrRows = routeStatRows(
    foldRoutes({
      "policy-http:statuses": [
        { metric: { ...rt, http_status: "200", error: "" }, value: 225 },
        { metric: { ...rt, http_status: "500", error: "" }, value: 75 },
        // A consumer route in the client's namespace on the same Service.
        { metric: { ...rt, route_namespace: "client", http_status: "200", error: "" }, value: 60 },
      ],
      "policy-http:0.5": [{ metric: rt, value: 25 }],
      "policy-http:0.99": [{ metric: rt, value: 480 }],
      "inbound:statuses": [{
        metric: {
          namespace: "demo",
          srv_kind: "server",
          srv_name: "web-http",
          route_kind: "HTTPRoute",
          route_name: "web-in",
          classification: "success",
        },
        value: 30,
      }],
    }, 60),
    findRouteKind("hr")!,
  );
  assert.deepEqual(hrRows.map((r) => [r.namespace, r.name, r.parent, r.direction, r.success, r.rps]), [
    ["client", "web-split", "svc/web:8080", "outbound", 1, 1],
    ["demo", "web-in", "server/web-http", "inbound", 1, 0.5],
    ["demo", "web-split", "svc/web:8080", "outbound", 0.75, 5],
  ]);
  const table = renderRouteStat(hrRows, false, false);
  assert.match(table, /^NAME\s+PARENT\s+SUCCESS\s+RPS\s+LATENCY_P50\s+LATENCY_P95\s+LATENCY_P99$/m);
  assert.match(table, /^web-split\s+svc\/web:8080\s+75\.00%\s+5\.0rps\s+≤50ms\s+-\s+480ms$/m);
  assert.match(table, /^web-in\s+server\/web-http \(inbound\)\s+100\.00%\s+0\.5rps/m);
  assert.match(renderRouteStat(hrRows, true, false), /^NAMESPACE\s+NAME\s+PARENT/);
  const spRows = routeStatRows(
    foldRoutes({
      "profile:statuses": [
        { metric: { dst: "web.demo.svc.cluster.local:8080", classification: "success" }, value: 54 },
        { metric: { dst: "web.demo.svc.cluster.local:8080", classification: "failure" }, value: 6 },
      ],
      "profile:0.5": [{ metric: { dst: "web.demo.svc.cluster.local:8080" }, value: 3 }],
    }, 60),
    findRouteKind("sp")!,
  );
  assert.deepEqual(spRows.map((r) => [r.namespace, r.kind, r.name, r.parent, r.success, r.latency_ms_p50]), [
    ["demo", "sp", "web.demo.svc.cluster.local", "svc/web:8080", 0.9, 3],
  ]);
  assert.match(
    renderRouteStat(spRows, false, false),
    /^web\.demo\.svc\.cluster\.local\s+svc\/web:8080\s+90\.00%\s+1\.0rps\s+3ms/m,
  );
});

Deno.test("stat: a kind that is neither a workload nor a route kind names both lists", () => {
  assert.throws(
    () => statOptions(["routes"], () => "ns"),
    (e: Error) =>
      e instanceof UsageError &&
      /"routes" is not a resource kind \(one of deploy\|deployment, /.test(e.message) &&
      e.message.endsWith(
        "or a route kind: httproute|httproutes|hr, grpcroute|grpcroutes, sp|serviceprofile|serviceprofiles)",
      ),
  );
});
