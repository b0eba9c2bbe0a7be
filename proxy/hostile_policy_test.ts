/**
 * Tier 3, hostile: inbound policy and protocol detection attacked through a real proxy. Pod b is
 * meshed (init's rules, the proxy as UID 2102, an HTTP app that answers `peer=<ip>` to anything,
 * a TCP echo app that greets with `peer=<ip>`, so any byte that reaches an app shows); pod c is an
 * unmeshed client in another namespace. The control plane runs in this process and pushes
 * policy changes to the proxy's open WatchPort streams. Skipped when not root.
 *
 * Ports of b (server authorizations allow everyone unless said otherwise; "routes" = one route
 * for /open, so anything else is 404 from the proxy):
 *   7001 http  detect + routes       7006 echo  detect + routes
 *   7002 http  http1 + routes        7007 echo  http1 + routes
 *   7003 http  detect, no routes: valid, then uncompilable, then valid again
 *   7004 http  detect, always valid (the bystander port)
 *   7005 echo  opaque: valid, then uncompilable, then valid again
 *   7008 http  uncompilable from the first message
 *   7009 http  detect + routes, server authorization only for an identity c does not have
 */
import assert from "node:assert/strict";
import type { Authz, HttpRoute, Server } from "../proto/gen_messages/inbound.ts";
import { ProxyEnv } from "../proto/env.ts";
import { toIpAddress } from "../proto/ip.ts";
import { DETECT_HTTP1_CORPUS } from "./http/detect_corpus.ts";
import {
  allowAll as allowEveryone,
  detectServer,
  http1Server,
  onlyIdentity,
  opaqueServer,
  prefixRoute,
  resource,
} from "./testing/inbound_servers.ts";
import { MeshFixture, workloadOf } from "./testing/mesh_fixture.ts";
import { APP_TS, identityOf as ID } from "./testing/mesh_pods.ts";
import { metric, until } from "./testing/poll.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("hostile policy tests skipped: network namespaces and iptables need root");

const WIRE_CLIENT = new URL("./testing/wire_client.ts", import.meta.url).pathname;
const WL_B = workloadOf("b");
/** The proxy's detect timeout here; slow clients wait well past it. */
const DETECT_MS = 1000;
const SLOW_MS = 2500;
/** b is meshed; c is an unmeshed client that still holds a mesh certificate. */
const FIXTURE = { prefix: "weft-hostile-policy-", caName: "weft-hostile-policy", pods: ["b", "c"] };

const allowAll = allowEveryone(resource("AuthorizationPolicy", "all"));
const onlyX = onlyIdentity(ID("x"), resource("AuthorizationPolicy", "x-only"));
const openRoute = (authorizations: Authz[] = []): HttpRoute => prefixRoute("open", "/open", authorizations);
const detect = (name: string, routes: HttpRoute[], authorizations: Authz[] = [allowAll]): Server =>
  detectServer(name, routes, authorizations);
const http1 = (name: string, routes: HttpRoute[]): Server => http1Server(name, routes, [allowAll]);
const opaque = (name: string, authorizations: Authz[]): Server => opaqueServer(name, authorizations);
/** A route whose path regex does not compile. */
const badRegex = detect("web-3", [{
  ...openRoute(),
  rules: [{
    matches: [{
      path: { kind: { $case: "regex", value: "/api/(" } },
      headers: [],
      queryParams: [],
      method: undefined,
    }],
    filters: [],
  }],
}]);
/** An authentication kind this proxy does not know (it decodes with no permit). */
const unknownAuthn = opaque("echo-5", [{ ...allowAll, authentication: { permit: undefined } }]);
/** A network with an IPv4 prefix length of 33. */
const badCidr = detect("web-8", [], [{
  ...allowAll,
  networks: [{ net: { ip: toIpAddress("10.0.0.0"), prefixLen: 33 }, except: [] }],
}]);

type Outcome = { name: string; status: number; data: string; closed: boolean; error?: string };
type Piece = { afterMs: number; data: string };

