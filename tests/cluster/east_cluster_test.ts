// Cluster tier, opt-in (WEFT_EAST=1; root, and west running): the second local cluster "east"
// (`cluster:up --name=east`) next to west. The test brings east up (a no-op when it runs), runs a server pod in
// each cluster and checks, by pod IP both ways, that west and east pods reach each other directly (no NAT: each
// server sees the client's own pod IP), and that a west pod reaches a NodePort on east's node address (as a
// multicluster gateway is reached) and east's API server. East is left running (the multicluster tests use it)
// unless WEFT_EAST_DOWN=1. Traffic goes only between the two clusters' pods and
// east's node address; the rules that keep everything else on the machine are inspected, not probed.

import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BIN_CACHE, type ClusterConfig, clusterConfig } from "./config.ts";
import { exec, type RunResult } from "./exec.ts";
import { isolationRules } from "./host.ts";
import { WEFT_IMAGE } from "./helpers.ts";
import { kubectlBinary } from "../lib/kubectl_binary.ts";

const WEST = clusterConfig("west");
const EAST = clusterConfig("east");
const enabled = Deno.env.get("WEFT_EAST") === "1" && Deno.uid?.() === 0;
const opts = { sanitizeOps: false, sanitizeResources: false, ignore: !enabled };
const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));

async function kubectl(c: ClusterConfig, args: string[], stdin?: string): Promise<RunResult> {
  const bin = await kubectlBinary(BIN_CACHE);
  return await exec(bin, ["--kubeconfig", c.adminKubeconfig, ...args], stdin === undefined ? {} : { stdin });
}

async function kc(c: ClusterConfig, args: string[], stdin?: string): Promise<string> {
  const r = await kubectl(c, args, stdin);
  if (r.code !== 0) {
    throw new Error(`kubectl (${c.name}) ${args.join(" ")}: ${(r.stderr || r.stdout).trim()}`);
  }
  return r.stdout;
}

/** `cluster:<command> --name=east` in a child process (the cluster modules pick their cluster when loaded). */
async function eastCommand(command: "up" | "down"): Promise<number> {
  const t0 = Date.now();
  const r = await exec(Deno.execPath(), ["run", "-A", MAIN, command, "--name=east"]);
  if (r.code !== 0) throw new Error(`cluster:${command} --name=east failed:\n${r.stdout}${r.stderr}`);
  return Date.now() - t0;
}

/** A pod of the project image answering HTTP with the caller's address (remoteAddr), Ready once it listens. */
async function serverPod(c: ClusterConfig, ns: string, name: string): Promise<string> {
  const code = `Deno.serve({ port: 8080 }, (_req, info) => new Response(
    "${c.name} saw " + (info.remoteAddr as Deno.NetAddr).hostname));`;
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels: { app: name } },
    spec: {
      containers: [{
        name: "app",
        image: WEFT_IMAGE,
        imagePullPolicy: "Never",
        command: ["deno", "eval", code],
        ports: [{ containerPort: 8080 }],
        readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
      }],
    },
  };
  await kc(c, ["-n", ns, "apply", "-f", "-"], JSON.stringify(pod));
  await kc(c, ["-n", ns, "wait", `pod/${name}`, "--for=condition=Ready", "--timeout=120s"]);
  return (await kc(c, ["-n", ns, "get", "pod", name, "-o", "jsonpath={.status.podIP}"])).trim();
}

/** Runs a Deno snippet once in a pod of cluster `c`; returns its log and its pod IP. */
async function runOnce(c: ClusterConfig, ns: string, name: string, code: string) {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: {
      restartPolicy: "Never",
      containers: [{
        name: "run",
        image: WEFT_IMAGE,
        imagePullPolicy: "Never",
        command: ["deno", "eval", code],
      }],
    },
  };
  await kc(c, ["-n", ns, "apply", "-f", "-"], JSON.stringify(pod));
  const w = await kubectl(c, [
    "-n",
    ns,
    "wait",
    `pod/${name}`,
    "--for=jsonpath={.status.phase}=Succeeded",
    "--timeout=120s",
  ]);
  const logs = await kubectl(c, ["-n", ns, "logs", name]);
  if (w.code !== 0) throw new Error(`pod ${name} (${c.name}) did not succeed: ${w.stderr}\n${logs.stdout}`);
  const ip = (await kc(c, ["-n", ns, "get", "pod", name, "-o", "jsonpath={.status.podIP}"])).trim();
  return { log: logs.stdout, ip };
}

/** Fetches `url` (retried briefly) and prints the answer. */
const fetchCode = (url: string) =>
  `for (let i = 0; ; i++) {
    try { const r = await fetch(${JSON.stringify(url)}, { signal: AbortSignal.timeout(3000) });
      console.log(r.status, await r.text()); break; }
    catch (e) { if (i >= 20) throw e; await new Promise((r) => setTimeout(r, 1000)); }
  }`;

