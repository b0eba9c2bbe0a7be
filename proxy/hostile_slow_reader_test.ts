/**
 * Tier 3, hostile: a peer that stops reading while the proxies have data for it must not make
 * them buffer without bound. Two meshed pods a and b (init's iptables, proxies as UID 2102, mesh
 * TLS between them); b serves a 1 GiB stream over opaque TCP and over HTTP/1, and an HTTP/1
 * endpoint that never reads request bodies. A client in a asks for the stream and stops reading
 * (or uploads 1 GiB to the endpoint that never reads). During ~10 s of the stall both proxies'
 * VmRSS is sampled from /proc; the growth must stay under RSS_BOUND_MIB, and a well-behaved client
 * through the same two proxies gets all its small requests answered meanwhile.
 * Skipped when not root.
 */
import assert from "node:assert/strict";
import { ProxyEnv } from "../proto/env.ts";
import { meshedEndpoint, meshedHttpEndpoint } from "./testing/control_plane.ts";
import { detectServer, opaqueServer } from "./testing/inbound_servers.ts";
import { MeshFixture, workloadOf } from "./testing/mesh_fixture.ts";
import { identityOf as ID, waitForLine } from "./testing/mesh_pods.ts";
import { rssLine, rssOf, watchRss } from "./testing/rss.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("slow reader tests skipped: network namespaces and iptables need root");

const slowApp = new URL("./testing/slow_reader_app.ts", import.meta.url).pathname;
const httpApp = new URL("./testing/data_path_app.ts", import.meta.url).pathname;
const TCP_PORT = 7090;
const HTTP_PORT = 7091;
/** The same HTTP/1 server, announced with the h2 hint: the proxies carry it over HTTP/2. */
const HTTP_H2_HOP_PORT = 7092;
/** Allowed growth of a proxy's resident memory during a stall. Kernel buffers hold the rest. */
const RSS_BOUND_MIB = 64;
/** How long the stall is watched. */
const STALL_MS = 10_000;
/** Bytes an upload may get into the network before the app's refusal to read stops it. */
const UPLOAD_BOUND_MIB = 128;

const opaque = opaqueServer("bulk-tcp");
const http = detectServer("bulk-http");