Deno.test({
  name: "hostile: inbound policy and protocol detection through a real proxy",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  await MeshFixture.run(FIXTURE, async (m) => {
    const { cp, work, caFile } = m;
    const step = async (name: string, fn: () => Promise<void>) => {
      await m.step(t, name, fn);
    };
    // c also holds a mesh certificate, to speak to b's direct port (4143) as a meshed peer would.
    const credsC = m.creds.c;
    const B = m.pod("b").ip;
    const set = (port: number, s: Server) => cp.tables.servers.set(`${WL_B}|${port}`, s);
    set(7001, detect("web-1", [openRoute()]));
    set(7002, http1("web-2", [openRoute()]));
    set(7003, detect("web-3", []));
    set(7004, detect("web-4", []));
    set(7005, opaque("echo-5", [allowAll]));
    set(7006, detect("echo-6", [openRoute()]));
    set(7007, http1("echo-7", [openRoute()]));
    set(7008, badCidr);
    set(7009, detect("web-9", [openRoute([allowAll])], [onlyX]));
    await cp.start();

    const wire = async (port: number, requests: { name: string; pieces: Piece[]; readMs?: number }[]) => {
      const spec = { host: B, port, requests: requests.map((r) => ({ readMs: 4000, ...r })) };
      return await m.json<Outcome[]>("c", "wire client", WIRE_CLIENT, JSON.stringify(spec));
    };
    const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: b\r\n\r\n`;
    const now = (name: string, data: string) => ({ name, pieces: [{ afterMs: 0, data }] });
    const metrics = async () => (await m.admin("b", "/metrics")).body;
    /** An answer the app gave: the HTTP app's body or the echo app's greeting. */
    const appSaw = (o: Outcome) => o.data.includes("peer=");

    await m.step(t, "setup: apps, init, relay, proxy in b", async () => {
      await m.startApp("b", "http-b", [APP_TS, "http", "7001", "7002", "7003", "7004", "7008", "7009"]);
      await m.startApp("b", "echo-b", [APP_TS, "echo", "7005", "7006", "7007"]);
      await m.meshPod("b");
      m.startProxy("b", {
        inboundPorts: "7001-7009",
        env: {
          [ProxyEnv.inboundDetectTimeout]: `${DETECT_MS}ms`,
          [ProxyEnv.inboundIps]: B,
        },
      });
      await m.ready("b");
      const [open] = await wire(7001, [now("open", get("/open/x"))]);
      assert.equal(open.status, 200, JSON.stringify(open));
    });
    if (m.failed) return;

    await step(
      "hostile: request with leading CRLF / unusual method cannot skip route authorization",
      async () => {
        // Every request here is for a path no route matches: the proxy must answer it (404, or
        // 400/505 for what its parser refuses); detected as opaque, it would reach the app.
        const attacks = DETECT_HTTP1_CORPUS.map((c) => ({
          ...now(c.name, c.wire("/admin/x")),
          accepted: c.accepted,
        }));
        const dribbled = {
          name: "PURGE dribbled past the detect timeout",
          pieces: [{ afterMs: 0, data: "PURGE /adm" }, {
            afterMs: SLOW_MS,
            data: "in/x HTTP/1.1\r\nHost: b\r\n\r\n",
          }],
          accepted: true,
        };
        for (const port of [7001, 7006, 7002, 7007]) {
          const [hostile, good] = await Promise.all([
            wire(port, [...attacks, dribbled]),
            port === 7001 || port === 7002
              ? wire(port, [now("well-behaved", get("/open/ok"))])
              : Promise.resolve([]),
          ]);
          for (const a of [...attacks, dribbled]) {
            const o = hostile.find((h) => h.name === a.name)!;
            assert.ok(!appSaw(o), `port ${port}, ${a.name}: reached the app: ${JSON.stringify(o)}`);
            if (a.accepted) assert.equal(o.status, 404, `port ${port}, ${a.name}: ${JSON.stringify(o)}`);
            else assert.ok([400, 505].includes(o.status), `port ${port}, ${a.name}: ${JSON.stringify(o)}`);
          }
          for (const g of good) {
            assert.equal(g.status, 200, `port ${port}: the well-behaved client: ${JSON.stringify(g)}`);
          }
        }
      },
    );

    await step("hostile: slow client on an HTTP/1 port is still routed and authorized", async () => {
      const slow = (name: string, data: string) => ({ name, pieces: [{ afterMs: SLOW_MS, data }] });
      for (const port of [7002, 7007]) {
        const [r, good] = await Promise.all([
          wire(port, [
            slow("slow request for no route", get("/admin/x")),
            slow("slow non-HTTP bytes", "SSH-2.0-OpenSSH_9.6\r\n\r\n"),
            ...(port === 7002 ? [slow("slow request for the open route", get("/open/slow"))] : []),
          ]),
          wire(7004, [now("bystander", get("/"))]),
        ]);
        const [noRoute, notHttp] = r;
        assert.equal(noRoute.status, 404, `port ${port}: ${JSON.stringify(noRoute)}`);
        assert.ok(!appSaw(noRoute), `port ${port}: the app saw the slow request`);
        assert.equal(
          notHttp.status,
          400,
          `port ${port}: non-HTTP bytes on an HTTP/1 port: ${JSON.stringify(notHttp)}`,
        );
        assert.ok(!appSaw(notHttp));
        if (port === 7002) {
          assert.equal(r[2].status, 200, `a slow but allowed request is served: ${JSON.stringify(r[2])}`);
        }
        assert.equal(good[0].status, 200, "the bystander port keeps serving");
      }
      // A `detect` port: a client silent through the timeout is opaque TCP (as in Linkerd), and
      // is then authorized per connection: 7009's server authorizations do not admit c.
      const [silent, fast] = await wire(7009, [
        slow("silent past the timeout", get("/open/x")),
        now("fast", get("/open/x")),
      ]);
      assert.equal(silent.status, 0, `opaque and refused: ${JSON.stringify(silent)}`);
      assert.equal(silent.data, "");
      assert.ok(silent.closed);
      assert.equal(fast.status, 200, `detected as HTTP, the route authorizes c: ${JSON.stringify(fast)}`);
      const m = await metrics();
      assert.ok(
        metric(m, "inbound_tcp_errors_total", { error: "detect_timeout" }) >= 1,
        "detect timeouts are counted",
      );
      assert.ok(metric(m, "inbound_tcp_authz_deny_total", { srv_name: "web-9" }) >= 1, m);
    });

    await step(
      "hostile: a meshed client naming an HTTP port without a session protocol is still routed",
      async () => {
        // mTLS to 4143 with a transport header for the port but no session protocol ("opaque"):
        // the port's policy says HTTP, so the request is routed (404), never forwarded as bytes.
        const direct = async (port: number, payload: string) => {
          return await m.json<{ ok: boolean; data: string; error?: string }>(
            "c",
            "tls client",
            APP_TS,
            "tls",
            `${B}:4143`,
            ID("b"),
            credsC,
            caFile,
            "transport.l5d.io/v1",
            String(port),
            JSON.stringify(payload),
          );
        };
        for (const port of [7002, 7007]) {
          const r = await direct(port, get("/admin/x"));
          assert.match(r.data, /^HTTP\/1\.1 404 /, `port ${port}: ${JSON.stringify(r)}`);
          assert.ok(!r.data.includes("peer="), `port ${port}: reached the app`);
        }
        const open = await direct(7002, get("/open/direct"));
        assert.match(
          open.data,
          /^HTTP\/1\.1 200 [\s\S]*peer=/,
          `the allowed route is served: ${JSON.stringify(open)}`,
        );
      },
    );

    await step("hostile: an uncompilable inbound policy denies every request on its port", async () => {
      const probe = async () => {
        const [web] = await wire(7003, [now("web", get("/"))]);
        const [tcp] = await wire(7005, [now("tcp", "hello")]);
        const [bystander] = await wire(7004, [now("bystander", get("/"))]);
        return { web, tcp, bystander };
      };
      const before = await probe();
      assert.equal(before.web.status, 200, JSON.stringify(before.web));
      assert.ok(appSaw(before.tcp), JSON.stringify(before.tcp));
      const [first] = await wire(7008, [now("invalid from the start", get("/"))]);
      assert.equal(first.status, 403, `never the default (allow-all) policy: ${JSON.stringify(first)}`);

      // A TCP connection established under the valid policy, still sending when it turns invalid.
      const established = wire(7005, [{
        name: "established",
        pieces: [{ afterMs: 0, data: "one\n" }, { afterMs: 8000, data: "two\n" }],
        readMs: 2000,
      }]);
      await until(
        "the established connection",
        async () => metric(await metrics(), "tcp_open_connections", { srv_name: "echo-5" }) >= 1 || undefined,
      );

      cp.setServer(WL_B, 7003, badRegex);
      cp.setServer(WL_B, 7005, unknownAuthn);
      const during = await until("the invalid policies to apply", async () => {
        const p = await probe();
        return p.web.status === 403 && !appSaw(p.tcp) ? p : undefined;
      });
      assert.equal(during.tcp.data, "", "the TCP connection is refused");
      assert.ok(during.tcp.closed);
      assert.equal(during.bystander.status, 200, "the valid port keeps serving the same client");
      const [open] = await established;
      assert.ok(open.data.includes("one") && !open.data.includes("two"), JSON.stringify(open));
      assert.ok(
        open.closed,
        `the established connection is closed by the policy change: ${JSON.stringify(open)}`,
      );
      const m = await metrics();
      const invalid = (port: number, reason: string) =>
        metric(m, "inbound_policy_invalid", { port: String(port), reason });
      assert.equal(
        invalid(7003, "route_match"),
        1,
        m.split("\n").filter((l) => l.includes("policy_invalid")).join("\n"),
      );
      assert.equal(invalid(7005, "authentication"), 1);
      assert.equal(invalid(7008, "network"), 1);
      assert.equal(metric(m, "inbound_tcp_authz_terminate_total", { srv_name: "invalid" }), 1);
      assert.ok(metric(m, "inbound_policy_invalid_total", { port: "7003", reason: "route_match" }) >= 1);
      const log = await Deno.readTextFile(`${work}/proxy-b.log`);
      assert.match(
        log,
        /WARN proxy: inbound policy for port 7003 is invalid \(route_match\): .*invalid regex/,
      );
      assert.match(log, /inbound policy for port 7005 is invalid \(authentication\)/);

      cp.setServer(WL_B, 7003, detect("web-3", []));
      cp.setServer(WL_B, 7005, opaque("echo-5", [allowAll]));
      await until("a valid policy to restore both ports", async () => {
        const p = await probe();
        return p.web.status === 200 && appSaw(p.tcp) ? p : undefined;
      });
      const after = await metrics();
      assert.equal(
        metric(after, "inbound_policy_invalid", { port: "7003" }),
        0,
        "the gauge series is gone",
      );
      assert.equal(metric(after, "inbound_policy_invalid", { port: "7008" }), 1, "7008 is still invalid");
      assert.match(
        await Deno.readTextFile(`${work}/proxy-b.log`),
        /inbound policy for port 7003 is valid again/,
      );
    });
  });
});
