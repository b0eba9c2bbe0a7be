/**
 * Route regexes in Rust regex syntax on the real data path: an app in network namespace a sends HTTP/1.1
 * through a's proxy to a virtual service whose outbound policy (from the test control plane) routes by
 * path, header and query regexes written as a Linkerd user writes them ((?i), \-, POSIX classes, \p{..}) to
 * two ports of an echo server in b, through b's proxy. The echo reports which port answered. Skipped when
 * not root.
 */
import assert from "node:assert/strict";
import {
  balancerBackend,
  detectPolicy,
  httpRouteOf,
  httpRule,
  meshedHttpEndpoint,
} from "./testing/control_plane.ts";
import { allowAll, detectServer, resource } from "./testing/inbound_servers.ts";
import { MeshFixture, workloadOf } from "./testing/mesh_fixture.ts";
import { identityOf as ID } from "./testing/mesh_pods.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("regex route data path test skipped: network namespaces and iptables need root");

const appTs = new URL("./testing/data_path_app.ts", import.meta.url).pathname;
const P1 = "rx-one.default.svc.cluster.local:7001";
const P2 = "rx-two.default.svc.cluster.local:7002";
const FIXTURE = { prefix: "weft-rxroute-", caName: "weft-test-mesh", pods: ["a", "b"] };

/** The match message, by way of the test helpers (tests do not import generated code directly). */
type HttpRouteMatch = NonNullable<NonNullable<Parameters<typeof httpRule>[1]>["matches"]>[number];
type Load = { statuses: Record<string, number>; ports: Record<string, number> };

const match = (m: Partial<HttpRouteMatch>): HttpRouteMatch => ({
  path: undefined,
  headers: [],
  queryParams: [],
  method: undefined,
  ...m,
});
const pathRegex = (value: string) => match({ path: { kind: { $case: "regex", value } } });

Deno.test({
  name: "regex routes: Rust regex syntax routes real requests through two meshed proxies",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  await MeshFixture.run(FIXTURE, async (m) => {
    const { cp } = m;
    const B = m.pod("b");
    const ep = (port: number) => meshedHttpEndpoint(B.ip, port, ID("b"));
    cp.tables.endpoints.set(P1, [ep(7001)]);
    cp.tables.endpoints.set(P2, [ep(7002)]);
    for (const port of [7001, 7002]) {
      cp.tables.servers.set(
        `${workloadOf("b")}|${port}`,
        detectServer("web", [], [
          allowAll(resource("AuthorizationPolicy", "all")),
        ]),
      );
    }
    const to = (path: string) => [{ backend: balancerBackend(path), weight: 1 }];
    // 7020 is virtual: nothing listens there in b; a's proxy routes it by policy.
    cp.setOutbound(
      B.ip,
      7020,
      detectPolicy("rx", B.ip, 7020, [httpRouteOf("rx", [
        httpRule(to(P1), { matches: [pathRegex("(?i)/api/v\\d+\\-beta")] }),
        httpRule(to(P2), { matches: [pathRegex("/files/[[:alnum:]]+|/files/[[:alnum:]]+/meta")] }),
        httpRule(to(P2), {
          matches: [match({
            path: { kind: { $case: "prefix", value: "/h" } },
            headers: [{ name: "x-user", value: { $case: "regex", value: "(?i)admin\\-\\w+" } }],
          })],
        }),
        httpRule(to(P1), {
          matches: [match({
            path: { kind: { $case: "prefix", value: "/q" } },
            queryParams: [{ name: "lang", value: { $case: "regex", value: "\\p{Greek}+" } }],
          })],
        }),
      ])]),
    );
    await cp.start();

    const load = (path: string, headers?: Record<string, string>) =>
      m.json<Load>(
        "a",
        `app http-load ${path}`,
        appTs,
        "http-load",
        JSON.stringify({ url: `http://${B.ip}:7020${path}`, n: 1, headers }),
      );

    await m.step(t, "setup: init, echo servers in b, both proxies ready", async () => {
      for (const pod of ["a", "b"]) await m.meshPod(pod);
      await m.startApp("b", "http-b", [appTs, "http-server", "7001", "7002"]);
      for (const pod of ["a", "b"]) m.startProxy(pod, { inboundPorts: "7001-7002" });
      for (const pod of ["a", "b"]) await m.ready(pod);
    });

    await m.step(t, "each request reaches the port its Rust-syntax regex route names", async () => {
      const cases: [string, Record<string, string> | undefined, string][] = [
        ["/API/V2-BETA", undefined, "7001"], // (?i) and \-
        ["/api/v10-beta", undefined, "7001"],
        ["/files/abc1", undefined, "7002"], // POSIX class
        ["/h", { "x-user": "ADMIN-bob" }, "7002"], // header regex, (?i)
        ["/q?lang=%CE%B1%CE%B2", undefined, "7001"], // \p{Greek} on the decoded query value
      ];
      for (const [path, headers, port] of cases) {
        const r = await load(path, headers);
        assert.deepEqual(r.ports, { [port]: 1 }, `${path}: ${JSON.stringify(r)}`);
      }
    });

    await m.step(t, "values the regexes do not match whole get no route (404 from a's proxy)", async () => {
      // "/files/abc1/meta": the leftmost-first match is "/files/abc1", which does not span the path, so
      // Linkerd's proxy (and weft's) does not match it, though ^(?:…)$ would.
      for (
        const [path, headers] of [
          ["/api/v2-beta/x", undefined],
          ["/files/abc1/meta", undefined],
          ["/h", { "x-user": "admin-" }],
          ["/q?lang=ab", undefined],
        ] as [string, Record<string, string> | undefined][]
      ) {
        const r = await load(path, headers);
        assert.deepEqual(r.statuses, { 404: 1 }, `${path}: ${JSON.stringify(r)}`);
      }
    });
  });
});
