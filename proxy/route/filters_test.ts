import assert from "node:assert/strict";
import type { RequestRedirect } from "../../proto/gen_messages/http_route.ts";
import { seededRng } from "../core/rng.ts";
import { HeaderList } from "../http/message.ts";
import { compileHeaderModifier, GrpcFailure, HttpFailure, Redirect, RouteFilters } from "./filters.ts";
import { MATCH_ALL, type Matcher } from "./http_match.ts";
import { RouteConfigError } from "./meta.ts";
import { enc, request } from "./testing.ts";

Deno.test("header modifier: add appends, set replaces, remove deletes (in that order)", () => {
  const m = compileHeaderModifier({
    add: { headers: [{ name: "X-Add", value: enc("a") }] },
    set: { headers: [{ name: "x-set", value: enc("s") }] },
    remove: ["X-Gone", "x-add-removed"],
  }, "test");
  const h = new HeaderList(["x-add", "old", "x-set", "1", "x-set", "2", "x-gone", "g", "keep", "k"]);
  m.apply(h);
  assert.deepEqual(h.raw, ["x-add", "old", "keep", "k", "x-add", "a", "x-set", "s"]);
  assert.throws(
    () =>
      compileHeaderModifier({ add: { headers: [{ name: "bad name", value: enc("") }] }, remove: [] }, "r"),
    RouteConfigError,
  );
});

const prefixMatcher = (n: number): Matcher => ({ score: () => 0, prefixLength: n });
const exactMatcher: Matcher = { score: () => 0, prefixLength: -1 };

function redirect(r: Partial<RequestRedirect>): Redirect {
  return new Redirect({ host: "", port: 0, status: 0, ...r }, "test");
}

Deno.test("redirect: Location rules for scheme, host, port and path (Linkerd's)", () => {
  const req = request("GET", "/foo/bar?a=b", "example.com:8080");
  const cases: [Partial<RequestRedirect>, Matcher, string | undefined][] = [
    [{ host: "example.org" }, MATCH_ALL, "http://example.org:8080/foo/bar?a=b"],
    [{ host: "example.org", port: 9090 }, MATCH_ALL, "http://example.org:9090/foo/bar?a=b"],
    [{ port: 80 }, MATCH_ALL, "http://example.com/foo/bar?a=b"], // default port is omitted
    [
      { port: 443, scheme: { type: { $case: "registered", value: 1 } } },
      MATCH_ALL,
      "https://example.com/foo/bar?a=b",
    ],
    [{ path: { replace: { $case: "full", value: "/x" } } }, MATCH_ALL, "http://example.com:8080/x"],
    [
      { path: { replace: { $case: "prefix", value: "/qux" } } },
      prefixMatcher(4),
      "http://example.com:8080/qux/bar?a=b",
    ],
    [{ port: 8080 }, MATCH_ALL, undefined], // the same URL: no redirect
  ];
  for (const [r, m, want] of cases) assert.equal(redirect(r).location(req, m), want, JSON.stringify(r));
  assert.equal(redirect({}).status, 301);
  assert.equal(redirect({ status: 302 }).status, 302);
  const bad = redirect({ path: { replace: { $case: "prefix", value: "/q" } } }).location(req, exactMatcher);
  assert.ok(bad instanceof Error && /prefix/.test(bad.message));
  assert.throws(() => redirect({ status: 200 }), /not a 3xx/);
  assert.throws(() => redirect({ port: 70000 }), /out of range/);
});

Deno.test("route filters: redirect answers 3xx with Location; invalid filters answer 500 / INTERNAL", async () => {
  const f = new RouteFilters([{ kind: "redirect", redirect: redirect({ host: "new.example" }) }], [], false);
  const res = f.applyRequest(request("GET", "/p", "old.example"), MATCH_ALL, Math.random)!;
  assert.equal(res.status, 301);
  assert.equal(res.headers.get("location"), "http://new.example/p");
  assert.equal(await res.body.read(), null);

  const invalid = new RouteFilters(
    [{ kind: "invalid", message: "rule 0 filter 0: unknown filter kind" }],
    [],
    false,
  );
  assert.equal(invalid.applyRequest(request("GET", "/"), MATCH_ALL, Math.random)!.status, 500);
  const invalidGrpc = new RouteFilters([{ kind: "invalid", message: "x" }], [], true);
  const g = invalidGrpc.applyRequest(request("POST", "/a/b"), MATCH_ALL, Math.random)!;
  assert.deepEqual([g.status, g.headers.get("grpc-status")], [200, "13"]);
});

Deno.test("failure injector: ratio honoured over many requests; HTTP status or gRPC code", () => {
  const rng = seededRng(11);
  const http = new HttpFailure(
    { status: 503, message: "injected", ratio: { numerator: 1, denominator: 4 } },
    "t",
  );
  let failed = 0;
  for (let i = 0; i < 10_000; i++) {
    const r = http.apply(rng);
    if (r) {
      failed++;
      assert.equal(r.status, 503);
    }
  }
  assert.ok(Math.abs(failed - 2_500) < 150, `${failed} of 10000 failed, want ~2500`);
  const always = new HttpFailure({ status: 500, message: "", ratio: undefined }, "t");
  assert.ok(always.apply(rng), "no ratio: every request");
  const grpc = new GrpcFailure({ code: 14, message: "down", ratio: { numerator: 1, denominator: 1 } }, "t");
  const r = grpc.apply(rng)!;
  assert.deepEqual([r.status, r.headers.get("grpc-status"), r.headers.get("grpc-message")], [
    200,
    "14",
    "down",
  ]);
  assert.throws(
    () => new HttpFailure({ status: 503, message: "", ratio: { numerator: 2, denominator: 1 } }, "t"),
    /ratio/,
  );
  assert.throws(() => new HttpFailure({ status: 42, message: "", ratio: undefined }, "t"), /HTTP status/);
});
