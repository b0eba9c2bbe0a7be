import assert from "node:assert/strict";
import type { TapEventJson, TapLine } from "../tap/event_json.ts";
import { MAX_LIMIT, parseTapQuery, rowMatches, statusMatches, TapQueryError, TapRows } from "./tap_rows.ts";

const CLIENT = "web.demo.serviceaccount.identity.weft.cluster.local";
const SERVER = "api.demo.serviceaccount.identity.weft.cluster.local";

function ev(id: string, http: Partial<TapEventJson["http"]> & { kind: string }, inbound = true): TapLine {
  return {
    event: {
      pod: "demo/api-1",
      direction: inbound ? "inbound" : "outbound",
      source: "10.0.0.1:40000",
      destination: "10.0.0.2:8080",
      sourceLabels: inbound ? { tls: "true", client_id: CLIENT } : { tls: "loopback" },
      destinationLabels: inbound ? { tls: "loopback" } : { tls: "true", server_id: SERVER },
      routeLabels: {},
      http: { id, ...http } as TapEventJson["http"],
    },
  };
}

const req = (id: string, path = "/api/list", inbound = true) =>
  ev(id, { kind: "request", method: "GET", scheme: "http", authority: "api:8080", path }, inbound);
const rsp = (id: string, status: number, inbound = true) =>
  ev(id, { kind: "response", status, sinceRequestInitUs: 1500 }, inbound);
const end = (id: string, inbound = true) =>
  ev(id, { kind: "end", sinceRequestInitUs: 2100, sinceResponseInitUs: 600, responseBytes: 42 }, inbound);

Deno.test("tap query: the URL's filters become the tap API's body, checked by the component's validation", () => {
  const q = parseTapQuery(
    new URLSearchParams(
      "ns=demo&resource=deploy/web&path=/api&method=get&status=5xx&identity=web.demo&limit=50",
    ),
  );
  assert.deepEqual(q.body, {
    namespace: "demo",
    resource: "deploy/web",
    limit: 50,
    path: "/api",
    method: "get",
  });
  assert.deepEqual(q.filters, { status: "5xx", identity: "web.demo" });
  assert.equal(q.durationS, 60);
  assert.equal(parseTapQuery(new URLSearchParams("resource=ns/demo")).body.limit, 1000);
});

Deno.test("tap query: each bad parameter is refused by name", () => {
  const bad: [string, RegExp][] = [
    ["ns=demo", /resource: required/],
    ["resource=deploy/web&path=api", /path: "api" must start with \//],
    ["resource=svc/web", /resource: "svc\/web" is not a resource/],
    ["resource=deploy/web&status=600", /status: "600"/],
    ["resource=deploy/web&status=2x", /status: "2x"/],
    ["resource=deploy/web&identity=a%20b", /identity:/],
    [`resource=deploy/web&limit=${MAX_LIMIT + 1}`, /limit: 10001 is above the maximum 10000/],
    ["resource=deploy/web&limit=0", /limit: "0"/],
    ["resource=deploy/web&duration=601", /duration: 601 is above/],
    ["resource=deploy/web&duration=1.5", /duration: "1.5"/],
    ["resource=deploy/web&method=G%20T", /method:/],
    ["resource=deploy/web&verb=delete", /verb: unknown parameter/],
  ];
  for (const [query, why] of bad) {
    assert.throws(() => parseTapQuery(new URLSearchParams(query)), (e: Error) => {
      assert.ok(e instanceof TapQueryError, query);
      assert.match(e.message, why, query);
      return true;
    });
  }
});

Deno.test("tap rows: one row per request, shown at its response, updated at its end", () => {
  const rows = new TapRows({});
  assert.deepEqual(rows.push(req("7:1")), []);
  const [shown] = rows.push(rsp("7:1", 200));
  assert.equal(shown.method, "GET");
  assert.equal(shown.path, "/api/list");
  assert.equal(shown.status, 200);
  assert.equal(shown.latencyUs, 1500);
  assert.equal(shown.srcIdentity, CLIENT);
  assert.equal(shown.dstIdentity, "");
  assert.equal(shown.tls, "true");
  assert.equal(shown.done, false);
  const [ended] = rows.push(end("7:1"));
  assert.equal(ended.id, "7:1");
  assert.equal(ended.done, true);
  assert.equal(ended.responseBytes, 42);
  assert.equal(rows.pending, 0);
  // The outbound side: the server's identity, and its TLS.
  rows.push(req("7:2", "/x", false));
  const [out] = rows.push(rsp("7:2", 204, false));
  assert.deepEqual([out.direction, out.dstIdentity, out.srcIdentity, out.tls], [
    "outbound",
    SERVER,
    "",
    "true",
  ]);
});

Deno.test("tap rows: the status and identity filters leave rows out, ends included", () => {
  const rows = new TapRows({ status: "5xx" });
  rows.push(req("1:1"));
  assert.deepEqual(rows.push(rsp("1:1", 200)), []);
  assert.deepEqual(rows.push(end("1:1")), []);
  rows.push(req("1:2"));
  assert.equal(rows.push(rsp("1:2", 503))[0].status, 503);
  assert.equal(rows.push(end("1:2")).length, 1);
  // A request that failed before a response has no status: a status filter leaves it out.
  rows.push(req("1:3"));
  assert.deepEqual(rows.push(end("1:3")), []);
  const any = new TapRows({});
  any.push(req("1:3"));
  const [failed] = any.push(end("1:3"));
  assert.equal(failed.status, undefined);
  assert.equal(failed.done, true);

  const byId = new TapRows({ identity: "api.demo" });
  byId.push(req("2:1"));
  assert.deepEqual(byId.push(rsp("2:1", 200)), []); // inbound: the client is web
  byId.push(req("2:2", "/", false));
  assert.equal(byId.push(rsp("2:2", 200, false)).length, 1); // outbound: the server is api
});

Deno.test("tap rows: status classes and exact codes", () => {
  assert.ok(statusMatches("5xx", 503) && statusMatches("200", 200));
  assert.ok(!statusMatches("5xx", 404) && !statusMatches("200", 201) && !statusMatches("2xx", undefined));
  const row = { srcIdentity: CLIENT, dstIdentity: "", status: 404 } as Parameters<typeof rowMatches>[1];
  assert.ok(rowMatches({ status: "4xx", identity: "web." }, row));
  assert.ok(!rowMatches({ identity: "api." }, row));
});

Deno.test("tap rows: requests that never answer are bounded, the oldest forgotten", () => {
  const rows = new TapRows({}, 3);
  for (let i = 0; i < 10; i++) rows.push(req(`9:${i}`));
  assert.equal(rows.pending, 3);
  assert.deepEqual(rows.push(rsp("9:0", 200)), []); // forgotten
  assert.equal(rows.push(rsp("9:9", 200)).length, 1);
  // Lines other than events make no rows; unknown ids are ignored.
  assert.deepEqual(rows.push({ end: { reason: "limit", requests: 1, dropped: 0 } }), []);
  assert.deepEqual(rows.push(end("nope")), []);
});