Deno.test({
  name: "hostile: slow readers through two meshed proxies",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  await MeshFixture.run({
    prefix: "weft-slowreader-",
    caName: "weft-test-mesh",
    pods: ["a", "b"],
    logTail: 4000,
  }, async (m) => {
    const { cp, work } = m;
    const B = m.pod("b");
    const wlB = workloadOf("b");
    cp.tables.endpoints.set(`${B.ip}:${TCP_PORT}`, [meshedEndpoint(B.ip, TCP_PORT, ID("b"))]);
    // No h2 hint on HTTP_PORT: the hop between the proxies stays HTTP/1. HTTP_H2_HOP_PORT has it, as
    // Linkerd announces meshed pods, so the same HTTP/1 traffic crosses the proxies' HTTP/2 hop.
    cp.tables.endpoints.set(`${B.ip}:${HTTP_PORT}`, [meshedHttpEndpoint(B.ip, HTTP_PORT, ID("b"), false)]);
    cp.tables.endpoints.set(`${B.ip}:${HTTP_H2_HOP_PORT}`, [
      meshedHttpEndpoint(B.ip, HTTP_H2_HOP_PORT, ID("b")),
    ]);
    cp.tables.servers.set(`${wlB}|${HTTP_H2_HOP_PORT}`, http);
    cp.tables.servers.set(`${wlB}|${TCP_PORT}`, opaque);
    cp.tables.servers.set(`${wlB}|${HTTP_PORT}`, http);
    await cp.start();

    const pids: Record<string, number> = {};
    const wellBehaved = async (): Promise<Record<string, number>> => {
      const r = await m.json<{ statuses: Record<string, number> }>(
        "a",
        "http-load",
        httpApp,
        "http-load",
        JSON.stringify({ url: `http://${B.ip}:${HTTP_PORT}/small`, n: 50, timeoutMs: 5000 }),
      );
      return r.statuses;
    };

    /**
     * Starts a stalling client in a, waits until it stalls (`ready`), then samples both proxies'
     * RSS for STALL_MS while a well-behaved client runs; returns the growth per proxy.
     */
    const underStall = async (
      name: string,
      kind: "tcp" | "http" | "upload",
      port: number,
    ): Promise<{ growth: Record<string, number>; peak: Record<string, number>; log: string }> => {
      const base = await rssOf(pids);
      const log = `${work}/stall-${name}.log`;
      const client = m.spawn("a", `stall-${name}`, [slowApp, "stall", kind, B.ip, String(port), "16"]);
      try {
        await waitForLine(`${log}.out`, kind === "upload" ? "uploaded" : "stalled", 10_000);
        // Sampled every 200 ms; growth is the largest rise from any earlier sample (see rss.ts).
        const watch = watchRss(pids, base, 200);
        const started = Date.now();
        const statuses = await wellBehaved();
        await new Promise((r) => setTimeout(r, Math.max(0, STALL_MS - (Date.now() - started))));
        const figures = await watch.stop();
        const { growth } = figures;
        assert.deepEqual(statuses, { 200: 50 }, "the well-behaved client was not served during the stall");
        const series = figures.samples.filter((_, i) => i % 5 === 0).map((s) =>
          `${s.a.toFixed(0)}/${s.b.toFixed(0)}`
        );
        console.log(`${rssLine(name, figures, RSS_BOUND_MIB)}; a/b each second: ${series.join(" ")}`);
        for (const pod of ["a", "b"]) {
          assert.ok(
            growth[pod] < RSS_BOUND_MIB,
            `${pod}'s proxy grew ${growth[pod].toFixed(1)} MiB while its reader stalled`,
          );
        }
        return { growth, peak: figures.peak, log: await Deno.readTextFile(`${log}.out`) };
      } finally {
        try {
          client.kill("SIGKILL");
        } catch { /* exited */ }
        await client.status;
      }
    };

    await m.step(t, "setup: init, relays, the bulk server in b, both proxies ready", async () => {
      for (const pod of ["a", "b"]) await m.meshPod(pod);
      await m.startApp("b", "serve-b", [
        slowApp,
        "serve",
        String(TCP_PORT),
        String(HTTP_PORT),
        String(HTTP_H2_HOP_PORT),
      ]);
      for (const pod of ["a", "b"]) {
        const child = m.startProxy(pod, {
          inboundPorts: `${TCP_PORT},${HTTP_PORT},${HTTP_H2_HOP_PORT}`,
          env: { [ProxyEnv.outboundDiscoveryIdleTimeout]: "60s" },
        });
        pids[pod] = child.pid;
      }
      for (const pod of ["a", "b"]) {
        await m.ready(pod);
        const status = await Deno.readTextFile(`/proc/${pids[pod]}/status`);
        assert.match(status, /^Name:\s+deno/m, `pid ${pids[pod]} is the proxy's deno process`);
      }
      // Warm both paths up so first-use allocations do not count as growth.
      assert.deepEqual(await wellBehaved(), { 200: 50 });
    });

    await m.step(t, "hostile: slow reader on opaque TCP through both proxies", async () => {
      await underStall("opaque-tcp", "tcp", TCP_PORT);
    });

    await m.step(t, "hostile: slow reader of an HTTP/1 response body through both proxies", async () => {
      await underStall("http1-response", "http", HTTP_PORT);
    });

    const upload = async (name: string, port: number) => {
      const { log } = await underStall(name, "upload", port);
      const uploaded = log.trim().split("\n").map((l) => JSON.parse(l).uploaded as number);
      const last = uploaded[uploaded.length - 1] / 1048576;
      console.log(`${name}: the network took ${last.toFixed(1)} MiB of the 1 GiB body`);
      assert.ok(last < UPLOAD_BOUND_MIB, `the upload got ${last.toFixed(1)} MiB in: nothing held it back`);
    };
    await m.step(t, "hostile: slow reader app never reads an HTTP/1 upload", async () => {
      await upload("http1-upload", HTTP_PORT);
    });

    await m.step(
      t,
      "hostile: slow reader of an HTTP/1 response body carried over the proxies' HTTP/2 hop",
      async () => {
        await underStall("http1-over-h2-response", "http", HTTP_H2_HOP_PORT);
      },
    );

    await m.step(
      t,
      "hostile: slow reader app never reads an HTTP/1 upload carried over the proxies' HTTP/2 hop",
      async () => {
        await upload("http1-over-h2-upload", HTTP_H2_HOP_PORT);
      },
    );
  });
});
