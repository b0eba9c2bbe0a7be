import assert from "node:assert/strict";
import type { GrpcRoute } from "../../proto/gen_messages/outbound.ts";
import type { HostMatch } from "../../proto/gen_messages/http_route.ts";
import type { HttpRoute, OutboundPolicy } from "../../proto/gen_messages/outbound.ts";
import { RouteConfigError } from "./meta.ts";
import { compileOutboundPolicy } from "./outbound.ts";
import {
  balancerBackend,
  enc,
  httpRoute,
  pathExact,
  pathPrefix,
  pathRegex,
  request,
  rule,
} from "./testing.ts";

function policy(routes: HttpRoute[]): OutboundPolicy {
  return {
    metadata: { kind: { $case: "default", value: "test" } },
    protocol: { kind: { $case: "http1", value: { routes } } },
  };
}

const backendNamed = (name: string) => ({
  backends: {
    kind: {
      $case: "firstAvailable" as const,
      value: { backends: [{ backend: balancerBackend(name), filters: [] }] },
    },
  },
});

function table(routes: HttpRoute[]) {
  const p = compileOutboundPolicy(policy(routes));
  return (method: string, path: string, authority?: string, headers?: string[]) =>
    p.find(request(method, path, authority, headers))?.policy.backends.backends[0].meta.name ?? "none";
}

Deno.test("HTTP route match: path exact / prefix / regex, longest match wins, segment-wise prefixes", () => {
  const find = table([
    httpRoute("r", [
      rule([pathPrefix("/foo")], backendNamed("prefix-foo")),
      rule([pathExact("/foo/bar")], backendNamed("exact")),
      rule([pathRegex("/foo/[0-9]+")], backendNamed("regex")),
      rule([pathPrefix("/foo/bar/baz/")], backendNamed("long-prefix")),
    ]),
  ]);
  const cases: [string, string][] = [
    ["/foo", "prefix-foo"],
    ["/foo/", "prefix-foo"],
    ["/foo/baz", "prefix-foo"],
    ["/foo/bar", "exact"],
    ["/foo/bar?x=1", "exact"],
    ["/foo/123", "regex"],
    ["/foo/123x", "prefix-foo"], // regexes match the whole path
    ["/foo/bar/baz", "long-prefix"],
    ["/foo/bar/baz/qux", "long-prefix"],
    ["/foobar", "none"], // prefixes match whole segments
    ["/", "none"],
  ];
  for (const [path, want] of cases) assert.equal(find("GET", path), want, path);
});

Deno.test("HTTP route match: at equal path length exact > regex > prefix; then method, headers, query", () => {
  const find = table([
    httpRoute("r", [
      rule([pathPrefix("/a")], backendNamed("prefix")),
      rule([pathRegex("/[a]")], backendNamed("regex")),
      rule([pathExact("/a")], backendNamed("exact")),
    ]),
  ]);
  assert.equal(find("GET", "/a"), "exact");

  const m = (extra: object) => ({ ...pathPrefix("/"), ...extra });
  const find2 = table([
    httpRoute("r", [
      rule(
        [m({ headers: [{ name: "x-a", value: { $case: "exact", value: enc("1") } }] })],
        backendNamed("one-header"),
      ),
      rule([
        m({
          headers: [
            { name: "x-a", value: { $case: "exact", value: enc("1") } },
            { name: "X-B", value: { $case: "regex", value: "b+" } },
          ],
        }),
      ], backendNamed("two-headers")),
      rule([m({ method: { type: { $case: "registered", value: 0 } } })], backendNamed("method-get")),
      rule(
        [m({ queryParams: [{ name: "q", value: { $case: "exact", value: "v w" } }] })],
        backendNamed("query"),
      ),
      rule([m({})], backendNamed("catch-all")),
    ]),
  ]);
  assert.equal(
    find2("GET", "/x", undefined, ["x-a", "1", "x-b", "bbb"]),
    "method-get",
    "method beats headers",
  );
  assert.equal(find2("POST", "/x", undefined, ["x-a", "1", "x-b", "bbb"]), "two-headers");
  assert.equal(
    find2("POST", "/x", undefined, ["x-a", "1", "x-b", "bbbc"]),
    "one-header",
    "header regex is full-match",
  );
  assert.equal(
    find2("POST", "/x", undefined, ["x-a", "0", "x-a", "1"]),
    "one-header",
    "any value of a header",
  );
  assert.equal(find2("POST", "/x?q=v+w"), "query", "query values are form-decoded");
  assert.equal(find2("POST", "/x?q=v%20w&z"), "query");
  assert.equal(find2("POST", "/x?q=vw"), "catch-all");
  assert.equal(find2("POST", "/x", undefined, ["x-a", "1", "x-b", "b"]), "two-headers");
});

