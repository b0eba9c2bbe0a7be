import assert from "node:assert/strict";
import { outboundView } from "./outbound_view.ts";
import { profileView } from "./profile_view.ts";
import { fallbackPolicy } from "../testing/control_plane.ts";
import type { OutboundPolicy } from "../../proto/gen_messages/outbound.ts";
import type { DestinationProfile } from "../../proto/gen_messages/destination.ts";
import { systemClock } from "../../proto/support/clock.ts";

Deno.test("outbound view: protocol, detection timeout, L4 backend and HTTP routes from one message", () => {
  const v = outboundView(undefined, fallbackPolicy("10.0.0.9", 443));
  assert.equal(v.protocol, "detect");
  assert.equal(v.detectTimeoutMs, 10_000);
  assert.equal(v.l4?.kind === "forward" && `${v.l4.endpoint.ip}:${v.l4.endpoint.port}`, "10.0.0.9:443");
  assert.ok(v.http && v.http.backends.size > 0);
  assert.equal(v.httpError, undefined);
});

Deno.test("outbound view: routes that do not compile keep the previous routes and say why", () => {
  const good = outboundView(undefined, fallbackPolicy("10.0.0.9", 443));
  const bad: OutboundPolicy = structuredClone(fallbackPolicy("10.0.0.9", 443));
  const k = bad.protocol!.kind!;
  if (k.$case !== "detect") throw new Error("fixture");
  const rule = k.value.http1!.routes[0].rules[0];
  const dist = rule.backends!.kind!;
  if (dist.$case !== "firstAvailable") throw new Error("fixture");
  dist.value.backends = [];
  const v = outboundView(good, bad);
  assert.equal(v.http, good.http, "the previous compiled routes");
  assert.match(v.httpError ?? "", /firstAvailable has no backends/);
  const badTimeout: OutboundPolicy = structuredClone(fallbackPolicy("10.0.0.9", 443));
  const t = badTimeout.protocol!.kind!;
  if (t.$case !== "detect") throw new Error("fixture");
  t.value.timeout = { seconds: -1n, nanos: 0 };
  const u = outboundView(good, badTimeout);
  assert.equal(u.detectTimeoutMs, undefined, "an invalid detection timeout leaves the proxy's default");
  assert.match(u.httpError ?? "", /detect\.timeout: invalid duration/);
  assert.equal(u.l4?.kind, "forward", "the L4 backend does not depend on the HTTP routes");
  assert.equal(outboundView(undefined, bad).http, undefined, "nothing before a valid update");
});

Deno.test("profile view: compiled once per update, opaque_protocol from the latest message", () => {
  const p: DestinationProfile = {
    routes: [],
    retryBudget: undefined,
    dstOverrides: [],
    endpoint: undefined,
    opaqueProtocol: true,
    fullyQualifiedName: "web.ns.svc.cluster.local",
  };
  const v = profileView(undefined, p, systemClock);
  assert.equal(v.opaqueProtocol, true);
  assert.equal(v.compiled?.fullyQualifiedName, "web.ns.svc.cluster.local");
  assert.equal(v.error, undefined);
  const w = profileView(v, { ...p, opaqueProtocol: false }, systemClock);
  assert.notEqual(w.compiled, v.compiled, "a new update is a new compiled profile");
  assert.equal(w.opaqueProtocol, false);
});
