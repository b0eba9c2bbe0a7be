import assert from "node:assert/strict";
import type { Backend, OutboundPolicy, TlsRoute } from "../../proto/gen_messages/outbound.ts";
import { seededRng } from "../core/rng.ts";
import { chooseL4Backend, compileL4, selectL4Route } from "./l4.ts";

const queue = { capacity: 10, failfastTimeout: { seconds: 3n, nanos: 0 } };
const forward = (ip: number, port: number): Backend => ({
  metadata: {
    kind: {
      $case: "resource",
      value: {
        group: "policy.linkerd.io",
        kind: "EgressNetwork",
        name: "ext",
        namespace: "e",
        section: "",
        port,
      },
    },
  },
  queue,
  kind: {
    $case: "forward",
    value: { addr: { ip: { ip: { $case: "ipv4", value: ip } }, port }, weight: 1, metricLabels: {} },
  },
});
const first = (b: Backend) => ({
  kind: { $case: "firstAvailable" as const, value: { backends: [{ backend: b, filters: [] }] } },
});
const parent = {
  kind: {
    $case: "resource" as const,
    value: {
      group: "policy.linkerd.io",
      kind: "EgressNetwork",
      name: "ext",
      namespace: "e",
      section: "",
      port: 443,
    },
  },
};
const named = (name: string) => ({ kind: { $case: "default" as const, value: name } });
const B = forward(0xcb007107, 443);

function tls(routes: TlsRoute[]): OutboundPolicy {
  return { metadata: parent, protocol: { kind: { $case: "tls", value: { routes } } } };
}

Deno.test("l4: TLS routes are chosen by SNI: exact over suffix over catch-all", () => {
  const p = compileL4(tls([
    {
      metadata: named("suffix"),
      snis: [{ match: { $case: "suffix", value: { reverseLabels: ["com", "example"] } } }],
      rules: [{ backends: first(B), filters: [] }],
    },
    {
      metadata: named("exact"),
      snis: [{ match: { $case: "exact", value: "api.example.com" } }],
      rules: [{ backends: first(B), filters: [] }],
    },
    {
      metadata: named("tls-egress-deny"),
      snis: [],
      rules: [{ backends: first(B), filters: [{ kind: { $case: "forbidden", value: {} } }] }],
    },
  ]))!;
  assert.equal(p.protocol, "tls");
  assert.equal(p.parent.port, 443);
  assert.equal(selectL4Route(p, "api.example.com")!.meta.name, "exact");
  assert.equal(selectL4Route(p, "API.Example.com.")!.meta.name, "exact");
  assert.equal(selectL4Route(p, "www.example.com")!.meta.name, "suffix");
  assert.equal(selectL4Route(p, "example.com")!.meta.name, "tls-egress-deny");
  assert.equal(selectL4Route(p, undefined)!.meta.name, "tls-egress-deny");
  assert.equal(selectL4Route(p, "other.org")!.refused, "forbidden");
  assert.equal(selectL4Route(p, "api.example.com")!.refused, undefined);
});

Deno.test("l4: without a catch-all route an unmatched SNI has no route", () => {
  const p = compileL4(tls([
    {
      metadata: named("exact"),
      snis: [{ match: { $case: "exact", value: "a.example" } }],
      rules: [{ backends: first(B), filters: [] }],
    },
  ]))!;
  assert.equal(selectL4Route(p, "b.example"), undefined);
});

Deno.test("l4: opaque routes under detect: the first route, its backend forwards, invalid backends refuse", () => {
  const p = compileL4({
    metadata: parent,
    protocol: {
      kind: {
        $case: "detect",
        value: {
          opaque: {
            routes: [{
              metadata: named("tcp-egress-allow"),
              rules: [{
                backends: {
                  kind: {
                    $case: "randomAvailable",
                    value: {
                      backends: [{
                        weight: 1,
                        backend: {
                          backend: B,
                          filters: [{ kind: { $case: "invalid", value: { message: "nope" } } }],
                        },
                      }],
                    },
                  },
                },
                filters: [],
              }],
            }],
          },
        },
      },
    },
  })!;
  assert.equal(p.protocol, "opaque");
  const r = selectL4Route(p, undefined)!;
  assert.equal(r.meta.name, "tcp-egress-allow");
  const b = chooseL4Backend(r, seededRng(1))!;
  assert.equal(b.refused, "invalid: nope");
  assert.equal(b.target.kind, "forward");
  assert.equal(
    b.target.kind === "forward" ? `${b.target.endpoint.ip}:${b.target.endpoint.port}` : "",
    "203.0.113.7:443",
  );
});

Deno.test("l4: HTTP-only policies have no connection routes", () => {
  assert.equal(
    compileL4({ metadata: parent, protocol: { kind: { $case: "http1", value: { routes: [] } } } }),
    undefined,
  );
});
