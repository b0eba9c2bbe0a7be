import assert from "node:assert/strict";
import { toIpAddress } from "../../proto/ip.ts";
import type { ObserveRequest_Match } from "../../proto/tap_messages.ts";
import { bytesBody, HeaderList, type HttpRequest } from "../http/message.ts";
import { compileMatch, InvalidMatch, type TapEndpoints } from "./match.ts";

const req = (o: Partial<HttpRequest> = {}): HttpRequest => ({
  method: "GET",
  scheme: undefined,
  authority: "web.ns.svc.cluster.local:80",
  path: "/books/1?x=1",
  version: "HTTP/1.1",
  headers: new HeaderList(),
  body: bytesBody([]),
  ...o,
});
const at = (src: string, dst: string, labels?: Record<string, string>): TapEndpoints => ({
  source: { ip: src, port: 40000 },
  destination: { ip: dst, port: 8080 },
  destinationLabels: labels,
  routeLabels: undefined,
});
const net = (which: "source" | "destination", ip: string, mask: number): ObserveRequest_Match => ({
  match: { $case: which, value: { match: { $case: "netmask", value: { ip: toIpAddress(ip), mask } } } },
});
const path = (kind: "exact" | "prefix", v: string): ObserveRequest_Match => ({
  match: { $case: "http", value: { match: { $case: "path", value: { match: { $case: kind, value: v } } } } },
});

Deno.test("tap match: networks of both families, IPv4-mapped addresses, ports", () => {
  const m = compileMatch(net("source", "10.1.0.0", 16));
  assert.equal(m(req(), at("10.1.200.3", "10.2.0.1")), true);
  assert.equal(m(req(), at("::ffff:10.1.0.9", "10.2.0.1")), true);
  assert.equal(m(req(), at("10.2.0.1", "10.1.0.1")), false);
  const v6 = compileMatch(net("destination", "fd00:1::", 32));
  assert.equal(v6(req(), at("10.0.0.1", "fd00:1:ffff::2")), true);
  assert.equal(v6(req(), at("10.0.0.1", "fd00:2::2")), false);
  assert.equal(v6(req(), at("10.0.0.1", "10.0.0.2")), false);
  const ports = compileMatch({
    match: { $case: "destination", value: { match: { $case: "ports", value: { min: 8000, max: 0 } } } },
  });
  assert.equal(ports(req(), at("10.0.0.1", "10.0.0.2")), false, "a missing max means the single port 8000");
});

Deno.test("tap match: all/any/not, labels, HTTP fields (path without its query)", () => {
  const m = compileMatch({
    match: {
      $case: "all",
      value: {
        matches: [
          path("prefix", "/books"),
          { match: { $case: "not", value: path("exact", "/books/2") } },
          {
            match: {
              $case: "any",
              value: {
                matches: [{ match: { $case: "destinationLabel", value: { key: "app", value: "web" } } }],
              },
            },
          },
        ],
      },
    },
  });
  assert.equal(m(req(), at("1.1.1.1", "2.2.2.2", { app: "web" })), true);
  assert.equal(m(req({ path: "/books/2?y" }), at("1.1.1.1", "2.2.2.2", { app: "web" })), false);
  assert.equal(m(req(), at("1.1.1.1", "2.2.2.2", { app: "db" })), false);
  const exact = compileMatch(path("exact", "/books/1"));
  assert.equal(exact(req(), at("1.1.1.1", "2.2.2.2")), true, "the query is not part of the path");
  const scheme = compileMatch({
    match: {
      $case: "http",
      value: { match: { $case: "scheme", value: { type: { $case: "registered", value: 0 } } } },
    },
  });
  assert.equal(scheme(req(), at("1.1.1.1", "2.2.2.2")), true, "no scheme is http");
  const method = compileMatch({
    match: {
      $case: "http",
      value: { match: { $case: "method", value: { type: { $case: "unregistered", value: "PURGE" } } } },
    },
  });
  assert.equal(method(req({ method: "PURGE" }), at("1.1.1.1", "2.2.2.2")), true);
  assert.equal(method(req(), at("1.1.1.1", "2.2.2.2")), false);
});

Deno.test("tap match: refusals name the node", () => {
  const bad: [ObserveRequest_Match, RegExp][] = [
    [net("source", "10.0.0.0", 0), /match\.source\.netmask: prefix length 0 is not in 1\.\.32/],
    [{ match: { $case: "not", value: { match: undefined } } }, /match\.not: missing required field/],
    [{ match: { $case: "destinationLabel", value: { key: "", value: "x" } } }, /key and value must be set/],
    [{
      match: {
        $case: "http",
        value: {
          match: { $case: "method", value: { type: { $case: "unregistered", value: "BAD METHOD" } } },
        },
      },
    }, /is not a method/],
    [{
      match: {
        $case: "all",
        value: { matches: [path("prefix", "/"), { match: { $case: "http", value: { match: undefined } } }] },
      },
    }, /match\.all\[1\]\.http: missing/],
  ];
  for (const [m, want] of bad) {
    assert.throws(() => compileMatch(m), (e) => e instanceof InvalidMatch && want.test(e.message));
  }
});
