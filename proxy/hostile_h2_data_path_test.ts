/**
 * Tier 3, hostile HTTP/2: attackers in pod a against the real proxies, two meshed pods a and b
 * (init's iptables, proxies as UID 2102, mesh TLS between them, HTTP/2 end to end: app → a's
 * outbound server session, a → b over the h2 hop, b's inbound → the h2c server in b). Each attack
 * runs while a well-behaved HTTP/2 client in a, on its own connection through the same proxies,
 * must get every answer; both proxies' VmRSS is sampled from /proc and its growth held under
 * RSS_BOUND_MIB. Skipped when not root.
 */
import assert from "node:assert/strict";
import { ProxyEnv } from "../proto/env.ts";
import { DEFAULT_PROXY_UID } from "../proto/ports.ts";
import { createTestCa } from "./testing/certs.ts";
import { meshedHttpEndpoint, TestControlPlane } from "./testing/control_plane.ts";
import { denoForUid, PodNetwork } from "./testing/netns.ts";
import { adminGet, applyInit, denoRun, startProxy, startRelay, waitForLine } from "./testing/mesh_pods.ts";
import { until } from "./testing/poll.ts";
import { detectServer } from "./testing/inbound_servers.ts";
import { rssMib } from "./testing/rss.ts";

const ignore = Deno.uid() !== 0;
if (ignore) console.warn("hostile HTTP/2 pod tests skipped: network namespaces and iptables need root");

const podApp = new URL("./testing/h2_hostile_pod_app.ts", import.meta.url).pathname;
const deno = Deno.execPath();
const ID = (sa: string) => `${sa}.default.serviceaccount.identity.linkerd.cluster.local`;
const PORT = 7201;
/** Allowed growth of a proxy's resident memory during one attack. */
const RSS_BOUND_MIB = 64;
/** How long a stall is watched. */
const STALL_S = 8;
const ENHANCE_YOUR_CALM = 0xb;

const h2Server = detectServer("h2");

Deno.test({
  name: "hostile: h2 attackers through two meshed proxies",
  ignore,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const ca = await createTestCa("weft-test-mesh");
  const work = await Deno.makeTempDir({ prefix: "weft-h2hostile-" });
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
    // The h2 hint keeps the hop between the proxies HTTP/2.
    cp.tables.endpoints.set(`${B.ip}:${PORT}`, [meshedHttpEndpoint(B.ip, PORT, ID("b"))]);
    cp.tables.servers.set(`{"ns":"default","pod":"b"}|${PORT}`, h2Server);
    await cp.start();

    const pids: Record<string, number> = {};
    const app = async <T>(...args: string[]): Promise<T> => {
      const r = await denoRun(net!, "a", podApp, ...args);
      try {
        return JSON.parse(r.stdout.trim().split("\n").pop()!);
      } catch {
        throw new Error(`${args.join(" ")} printed ${r.stdout} ${r.stderr}`);
      }
    };
    const wellBehaved = async (n: number) =>
      (await app<{ statuses: Record<string, number> }>("good", B.ip, String(PORT), String(n))).statuses;

    /** Samples both proxies' RSS while `during` runs; asserts the growth and prints the figures. */
    const watched = async <T>(name: string, during: () => Promise<T>): Promise<T> => {
      const base: Record<string, number> = {};
      for (const pod of ["a", "b"]) base[pod] = await rssMib(pids[pod]);
      const peak = { ...base };
      const low = { ...base };
      const growth: Record<string, number> = { a: 0, b: 0 };
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          for (const pod of ["a", "b"]) {
            const now = await rssMib(pids[pod]);
            peak[pod] = Math.max(peak[pod], now);
            low[pod] = Math.min(low[pod], now);
            growth[pod] = Math.max(growth[pod], now - low[pod]);
          }
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      try {
        return await during();
      } finally {
        sampling = false;
        await sampler;
        console.log(
          `${name}: proxy RSS baseline a=${base.a.toFixed(1)} b=${base.b.toFixed(1)} MiB, ` +
            `peak a=${peak.a.toFixed(1)} b=${peak.b.toFixed(1)} MiB, ` +
            `growth a=${growth.a.toFixed(1)} b=${growth.b.toFixed(1)} MiB (bound ${RSS_BOUND_MIB} MiB)`,
        );
        for (const pod of ["a", "b"]) {
          assert.ok(
            growth[pod] < RSS_BOUND_MIB,
            `${name}: ${pod}'s proxy grew ${growth[pod].toFixed(1)} MiB`,
          );
        }
      }
    };

    const stall = (name: string, kind: "socket" | "window") =>
      watched(name, async () => {
        const log = `${work}/stall-${kind}.log`;
        const client = net!.spawn(
          "a",
          [deno, "run", "-A", "--cached-only", podApp, "stall", kind, B.ip, String(PORT), String(STALL_S)],
          {},
          log,
        );
        try {
          await waitForLine(`${log}.out`, "stalled", 10_000);
          const started = Date.now();
          const statuses = await wellBehaved(50);
          assert.deepEqual(statuses, { 200: 50 }, `${name}: the well-behaved client was not served`);
          await new Promise((r) => setTimeout(r, Math.max(0, STALL_S * 1000 - 500 - (Date.now() - started))));
        } finally {
          try {
            client.kill("SIGKILL");
          } catch { /* exited */ }
          await client.status;
        }
      });

    const flood = (name: string, kind: string) =>
      watched(name, async () => {
        const [result, statuses] = await Promise.all([
          app<{ goaway: number | null; closed: boolean; sent: number }>("flood", kind, B.ip, String(PORT)),
          wellBehaved(30),
        ]);
        console.log(`${name}: ${JSON.stringify(result)}`);
        assert.equal(result.goaway, ENHANCE_YOUR_CALM, `${name}: GOAWAY ENHANCE_YOUR_CALM from a's proxy`);
        assert.ok(result.closed, `${name}: the attacking connection was closed`);
        assert.deepEqual(statuses, { 200: 30 }, `${name}: the well-behaved client was not served`);
      });

    failed = !(await t.step("setup: init, relays, the h2 server in b, both proxies ready", async () => {
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
        [deno, "run", "-A", "--cached-only", podApp, "serve", String(PORT)],
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
          inboundPorts: String(PORT),
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
      // Warm the path up so first-use allocations do not count as growth.
      assert.deepEqual(await wellBehaved(30), { 200: 30 });
    })) || failed;

    failed = !(await t.step("hostile: h2 peer asks for 1 GiB and never reads the socket", async () => {
      await stall("h2 slow reader (socket)", "socket");
    })) || failed;

    failed = !(await t.step("hostile: h2 peer asks for 1 GiB and never sends WINDOW_UPDATE", async () => {
      await stall("h2 slow reader (window)", "window");
    })) || failed;

    failed = !(await t.step("hostile: h2 PING flood at a's proxy", async () => {
      await flood("h2 PING flood", "ping");
    })) || failed;

    failed = !(await t.step("hostile: h2 rapid reset at a's proxy", async () => {
      await flood("h2 rapid reset", "rapid-reset");
    })) || failed;

    failed = !(await t.step("hostile: h2 MadeYouReset at a's proxy", async () => {
      await flood("h2 MadeYouReset", "made-you-reset");
    })) || failed;
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
