/**
 * Tap through two real proxies (network-namespace pods, init's redirects, proxies as UID 2102 with
 * test identities; see testing/mesh_fixture.ts): a (meshed client) → b (meshed HTTP server), and c
 * (not meshed) running the tap clients (grpc-js over TLS) against the proxies' control port 4190,
 * which init leaves unredirected. The proxies authorize `weft-tap` only.
 * Skipped when not root.
 */
import assert from "node:assert/strict";
import { ProxyEnv } from "../proto/env.ts";
import { ObserveRequest, type ObserveRequest_Match } from "../proto/tap_messages.ts";
import { toIpAddress } from "../proto/ip.ts";
import { meshedHttpEndpoint } from "./testing/control_plane.ts";
import { allowAll, detectServer } from "./testing/inbound_servers.ts";
import { MeshFixture, workloadOf } from "./testing/mesh_fixture.ts";
import { identityOf as ID } from "./testing/mesh_pods.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("tap data path test skipped: network namespaces and iptables need root");

const root = new URL("..", import.meta.url).pathname;
const tapApp = `${root}proxy/testing/tap_app.ts`;

interface Ev {
  kind: string;
  direction: number;
  srcAddr?: string;
  dstAddr?: string;
  src?: Record<string, string>;
  dst?: Record<string, string>;
  stream?: string;
  path?: string;
  status?: number;
  bytes?: number;
}
interface TapOut {
  code: number;
  details: string;
  events: Ev[];
}

const prefix = (p: string): ObserveRequest_Match => ({
  match: {
    $case: "http",
    value: { match: { $case: "path", value: { match: { $case: "prefix", value: p } } } },
  },
});

function b64(r: ObserveRequest): string {
  return btoa(String.fromCharCode(...ObserveRequest.encode(r).finish()));
}