/** A TLS handshake with east's API server (verified against east's CA) and GET /readyz; prints the status line. */
const apiCode = (ca: string) =>
  `const c = await Deno.connectTls({ hostname: "${EAST.nodeIp}", port: 6443, caCerts: [${
    JSON.stringify(ca)
  }] });
  await c.write(new TextEncoder().encode("GET /readyz HTTP/1.1\\r\\nHost: ${EAST.nodeIp}\\r\\nConnection: close\\r\\n\\r\\n"));
  const buf = new Uint8Array(4096); const n = await c.read(buf);
  console.log(new TextDecoder().decode(buf.subarray(0, n ?? 0)).split("\\r\\n")[0]);`;

async function inNamespaces(fn: (ns: string) => Promise<void>) {
  const ns = `east-${crypto.randomUUID().slice(0, 6)}`;
  for (const c of [WEST, EAST]) await kc(c, ["create", "namespace", ns]);
  try {
    for (const c of [WEST, EAST]) {
      for (let i = 0; i < 60; i++) {
        if ((await kubectl(c, ["-n", ns, "get", "serviceaccount", "default"])).code === 0) break;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    await fn(ns);
  } catch (e) {
    for (const c of [WEST, EAST]) {
      console.error(
        `${c.name} ${ns}:\n${(await kubectl(c, ["-n", ns, "get", "pods,events", "-o", "wide"])).stdout}`,
      );
    }
    throw e;
  } finally {
    for (const c of [WEST, EAST]) await kubectl(c, ["delete", "namespace", ns, "--wait=false"]);
  }
}

Deno.test("east: a second cluster whose pods and west's reach each other by pod IP", opts, async (t) => {
  const ms = await eastCommand("up");
  console.log(`cluster:up --name=east took ${(ms / 1000).toFixed(1)} s`);
  try {
    await t.step("the host forwards between the clusters only what the isolation chains allow", async () => {
      for (const [c, peer] of [[WEST, EAST], [EAST, WEST]]) {
        const have = (await exec("iptables", ["-w", "-S", c.isolationChain])).stdout.trim().split("\n").slice(
          1,
        )
          .map((r) => r.replace(/ -m comment --comment "[^"]*"/, ""));
        assert.deepEqual(have, isolationRules(c, peer).map((r) => `-A ${c.isolationChain} ${r.join(" ")}`));
      }
      const forward = (await exec("iptables", ["-w", "-S", "FORWARD"])).stdout.trim().split("\n");
      assert.match(forward[1], new RegExp(`-j ${WEST.isolationChain}$`), forward.join("\n"));
      assert.match(forward[2], new RegExp(`-j ${EAST.isolationChain}$`), forward.join("\n"));
      const route = (await exec("ip", ["-4", "route", "show", EAST.podCidr])).stdout.trim();
      assert.equal(route, `${EAST.podCidr} via ${EAST.nodeIp} dev ${EAST.hostLink}`);
    });
    await inNamespaces(async (ns) => {
      const [westIp, eastIp] = await Promise.all([
        serverPod(WEST, ns, "server"),
        serverPod(EAST, ns, "server"),
      ]);
      assert.ok(westIp.startsWith("10.244."), westIp);
      assert.ok(eastIp.startsWith("10.245."), eastIp);
      await t.step("a west pod reaches an east pod by its IP, which sees the west pod's own IP", async () => {
        const r = await runOnce(WEST, ns, "to-east", fetchCode(`http://${eastIp}:8080/`));
        assert.equal(r.log.trim(), `200 east saw ${r.ip}`);
      });
      await t.step("an east pod reaches a west pod by its IP, which sees the east pod's own IP", async () => {
        const r = await runOnce(EAST, ns, "to-west", fetchCode(`http://${westIp}:8080/`));
        assert.equal(r.log.trim(), `200 west saw ${r.ip}`);
      });
      await t.step(
        "a west pod reaches a NodePort on east's node address (as a gateway is reached)",
        async () => {
          const svc = {
            apiVersion: "v1",
            kind: "Service",
            metadata: { name: "server" },
            spec: {
              type: "NodePort",
              selector: { app: "server" },
              ports: [{ port: 8080, targetPort: 8080 }],
            },
          };
          await kc(EAST, ["-n", ns, "apply", "-f", "-"], JSON.stringify(svc));
          const port =
            (await kc(EAST, ["-n", ns, "get", "svc", "server", "-o", "jsonpath={.spec.ports[0].nodePort}"]))
              .trim();
          const r = await runOnce(WEST, ns, "to-east-nodeport", fetchCode(`http://${EAST.nodeIp}:${port}/`));
          // kube-proxy masquerades NodePort traffic (externalTrafficPolicy Cluster): the server sees an east address.
          assert.match(r.log.trim(), /^200 east saw 10\.245\./);
        },
      );
      await t.step("a west pod reaches east's API server (TLS verified with east's CA)", async () => {
        const ca = await Deno.readTextFile(join(EAST.stateDir, "pki", "ca.crt"));
        const r = await runOnce(WEST, ns, "to-east-api", apiCode(ca));
        // /readyz is public (system:public-info-viewer).
        assert.equal(r.log.trim(), "HTTP/1.1 200 OK");
      });
    });
  } finally {
    if (Deno.env.get("WEFT_EAST_DOWN") === "1") {
      const down = await eastCommand("down");
      console.log(`cluster:down --name=east took ${(down / 1000).toFixed(1)} s`);
    }
  }
});
