/**
 * Tier 3: the access log as the injector configures it. Three network-namespace pods with init's
 * iptables rules and the real proxy started from its environment (proxy/main.ts via the test
 * identity entry point): b's proxy has `LINKERD2_PROXY_ACCESS_LOG=apache`, c's `=json`, a's none.
 * The app in a calls the apps in b and c through its own proxy, so each request crosses mesh TLS
 * (HTTP/2 between the proxies) and arrives at b's or c's inbound proxy, which must write one line
 * per request to its stderr with a's address and identity, the request and the app's status. a's
 * proxy, without the variable, writes none. Skipped when not root.
 */
import assert from "node:assert/strict";
import { ProxyEnv } from "../proto/env.ts";
import { meshedHttpEndpoint } from "./testing/control_plane.ts";
import { allowAll, detectServer } from "./testing/inbound_servers.ts";
import { MeshFixture, workloadOf } from "./testing/mesh_fixture.ts";
import { identityOf as ID } from "./testing/mesh_pods.ts";
import { until } from "./testing/poll.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("access log data path test skipped: network namespaces and iptables need root");

const appTs = new URL("./testing/data_path_app.ts", import.meta.url).pathname;
const PORT = 7001;
const FIXTURE = { prefix: "weft-accesslog-", caName: "weft-test-mesh", pods: ["a", "b", "c"] };

Deno.test({
  name: "access log data path: LINKERD2_PROXY_ACCESS_LOG=apache|json writes one line per inbound request",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  await MeshFixture.run(FIXTURE, async (m) => {
    const { cp } = m;
    const A = m.pod("a"), B = m.pod("b"), C = m.pod("c");
    for (const [pod, ip] of [["b", B.ip], ["c", C.ip]]) {
      cp.tables.endpoints.set(`${ip}:${PORT}`, [meshedHttpEndpoint(ip, PORT, ID(pod))]);
      cp.tables.servers.set(`${workloadOf(pod)}|${PORT}`, detectServer("web", [], [allowAll()]));
    }
    await cp.start();
    const load = (ip: string, path: string, n: number, extra: Record<string, unknown> = {}) =>
      m.json<{ statuses: Record<string, number> }>(
        "a",
        "http-load",
        appTs,
        "http-load",
        JSON.stringify({
          url: `http://${ip}:${PORT}${path}`,
          n,
          headers: { "user-agent": "weft-accesslog/1", "x-request-id": "req-42" },
          ...extra,
        }),
      );
    /** The access-log lines in a proxy's stderr: its own log lines start with their level instead. */
    const accessLines = async (pod: string) => {
      const text = await Deno.readTextFile(`${m.work}/proxy-${pod}.log`).catch(() => "");
      return text.split("\n").filter((l) => l.startsWith(`${A.ip}:`) || l.startsWith("{"));
    };

    await m.step(
      t,
      "setup: init, relays, apps in b and c, proxies configured from the environment",
      async () => {
        for (const pod of ["a", "b", "c"]) await m.meshPod(pod);
        for (const pod of ["b", "c"]) {
          await m.startApp(pod, `http-${pod}`, [appTs, "http-server", String(PORT)]);
        }
        m.startProxy("a", { inboundPorts: String(PORT) });
        m.startProxy("b", { inboundPorts: String(PORT), env: { [ProxyEnv.accessLog]: "apache" } });
        m.startProxy("c", { inboundPorts: String(PORT), env: { [ProxyEnv.accessLog]: "json" } });
        for (const pod of ["a", "b", "c"]) {
          await m.ready(pod);
        }
      },
    );

    await m.step(t, "apache: one line per request with the client's address and identity", async () => {
      assert.deepEqual((await load(B.ip, "/log/one?x=1", 2)).statuses, { 200: 2 });
      assert.deepEqual((await load(B.ip, "/status/404", 1)).statuses, { 404: 1 });
      const lines = await until("3 apache lines in b's stderr", async () => {
        const l = await accessLines("b");
        return l.length >= 3 ? l : undefined;
      });
      assert.equal(lines.length, 3, lines.join("\n"));
      const esc = (s: string) => s.replace(/[.?]/g, (c) => `\\${c}`);
      const line = (path: string, status: number) =>
        new RegExp(
          `^${esc(A.ip)}:\\d+ ${esc(ID("a"))} - \\[\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}Z\\] ` +
            // Meshed requests arrive over HTTP/2 from a's proxy: the full URI, as in Linkerd's examples.
            `"GET http://${esc(B.ip)}:${PORT}${esc(path)} HTTP/2\\.0" ${status}$`,
        );
      assert.match(lines[0], line("/log/one?x=1", 200));
      assert.match(lines[1], line("/log/one?x=1", 200));
      assert.match(lines[2], line("/status/404", 404));
    });

    await m.step(t, "json: one object per request with Linkerd's fields", async () => {
      assert.deepEqual((await load(C.ip, "/log/two", 2)).statuses, { 200: 2 });
      assert.deepEqual((await load(C.ip, "/post", 1, { method: "POST", body: "hello" })).statuses, {
        200: 1,
      });
      const lines = await until("3 json lines in c's stderr", async () => {
        const l = await accessLines("c");
        return l.length >= 3 ? l : undefined;
      });
      assert.equal(lines.length, 3, lines.join("\n"));
      const [get, , post] = lines.map((l) => JSON.parse(l));
      assert.deepEqual(Object.keys(get), [
        "client.addr",
        "client.id",
        "host",
        "method",
        "processing_ns",
        "request_bytes",
        "response_bytes",
        "status",
        "timestamp",
        "total_ns",
        "trace_id",
        "uri",
        "user_agent",
        "version",
      ]);
      assert.match(get["client.addr"], new RegExp(`^${A.ip.replaceAll(".", "\\.")}:\\d+$`));
      assert.equal(get["client.id"], ID("a"));
      assert.equal(get.host, `${C.ip}:${PORT}`);
      assert.equal(get.method, "GET");
      assert.equal(get.status, 200);
      assert.equal(get.uri, `http://${C.ip}:${PORT}/log/two`);
      assert.equal(get.version, "HTTP/2.0");
      assert.equal(get.trace_id, "req-42");
      assert.equal(get.user_agent, "weft-accesslog/1");
      assert.ok(Number(get.response_bytes) > 0, "the echo's content-length");
      assert.ok(Number(get.total_ns) > 0 && Number(get.processing_ns) <= Number(get.total_ns));
      assert.equal(post.method, "POST");
      assert.equal(post.request_bytes, "5");
      assert.equal(post.status, 200);
    });

    await m.step(t, "a proxy without the variable writes no access log", async () => {
      assert.deepEqual(await accessLines("a"), []);
      assert.equal((await accessLines("b")).length, 3, "b logged nothing for c's requests");
    });
  });
});