Deno.test("HTTP route match: hostnames rank first (exact > wildcard > none); ties go to the first", () => {
  const h = (exact: string): HostMatch => ({ match: { $case: "exact", value: exact } });
  const wild = (...reverse: string[]): HostMatch => ({
    match: { $case: "suffix", value: { reverseLabels: reverse } },
  });
  const find = table([
    httpRoute("no-host", [rule([pathExact("/very/specific/path")], backendNamed("no-host"))]),
    httpRoute("wild", [rule([pathPrefix("/")], backendNamed("wild"))], [wild("com", "example")]),
    httpRoute("exact", [rule([pathPrefix("/")], backendNamed("exact"))], [h("api.example.com")]),
    httpRoute("first", [rule([pathPrefix("/dup")], backendNamed("first"))]),
    httpRoute("second", [rule([pathPrefix("/dup")], backendNamed("second"))]),
  ]);
  assert.equal(find("GET", "/very/specific/path", "api.example.com:8080"), "exact");
  assert.equal(find("GET", "/very/specific/path", "API.Example.COM."), "exact", "case and trailing dot");
  assert.equal(find("GET", "/very/specific/path", "www.example.com"), "wild");
  assert.equal(find("GET", "/x", "a.b.example.com"), "wild");
  assert.equal(
    find("GET", "/very/specific/path", "example.com"),
    "no-host",
    "a wildcard needs a label in front",
  );
  assert.equal(find("GET", "/very/specific/path", "10.0.0.1:80"), "no-host");
  assert.equal(find("GET", "/dup", "other"), "first");
});

Deno.test("HTTP route match: a rule without matches matches everything; several matches take the best", () => {
  const find = table([
    httpRoute("r", [
      rule([], backendNamed("default")),
      rule([pathPrefix("/a"), pathExact("/b/c")], backendNamed("multi")),
    ]),
  ]);
  assert.equal(find("DELETE", "/anything"), "default");
  assert.equal(find("GET", "/a/x"), "multi");
  assert.equal(find("GET", "/b/c"), "multi");
  assert.equal(find("GET", "/b"), "default");
});

Deno.test("gRPC route match: POST only, service/method exact, more specific wins, headers count", () => {
  const g = (
    name: string,
    service: string,
    method: string,
    headers: GrpcRoute["rules"][number]["matches"][number]["headers"] = [],
  ) =>
    ({
      matches: [{ rpc: { service, method }, headers }],
      filters: [],
      backends: backendNamed(name).backends,
      allowL5dRequestHeaders: false,
    }) as GrpcRoute["rules"][number];
  const p = compileOutboundPolicy({
    metadata: { kind: { $case: "default", value: "g" } },
    protocol: {
      kind: {
        $case: "grpc",
        value: {
          routes: [{
            metadata: { kind: { $case: "default", value: "grpc" } },
            hosts: [],
            rules: [
              g("service", "pkg.Svc", ""),
              g("method", "pkg.Svc", "Get"),
              g("any-get", "", "Get"),
              g("get-header", "pkg.Svc", "Get", [{
                name: "x-v",
                value: { $case: "exact", value: enc("2") },
              }]),
            ],
          }],
        },
      },
    },
  });
  const find = (method: string, path: string, headers: string[] = []) =>
    p.find({ ...request(method, path, "svc:9000", headers), version: "HTTP/2" })?.policy.backends.backends[0]
      .meta.name ?? "none";
  assert.equal(find("POST", "/pkg.Svc/List"), "service");
  assert.equal(find("POST", "/pkg.Svc/Get"), "method");
  assert.equal(find("POST", "/pkg.Svc/Get", ["x-v", "2"]), "get-header");
  assert.equal(find("POST", "/other.Svc/Get"), "any-get");
  assert.equal(find("POST", "/other.Svc/List"), "none");
  assert.equal(find("GET", "/pkg.Svc/Get"), "none");
  assert.equal(find("POST", "/pkg.Svc"), "none");
});