Deno.test({
  name: "tap data path: Observe through two real proxies, authorized for the tap identity only",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const spec = {
    prefix: "weft-tap-",
    caName: "weft-tap-mesh",
    pods: ["a", "b", "c"],
    certificates: ["a", "b", "weft-tap", "intruder"],
  };
  await MeshFixture.run(spec, async (m) => {
    const { cp } = m;
    const A = m.pod("a"), B = m.pod("b");
    const ep = {
      ...meshedHttpEndpoint(B.ip, 7001, ID("b"), false),
      metricLabels: { pod: "b", namespace: "default" },
    };
    cp.tables.endpoints.set(`${B.ip}:7001`, [ep]);
    cp.tables.servers.set(`${workloadOf("b")}|7001`, detectServer("web", [], [allowAll()]));
    await cp.start();

    const get = async (...paths: string[]) =>
      (await m.json<{ statuses: number[] }>(
        "a",
        "get",
        tapApp,
        "get",
        ...paths.map((p) => `http://${B.ip}:7001${p}`),
      ))
        .statuses;
    const tap = (
      pod: { ip: string },
      serverId: string,
      r: ObserveRequest,
      who: { credsFile?: string; plaintext?: boolean } = { credsFile: m.creds["weft-tap"] },
      timeoutMs = 20_000,
    ) =>
      m.json<TapOut>(
        "c",
        "tap",
        tapApp,
        "tap",
        JSON.stringify({
          addr: `${pod.ip}:4190`,
          serverId,
          caFile: m.caFile,
          timeoutMs,
          request: b64(r),
          ...who,
        }),
      );
    /** Sends `paths` from a until the tap call ends (the tap registers at some point after the call starts). */
    const whileTapping = async (call: Promise<TapOut>, paths: string[]): Promise<TapOut> => {
      let over = false;
      const done = call.finally(() => over = true);
      for (let i = 0; i < 60 && !over; i++) {
        await get(...paths);
        await new Promise((r) => setTimeout(r, 250));
      }
      return await done;
    };

    await m.step(t, "setup: init and relays in a and b, the app in b, both proxies ready", async () => {
      for (const pod of ["a", "b"]) await m.meshPod(pod);
      await m.startApp("b", "app-b", [tapApp, "serve", "7001"]);
      for (const pod of ["a", "b"]) {
        m.startProxy(pod, {
          inboundPorts: "7001",
          env: {
            [ProxyEnv.tapSvcName]: ID("weft-tap"),
            [ProxyEnv.controlListenAddr]: "0.0.0.0:4190",
            [ProxyEnv.outboundDiscoveryIdleTimeout]: "60s",
          },
        });
      }
      for (const pod of ["a", "b"]) await m.ready(pod);
      assert.deepEqual(await get("/hello/200"), [200]);
    });

    await m.step(
      t,
      "inbound: the matching requests with the client's identity and status, then the limit ends the stream",
      async () => {
        const call = tap(B, ID("b"), { limit: 3, match: prefix("/tapped"), extract: undefined });
        const r = await whileTapping(call, ["/other/200", "/tapped/200", "/tapped/404", "/tapped/503"]);
        assert.equal(r.code, 0, r.details);
        const reqs = r.events.filter((e) => e.kind === "request");
        assert.equal(reqs.length, 3, JSON.stringify(r.events));
        assert.ok(reqs.every((e) => e.path!.startsWith("/tapped/")), "only matching requests were sent");
        assert.equal(r.events.length, 9, "request, response and end for each of the 3");
        for (const e of r.events) {
          assert.equal(e.direction, 1, "inbound");
          assert.ok(e.srcAddr?.startsWith(`${A.ip}:`), `source ${e.srcAddr}`);
          assert.equal(e.dstAddr, `${B.ip}:7001`);
          assert.deepEqual(e.src, { tls: "true", client_id: ID("a") });
          assert.deepEqual(e.dst, { tls: "loopback" });
        }
        // Each request's response carries the status its path asked for, and its end the body's bytes.
        for (const q of reqs) {
          const want = Number(q.path!.slice(-3));
          const res = r.events.find((e) => e.kind === "response" && e.stream === q.stream);
          const end = r.events.find((e) => e.kind === "end" && e.stream === q.stream);
          assert.equal(res?.status, want, JSON.stringify(r.events));
          assert.equal(end?.bytes, 4, `s${want}`);
        }
      },
    );

    await m.step(t, "outbound: the endpoint's labels and server identity", async () => {
      const call = tap(A, ID("a"), {
        limit: 2,
        match: {
          match: {
            $case: "all",
            value: {
              matches: [prefix("/out"), {
                match: { $case: "destinationLabel", value: { key: "pod", value: "b" } },
              }, {
                match: {
                  $case: "destination",
                  value: { match: { $case: "netmask", value: { ip: toIpAddress(B.ip), mask: 32 } } },
                },
              }],
            },
          },
        },
        extract: undefined,
      });
      const r = await whileTapping(call, ["/in/200", "/out/201"]);
      assert.equal(r.code, 0, r.details);
      assert.equal(r.events.length, 6, JSON.stringify(r.events));
      for (const e of r.events) {
        assert.equal(e.direction, 2, "outbound");
        assert.ok(e.srcAddr?.startsWith(`${A.ip}:`), `source ${e.srcAddr}: the application's address`);
        assert.equal(e.dstAddr, `${B.ip}:7001`, "the endpoint");
        assert.deepEqual(e.src, { tls: "loopback" });
        assert.deepEqual(e.dst, { pod: "b", namespace: "default", tls: "true", server_id: ID("b") });
      }
      assert.deepEqual(r.events.filter((e) => e.kind === "response").map((e) => e.status), [201, 201]);
    });

    await m.step(
      t,
      "attacks: another identity, no client certificate and plaintext are refused; the proxy keeps serving",
      async () => {
        const req: ObserveRequest = { limit: 1, match: prefix("/"), extract: undefined };
        const other = await tap(B, ID("b"), req, { credsFile: m.creds.intruder });
        assert.equal(other.code, 7, other.details);
        assert.match(other.details, /tap is authorized for weft-tap\..* only; this client is intruder\./);
        assert.equal(other.events.length, 0);
        const none = await tap(B, ID("b"), req, {});
        assert.equal(none.code, 7, none.details);
        assert.match(none.details, /presented no certificate/);
        const plain = await tap(B, ID("b"), req, { plaintext: true });
        assert.equal(plain.code, 14, plain.details);
        assert.equal(plain.events.length, 0);
        assert.deepEqual(await get("/still/200"), [200]);
        assert.equal((await m.admin("b", "/ready")).status, 200);
        const metrics = (await m.admin("b", "/metrics")).body;
        assert.match(metrics, /tap_refused_connections_total\{reason="unauthorized"\} [1-9]/);
        assert.match(metrics, /tap_refused_connections_total\{reason="no_client_certificate"\} [1-9]/);
      },
    );

    await m.step(t, "hostile ObserveRequests get INVALID_ARGUMENT naming the fault", async () => {
      const deep = Array.from({ length: 50 }).reduce<ObserveRequest_Match>(
        (x) => ({ match: { $case: "not", value: x } }),
        prefix("/"),
      );
      const cases: [ObserveRequest, RegExp][] = [
        [{ limit: 4_294_967_295, match: prefix("/"), extract: undefined }, /over this proxy's maximum/],
        [{ limit: 1, match: deep, extract: undefined }, /deeper than 16 levels/],
        [{
          limit: 1,
          match: {
            match: {
              $case: "source",
              value: { match: { $case: "netmask", value: { ip: toIpAddress("fd00::"), mask: 200 } } },
            },
          },
          extract: undefined,
        }, /prefix length 200 is not in 1\.\.128/],
      ];
      for (const [r, want] of cases) {
        const out = await tap(B, ID("b"), r);
        assert.equal(out.code, 3, `${want}: ${out.code} ${out.details}`);
        assert.match(out.details, want);
      }
      assert.deepEqual(await get("/after/200"), [200]);
    });
  });
});
