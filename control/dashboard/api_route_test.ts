// The route page's query parameters: bad input is a 400 naming the parameter, before anything is asked.
import assert from "node:assert/strict";
import { directionsParam, profileRouteParam, routePageRoutes } from "./api_route.ts";
import { ApiError } from "./server.ts";
import type { Kube } from "../../manifests/kube.ts";

const q = (s: string) => new URLSearchParams(s);

function rejects400(f: () => unknown, re: RegExp) {
  assert.throws(f, (e) => e instanceof ApiError && e.status === 400 && re.test(e.message));
}

Deno.test("directionsParam: the kind's default, a list, and refusals", () => {
  assert.deepEqual(directionsParam(q(""), "HTTPRoute"), ["outbound"]);
  assert.deepEqual(directionsParam(q(""), "ServiceProfile"), ["profile"]);
  assert.deepEqual(directionsParam(q("dir=outbound,inbound,outbound"), "GRPCRoute"), ["outbound", "inbound"]);
  rejects400(() => directionsParam(q("dir=sideways"), "HTTPRoute"), /^dir: "sideways" is not one of/);
  rejects400(() => directionsParam(q("dir=profile"), "HTTPRoute"), /a HTTPRoute has no profile series/);
  rejects400(() => directionsParam(q("dir=inbound"), "ServiceProfile"), /no inbound series/);
});

Deno.test("profileRouteParam: free text, bounded, no control characters", () => {
  assert.equal(profileRouteParam(q("")), undefined);
  assert.equal(profileRouteParam(q("route=GET+%2Fitems%2F%7Bid%7D")), "GET /items/{id}");
  rejects400(() => profileRouteParam(q(`route=${"x".repeat(257)}`)), /^route:/);
  rejects400(() => profileRouteParam(q("route=a%0Ab")), /control characters/);
});

Deno.test("/api/route and /api/route/series refuse bad kinds, groups and names without reading the cluster", async () => {
  const kube = new Proxy({}, {
    get: () => () => Promise.reject(new Error("the cluster was asked")),
  }) as unknown as Kube;
  const routes = routePageRoutes({
    kube,
    prometheus: () => Promise.reject(new Error("the store was asked")),
    now: () => 0,
  });
  const signal = new AbortController().signal;
  const cases: [string, string, RegExp][] = [
    [
      "route",
      "ns=a&kind=tcproutes&name=x",
      /^kind: "tcproutes" is not one of httproutes, grpcroutes, serviceprofiles/,
    ],
    [
      "route",
      "ns=a&kind=grpcroutes&name=x&group=policy.linkerd.io",
      /^group: "policy.linkerd.io" does not hold grpcroutes/,
    ],
    ["route", "ns=a&kind=httproutes&name=Bad_Name", /^name: "Bad_Name" is not a Kubernetes object name/],
    ["route/series", "ns=a&kind=httproutes&name=x&route=r", /^route: only a ServiceProfile has named routes/],
    ["route/series", "ns=a&kind=httproutes&name=x&window=2d", /^window: "2d" is not one of/],
    ["pods", "ns=a&kind=namespace&name=a", /^kind: pods are listed per workload or Service/],
  ];
  for (const [api, query, re] of cases) {
    await assert.rejects(
      routes[api](q(query), signal),
      (e) => e instanceof ApiError && e.status === 400 && re.test(e.message),
      `${api}?${query}`,
    );
  }
});