Deno.test("HTTP route compile: bad input names the route, rule and field", () => {
  assert.throws(
    () => compileOutboundPolicy(policy([httpRoute("broken", [rule([pathRegex("(")])])])),
    (e: Error) =>
      e instanceof RouteConfigError &&
      /HTTPRoute ns\/broken rule 0 match 0 path: invalid regex/.test(e.message),
  );
  assert.throws(
    () => compileOutboundPolicy(policy([httpRoute("nobackends", [{ ...rule([]), backends: undefined }])])),
    /HTTPRoute ns\/nobackends rule 0 has no backend distribution/,
  );
  assert.throws(
    () => compileOutboundPolicy(policy([{ ...httpRoute("x", []), metadata: undefined }])),
    /http1 route 0 has no metadata/,
  );
});

Deno.test("regex literal prefix: a safe pre-check only", async () => {
  const { literalPrefix } = await import("./http_match.ts");
  assert.equal(literalPrefix("/api/v1/items/[0-9]+"), "/api/v1/items/");
  assert.equal(literalPrefix("/ab?c"), "/a", "a char that may repeat zero times is dropped");
  assert.equal(literalPrefix("/a|/b"), "", "alternation: no prefix");
  assert.equal(literalPrefix("\\/x"), "");
  assert.equal(literalPrefix(".*"), "");
});

Deno.test("HTTP route match: regexes are Rust regex syntax, matched whole the way Linkerd's proxy does", () => {
  const q = (name: string, value: string) => ({
    ...pathPrefix("/"),
    queryParams: [{ name, value: { $case: "regex" as const, value } }],
  });
  const h = (name: string, value: string) => ({
    ...pathPrefix("/"),
    headers: [{ name, value: { $case: "regex" as const, value } }],
  });
  const find = table([
    httpRoute("r", [
      rule([pathRegex("(?i)/api/v\\d+")], backendNamed("api-any-case")),
      rule([pathRegex("/files/[[:alnum:]]+\\-\\d+")], backendNamed("files")),
      rule([pathRegex("/x|/xy")], backendNamed("leftmost-first")),
      rule([h("x-user", "(?i)admin\\-\\w+")], backendNamed("admin-header")),
      rule([q("lang", "\\p{Greek}+")], backendNamed("greek-query")),
    ]),
  ]);
  assert.equal(find("GET", "/API/V2"), "api-any-case", "(?i) is honoured");
  assert.equal(find("GET", "/api/v2/x"), "none", "the whole path must match");
  assert.equal(find("GET", "/files/ab12-7"), "files", "\\- and POSIX classes");
  assert.equal(find("GET", "/x"), "leftmost-first");
  // Linkerd checks that find() spans the path; find() prefers "/x", so "/xy" does not match (^(?:…)$ would).
  assert.equal(find("GET", "/xy"), "none");
  assert.equal(find("GET", "/h", undefined, ["x-user", "ADMIN-bob"]), "admin-header");
  assert.equal(find("GET", "/h", undefined, ["x-user", "admin-"]), "none");
  assert.equal(
    find("GET", "/q?lang=%CE%B1%CE%B2"),
    "greek-query",
    "query values are decoded, \\p{Greek} applies",
  );
  assert.equal(find("GET", "/q?lang=ab"), "none");
});

Deno.test("HTTP route compile: a pattern Rust regex refuses is a route error naming the problem", () => {
  assert.throws(
    () => compileOutboundPolicy(policy([httpRoute("la", [rule([pathRegex("/a(?=b)")])])])),
    (e: Error) =>
      e instanceof RouteConfigError && /HTTPRoute ns\/la rule 0 match 0 path: .*look-around/.test(e.message),
  );
});

Deno.test("HTTP route match: header regexes skip values that are not visible ASCII, as Linkerd's proxy does", () => {
  const find = table([
    httpRoute("r", [
      rule(
        [{ ...pathPrefix("/"), headers: [{ name: "x-v", value: { $case: "regex", value: ".*" } }] }],
        backendNamed("any"),
      ),
    ]),
  ]);
  assert.equal(find("GET", "/", undefined, ["x-v", "plain\tvalue"]), "any");
  // A header value is held one char per byte; "\xc3\xa9" is "é" in UTF-8, which Linkerd's to_str() refuses.
  assert.equal(find("GET", "/", undefined, ["x-v", "caf\xc3\xa9"]), "none");
  assert.equal(
    find("GET", "/", undefined, ["x-v", "caf\xc3\xa9", "x-v", "ok"]),
    "any",
    "another value may match",
  );
});
