/**
 * The tap server over real TLS and real gRPC (a grpc-js client) in one process: authorization by
 * client identity, the match and limit, hostile ObserveRequests, the concurrent tap bound, and a
 * slow client's events dropped rather than held. Requests are fed through `Taps.exchange` as the
 * stacks do; proxy/tap_data_path_test.ts runs the same through two real proxies.
 */
import assert from "node:assert/strict";
import { CertStore } from "../core/cert_store.ts";
import { MeshTls } from "../transport/tls.ts";
import { createTestCa } from "../testing/certs.ts";
import { observe, summarize, type TapClientOptions } from "../testing/tap_client.ts";
import { bytesBody, HeaderList, type HttpRequest, type HttpResponse } from "../http/message.ts";
import type { ObserveRequest, ObserveRequest_Match } from "../../proto/tap_messages.ts";
import { toIpAddress } from "../../proto/ip.ts";
import { Registry } from "../metrics/registry.ts";
import { type TapContext, Taps } from "./taps.ts";
import { serveTap } from "./server.ts";

const PROXY_ID = "web.default.serviceaccount.identity.weft.cluster.local";
const TAP_ID = "weft-tap.weft.serviceaccount.identity.weft.cluster.local";
const OTHER_ID = "intruder.default.serviceaccount.identity.weft.cluster.local";

const pathPrefix = (p: string): ObserveRequest_Match => ({
  match: {
    $case: "http",
    value: { match: { $case: "path", value: { match: { $case: "prefix", value: p } } } },
  },
});

function request(path: string): HttpRequest {
  return {
    method: "GET",
    scheme: "http",
    authority: "web.default.svc.cluster.local:8080",
    path,
    version: "HTTP/2",
    headers: new HeaderList(),
    body: bytesBody([]),
  };
}

const ctx: TapContext = {
  direction: "inbound",
  source: { ip: "10.1.2.3", port: 40000 },
  destination: { ip: "10.1.2.4", port: 8080 },
  destinationLabels: undefined,
  routeLabels: undefined,
  sourceLabels: { tls: "true", client_id: "client.default.serviceaccount.identity.weft.cluster.local" },
  destinationMeta: { tls: "loopback" },
};

/** A request through the tap as a stack sends it, its body read to the end. */
async function exchange(taps: Taps, path: string, status: number, body: string): Promise<void> {
  const send = (): Promise<HttpResponse> =>
    Promise.resolve({
      status,
      headers: new HeaderList(["content-type", "text/plain"]),
      body: bytesBody([new TextEncoder().encode(body)]),
    });
  const res = taps.active === 0 ? await send() : await taps.exchange(request(path), ctx, send);
  while (await res.body.read() !== null) { /* drain */ }
}

