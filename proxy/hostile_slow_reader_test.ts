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
import type { Authz, Server } from "../proto/gen/inbound.ts";
import { ProxyEnv } from "../proto/env.ts";
import { toIpAddress } from "../proto/ip.ts";
import { DEFAULT_PROXY_UID } from "../proto/ports.ts";
import { createTestCa } from "./testing/certs.ts";
import { meshedEndpoint, meshedHttpEndpoint, TestControlPlane } from "./testing/control_plane.ts";
import { denoForUid, PodNetwork } from "./testing/netns.ts";
import { adminGet, denoRun, startProxy, startRelay, waitForLine } from "./testing/mesh_pods.ts";
import { applyInit } from "./testing/mesh_pods.ts";
import { until } from "./testing/poll.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("slow reader tests skipped: network namespaces and iptables need root");

const slowApp = new URL("./testing/slow_reader_app.ts", import.meta.url).pathname;
const httpApp = new URL("./http/data_path_app.ts", import.meta.url).pathname;
const deno = Deno.execPath();
const ID = (sa: string) => `${sa}.default.serviceaccount.identity.linkerd.cluster.local`;
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

const everywhere = [
  { net: { ip: toIpAddress("0.0.0.0"), prefixLen: 0 }, except: [] },
  { net: { ip: toIpAddress("::"), prefixLen: 0 }, except: [] },
];
const allowAll: Authz = {
  networks: everywhere,
  authentication: { permit: { $case: "unauthenticated", value: {} } },
  labels: {},
  metadata: { kind: { $case: "default", value: "all" } },
};
const opaqueServer: Server = {
  protocol: { kind: { $case: "opaque", value: {} } },
  serverIps: [],
  authorizations: [allowAll],
  labels: { group: "policy.linkerd.io", kind: "server", name: "bulk-tcp" },
};
const httpServer: Server = {
  protocol: {
    kind: { $case: "detect", value: { timeout: { seconds: 10n, nanos: 0 }, httpRoutes: [] } },
  },
  serverIps: [],
  authorizations: [allowAll],
  labels: { group: "policy.linkerd.io", kind: "server", name: "bulk-http" },
};

/** VmRSS of a process in MiB, from /proc (0 once it is gone). */
async function rssMib(pid: number): Promise<number> {
  const s = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => "");
  const m = s.match(/^VmRSS:\s+(\d+) kB/m);
  return m ? Number(m[1]) / 1024 : 0;
}

Deno.test({
  name: "hostile: slow readers through two meshed proxies",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const ca = await createTestCa("weft-test-mesh");
  const work = await Deno.makeTempDir({ prefix: "weft-slowreader-" });
  await Deno.chmod(work, 0o755);
  const cp = new TestControlPlane(`${work}/dst.sock`, `${work}/policy.sock`);
  let net: PodNetwork | undefined;
  let uidDeno: Awaited<ReturnType<typeof denoForUid>> | undefined;
  let failed = false;
  try {
    const creds: Record<string, string> = {};
    for (const pod of ["a", "b"]) {
      const p = `${work}/${pod}.json`;
      await Deno.writeTextFile(p, JSON.stringify(await ca.issue(ID(pod))));
      await Deno.chmod(p, 0o644);
      creds[pod] = p;
    }
    net = await PodNetwork.create(["a", "b"]);
    const B = net.pod("b");
    uidDeno = await denoForUid(DEFAULT_PROXY_UID);
    const wlB = '{"ns":"default","pod":"b"}';
    cp.tables.endpoints.set(`${B.ip}:${TCP_PORT}`, [meshedEndpoint(B.ip, TCP_PORT, ID("b"))]);
    // No h2 hint on HTTP_PORT: the hop between the proxies stays HTTP/1. HTTP_H2_HOP_PORT has it, as
    // Linkerd announces meshed pods, so the same HTTP/1 traffic crosses the proxies' HTTP/2 hop.
    cp.tables.endpoints.set(`${B.ip}:${HTTP_PORT}`, [meshedHttpEndpoint(B.ip, HTTP_PORT, ID("b"), false)]);
    cp.tables.endpoints.set(`${B.ip}:${HTTP_H2_HOP_PORT}`, [
      meshedHttpEndpoint(B.ip, HTTP_H2_HOP_PORT, ID("b")),
    ]);
    cp.tables.servers.set(`${wlB}|${HTTP_H2_HOP_PORT}`, httpServer);
    cp.tables.servers.set(`${wlB}|${TCP_PORT}`, opaqueServer);
    cp.tables.servers.set(`${wlB}|${HTTP_PORT}`, httpServer);
    await cp.start();

    const pids: Record<string, number> = {};
    const wellBehaved = async (): Promise<Record<string, number>> => {
      const r = await denoRun(
        net!,
        "a",
        httpApp,
        "http-load",
        JSON.stringify({ url: `http://${B.ip}:${HTTP_PORT}/small`, n: 50, timeoutMs: 5000 }),
      );
      try {
        return JSON.parse(r.stdout.trim().split("\n").pop()!).statuses;
      } catch {
        throw new Error(`http-load printed ${r.stdout} ${r.stderr}`);
      }
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
      const base: Record<string, number> = {};
      for (const pod of ["a", "b"]) base[pod] = await rssMib(pids[pod]);
      const log = `${work}/stall-${name}.log`;
      const client = net!.spawn(
        "a",
        [deno, "run", "-A", "--cached-only", slowApp, "stall", kind, B.ip, String(port), "16"],
        {},
        log,
      );
      try {
        await waitForLine(`${log}.out`, kind === "upload" ? "uploaded" : "stalled", 10_000);
        // Growth is the largest rise from any earlier sample: memory the previous case frees while
        // this one runs must not hide what this one takes.
        const peak = { ...base };
        const low = { ...base };
        const growth: Record<string, number> = { a: 0, b: 0 };
        const series: string[] = [];
        let sampling = true;
        const sampler = (async () => {
          for (let i = 0; sampling; i++) {
            const now: Record<string, number> = {};
            for (const pod of ["a", "b"]) {
              now[pod] = await rssMib(pids[pod]);
              peak[pod] = Math.max(peak[pod], now[pod]);
              low[pod] = Math.min(low[pod], now[pod]);
              growth[pod] = Math.max(growth[pod], now[pod] - low[pod]);
            }
            if (i % 5 === 0) series.push(`${now.a.toFixed(0)}/${now.b.toFixed(0)}`);
            await new Promise((r) => setTimeout(r, 200));
          }
        })();
        const started = Date.now();
        const statuses = await wellBehaved();
        await new Promise((r) => setTimeout(r, Math.max(0, STALL_MS - (Date.now() - started))));
        sampling = false;
        await sampler;
        assert.deepEqual(statuses, { 200: 50 }, "the well-behaved client was not served during the stall");
        console.log(
          `${name}: proxy RSS baseline a=${base.a.toFixed(1)} b=${base.b.toFixed(1)} MiB, ` +
            `peak a=${peak.a.toFixed(1)} b=${peak.b.toFixed(1)} MiB, ` +
            `growth a=${growth.a.toFixed(1)} b=${growth.b.toFixed(1)} MiB (bound ${RSS_BOUND_MIB} MiB); ` +
            `a/b each second: ${series.join(" ")}`,
        );
        for (const pod of ["a", "b"]) {
          assert.ok(
            growth[pod] < RSS_BOUND_MIB,
            `${pod}'s proxy grew ${growth[pod].toFixed(1)} MiB while its reader stalled`,
          );
        }
        return { growth, peak, log: await Deno.readTextFile(`${log}.out`) };
      } finally {
        try {
          client.kill("SIGKILL");
        } catch { /* exited */ }
        await client.status;
      }
    };

    failed = !(await t.step("setup: init, relays, the bulk server in b, both proxies ready", async () => {
      for (const pod of ["a", "b"]) {
        await applyInit(net!, pod);
        await startRelay(
          net!,
          pod,
          { dst: cp.dstSocket, policy: cp.policySocket },
          `${work}/relay-${pod}.log`,
        );
      }
      net!.spawn(
        "b",
        [
          deno,
          "run",
          "-A",
          "--cached-only",
          slowApp,
          "serve",
          String(TCP_PORT),
          String(HTTP_PORT),
          String(HTTP_H2_HOP_PORT),
        ],
        {},
        `${work}/serve-b.log`,
      );
      await waitForLine(`${work}/serve-b.log.out`, "listening");
      for (const pod of ["a", "b"]) {
        const child = startProxy(net!, {
          pod,
          localName: ID(pod),
          workload: `{"ns":"default","pod":"${pod}"}`,
          credentialsFile: creds[pod],
          trustAnchorsPem: ca.certPem,
          workDir: work,
          uidDeno: uidDeno!,
          inboundPorts: `${TCP_PORT},${HTTP_PORT},${HTTP_H2_HOP_PORT}`,
          env: { [ProxyEnv.outboundDiscoveryIdleTimeout]: "60s" },
          logFile: `${work}/proxy-${pod}.log`,
        });
        pids[pod] = child.pid;
      }
      for (const pod of ["a", "b"]) {
        await until(
          `${pod} ready`,
          async () => (await adminGet(net!, pod, "/ready")).status === 200 || undefined,
        );
        const status = await Deno.readTextFile(`/proc/${pids[pod]}/status`);
        assert.match(status, /^Name:\s+deno/m, `pid ${pids[pod]} is the proxy's deno process`);
      }
      // Warm both paths up so first-use allocations do not count as growth.
      assert.deepEqual(await wellBehaved(), { 200: 50 });
    })) || failed;

    failed = !(await t.step("hostile: slow reader on opaque TCP through both proxies", async () => {
      await underStall("opaque-tcp", "tcp", TCP_PORT);
    })) || failed;

    failed =
      !(await t.step("hostile: slow reader of an HTTP/1 response body through both proxies", async () => {
        await underStall("http1-response", "http", HTTP_PORT);
      })) || failed;

    const upload = async (name: string, port: number) => {
      const { log } = await underStall(name, "upload", port);
      const uploaded = log.trim().split("\n").map((l) => JSON.parse(l).uploaded as number);
      const last = uploaded[uploaded.length - 1] / 1048576;
      console.log(`${name}: the network took ${last.toFixed(1)} MiB of the 1 GiB body`);
      assert.ok(last < UPLOAD_BOUND_MIB, `the upload got ${last.toFixed(1)} MiB in: nothing held it back`);
    };
    failed = !(await t.step("hostile: slow reader app never reads an HTTP/1 upload", async () => {
      await upload("http1-upload", HTTP_PORT);
    })) || failed;

    failed = !(await t.step(
      "hostile: slow reader of an HTTP/1 response body carried over the proxies' HTTP/2 hop",
      async () => {
        await underStall("http1-over-h2-response", "http", HTTP_H2_HOP_PORT);
      },
    )) || failed;

    failed = !(await t.step(
      "hostile: slow reader app never reads an HTTP/1 upload carried over the proxies' HTTP/2 hop",
      async () => {
        await upload("http1-over-h2-upload", HTTP_H2_HOP_PORT);
      },
    )) || failed;
  } catch (e) {
    failed = true;
    throw e;
  } finally {
    if (failed) {
      for await (const f of Deno.readDir(work)) {
        if (f.name.includes(".log")) {
          console.error(`--- ${f.name}\n${(await Deno.readTextFile(`${work}/${f.name}`)).slice(-4000)}`);
        }
      }
    }
    cp.stop();
    await net?.cleanup();
    await uidDeno?.remove();
    await Deno.remove(work, { recursive: true });
  }
});