async function until(what: string, f: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test({
  name: "tap server: TLS, authorization, match, limit and hostile requests",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const ca = await createTestCa("weft-tap-test");
  const store = new CertStore();
  store.set(await ca.issue(PROXY_ID));
  const tapCreds = await ca.issue(TAP_ID);
  const otherCreds = await ca.issue(OTHER_ID);
  const taps = new Taps({ max: 2 });
  const registry = new Registry();
  const server = await serveTap({
    listen: { ip: "127.0.0.1", port: 0 },
    tls: new MeshTls(store),
    tapName: TAP_ID,
    taps,
    log: () => {},
    registry,
    maxQueue: 8,
  });
  const base: TapClientOptions = {
    addr: `127.0.0.1:${server.addr.port}`,
    serverId: PROXY_ID,
    caPem: ca.certPem,
    client: tapCreds,
    timeoutMs: 5000,
  };
  const req = (o: Partial<ObserveRequest>): ObserveRequest => ({
    limit: 2,
    match: pathPrefix("/tapped"),
    extract: undefined,
    ...o,
  });
  try {
    await t.step(
      "an authorized client gets the matching requests, and the limit ends the stream",
      async () => {
        const call = observe(base, req({}));
        await until("the tap to register", () => taps.active === 1);
        await exchange(taps, "/other", 200, "not me");
        await exchange(taps, "/tapped/1", 200, "hello");
        await exchange(taps, "/tapped/2?q=1", 503, "down!!");
        assert.equal(taps.active, 0, "the tap stops matching at its limit");
        await exchange(taps, "/tapped/3", 200, "after the limit");
        const r = await call;
        assert.equal(r.code, 0, r.details);
        const s = r.events.map(summarize);
        assert.deepEqual(s.map((e) => e.kind), ["request", "response", "end", "request", "response", "end"]);
        assert.deepEqual(s.filter((e) => e.kind === "request").map((e) => e.path), [
          "/tapped/1",
          "/tapped/2?q=1",
        ]);
        assert.deepEqual(s.filter((e) => e.kind === "response").map((e) => e.status), [200, 503]);
        assert.deepEqual(s.filter((e) => e.kind === "end").map((e) => e.bytes), [5, 6]);
        assert.deepEqual(s[0].src, ctx.sourceLabels);
        assert.deepEqual(s[0].dst, { tls: "loopback" });
        assert.equal(s[0].direction, 1);
        assert.equal(s[0].stream, s[2].stream, "init and end share a stream id");
        assert.notEqual(s[0].stream, s[3].stream);
      },
    );

    await t.step("another identity, no client certificate and plaintext are refused", async () => {
      const other = await observe({ ...base, client: otherCreds }, req({}));
      assert.equal(other.code, 7, other.details);
      assert.match(
        other.details,
        new RegExp(
          `authorized for ${TAP_ID.replaceAll(".", "\\.")} only; this client is ${
            OTHER_ID.replaceAll(".", "\\.")
          }`,
        ),
      );
      const none = await observe({ ...base, client: undefined }, req({}));
      assert.equal(none.code, 7, none.details);
      assert.match(none.details, /presented no certificate/);
      const plain = await observe({ ...base, plaintext: true }, req({}));
      assert.equal(plain.code, 14, plain.details);
      assert.equal(taps.running, 0, "no refused client registered a tap");
      // And the server keeps serving the authorized client.
      const call = observe(base, req({ limit: 1 }));
      await until("the tap to register", () => taps.active === 1);
      await exchange(taps, "/tapped/again", 204, "");
      const r = await call;
      assert.equal(r.code, 0, r.details);
      assert.equal(r.events.length, 3);
    });

    await t.step("a renewed certificate serves the next connection (rotation)", async () => {
      const ca2 = await createTestCa("weft-tap-test-rotated");
      store.set(await ca2.issue(PROXY_ID));
      const rotated = { ...base, caPem: ca2.certPem, client: await ca2.issue(TAP_ID) };
      const call = observe(rotated, req({ limit: 1 }));
      await until("the tap to register", () => taps.active === 1);
      await exchange(taps, "/tapped/rotated", 200, "r");
      const r = await call;
      assert.equal(r.code, 0, r.details);
      // A client that trusts only the old anchor no longer accepts the proxy's certificate.
      const old = await observe(base, req({ limit: 1 }));
      assert.equal(old.code, 14, old.details);
      store.set(await ca.issue(PROXY_ID));
    });

    await t.step("hostile ObserveRequests get INVALID_ARGUMENT naming the fault", async () => {
      const cases: [Partial<ObserveRequest>, RegExp][] = [
        [{ limit: 0 }, /limit must be positive/],
        [{ limit: 4_000_000_000 }, /limit 4000000000 is over this proxy's maximum of 100000/],
        [{ match: undefined }, /match: missing required field/],
        [{
          match: Array.from({ length: 40 }).reduce<ObserveRequest_Match>(
            (m) => ({ match: { $case: "not", value: m } }),
            pathPrefix("/"),
          ),
        }, /deeper than 16 levels/],
        [{
          match: {
            match: {
              $case: "any",
              value: { matches: Array.from({ length: 300 }, () => pathPrefix("/")) },
            },
          },
        }, /more than 256 nodes/],
        [{
          match: {
            match: {
              $case: "source",
              value: { match: { $case: "netmask", value: { ip: toIpAddress("10.0.0.0"), mask: 40 } } },
            },
          },
        }, /match\.source\.netmask: prefix length 40 is not in 1\.\.32 for 10\.0\.0\.0/],
        [{
          match: {
            match: {
              $case: "destination",
              value: { match: { $case: "ports", value: { min: 80, max: 70000 } } },
            },
          },
        }, /not a port range/],
      ];
      for (const [o, want] of cases) {
        const r = await observe(base, req(o));
        assert.equal(r.code, 3, `${want}: ${r.code} ${r.details}`);
        assert.match(r.details, want);
      }
      const big = await observe(
        base,
        req({ match: { match: { $case: "any", value: { matches: [pathPrefix("x".repeat(20_000))] } } } }),
      );
      assert.equal(big.code, 8, big.details);
      assert.match(big.details, /over this proxy's limit of 16384 bytes/);
      assert.equal(taps.running, 0);
    });

    await t.step("at most `max` taps at once: RESOURCE_EXHAUSTED beyond", async () => {
      const held = [observe(base, req({ limit: 1 })), observe(base, req({ limit: 1 }))];
      await until("two taps", () => taps.running === 2);
      const third = await observe(base, req({ limit: 1 }));
      assert.equal(third.code, 8, third.details);
      await exchange(taps, "/tapped/x", 200, "x");
      for (const r of await Promise.all(held)) assert.equal(r.code, 0, r.details);
    });

    await t.step("a client that stops reading loses events (counted), requests are not held", async () => {
      const call = observe({ ...base, timeoutMs: 2000 }, req({ limit: 1000, match: pathPrefix("/") }));
      await until("the tap to register", () => taps.active === 1);
      // The data path never waits: many requests while grpc-js reads; queue bound 8.
      const t0 = performance.now();
      for (let i = 0; i < 200; i++) await exchange(taps, `/flood/${i}`, 200, "x");
      assert.ok(performance.now() - t0 < 2000);
      const r = await call;
      assert.ok(r.events.length < 600, `${r.events.length} events arrived of 600`);
      const dropped = Number((await registry.metrics()).match(/^tap_dropped_events_total (\d+)/m)?.[1]);
      // A request whose first event was dropped is not followed, so fewer than 600 arrive.
      assert.ok(dropped > 0 && r.events.length < 600, `${r.events.length} arrived, ${dropped} dropped`);
    });
  } finally {
    await server.close();
  }
});
