// Cluster e2e (issue 22 hardening): the control plane's plaintext HTTP APIs answer only the Kubernetes API
// server's service proxy (and the dashboard's identity). An unmeshed pod and a meshed pod with another
// ServiceAccount both attack weft-tap:8089 (a valid tap request) and weft-prometheus:9090 (a query) directly and
// get 403 with no tap event and no series, while the same pods reach the unguarded ports next to them (so the
// refusal is the policy's, not the network's); `weft tap` and `weft stat`, which go through the API server,
// still work. Needs `deno task deploy` (with the embedded Prometheus) first.
import assert from "node:assert/strict";
import { dispatch } from "../../cli/dispatch.ts";
import { COMMANDS } from "../../cli/commands.ts";
import { recordingContext } from "../../cli/testing.ts";
import { exec } from "../lib/exec.ts";
import {
  apply,
  inNamespace,
  type Json,
  kc,
  kjson,
  KUBECONFIG,
  requireMesh,
  waitForReadyPods,
  WEFT_IMAGE,
} from "./lib/kube.ts";
import { waitFor } from "./lib/wait.ts";
import { appManifest, identityOf, startSession, stopSession } from "./lib/workloads.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const CLI = new URL("../../cli/main.ts", import.meta.url).pathname;
const TAP = "http://weft-tap.weft.svc.cluster.local";
const PROM = "http://weft-prometheus.weft.svc.cluster.local:9090";
const DASHBOARD = "http://weft-dashboard.weft.svc.cluster.local:8084";

interface Probe {
  name: string;
  status: number | string;
  body: string;
}

/**
 * A Job that makes the attacker's requests and prints one JSON line: each request's status and the first 4 KiB
 * of its body (a tap that was admitted would stream events; 10 s at most per request).
 */
function attackJob(
  name: string,
  sa: string,
  meshed: boolean,
  tapNamespace: string,
  tapPodIp: string,
): string {
  const code = `
const probes = [
  ["tap API", "${TAP}:8089/apis/tap", { method: "POST", body: JSON.stringify({ namespace: "${tapNamespace}", resource: "deploy/server", limit: 1 }) }],
  ["prometheus query", "${PROM}/api/v1/query?query=up", {}],
  ["prometheus series", "${PROM}/api/v1/series?match[]=request_total", {}],
  ["tap admin (unguarded)", "http://${tapPodIp}:9998/ready", {}],
  ["prometheus probe path", "${PROM}/-/ready", {}],
  ["dashboard API", "${DASHBOARD}/api/stat?ns=${tapNamespace}&kind=deploy", {}],
];
const out = [];
for (const [name, url, init] of probes) {
  try {
    const r = await fetch(url, { ...init, signal: AbortSignal.timeout(10000) });
    let body = "";
    const reader = r.body.getReader();
    try {
      while (body.length < 4096) { const { value, done } = await reader.read(); if (done) break; body += new TextDecoder().decode(value); }
    } catch (e) { body += " [read: " + e.message + "]"; }
    await reader.cancel().catch(() => {});
    out.push({ name, status: r.status, body: body.slice(0, 4096) });
  } catch (e) { out.push({ name, status: "error: " + e.message, body: "" }); }
}
console.log(JSON.stringify(out));
Deno.exit(0);
`;
  return JSON.stringify({
    apiVersion: "v1",
    kind: "List",
    items: [
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: sa } },
      {
        apiVersion: "batch/v1",
        kind: "Job",
        metadata: { name },
        spec: {
          backoffLimit: 0,
          activeDeadlineSeconds: 180,
          template: {
            metadata: {
              labels: { job: name },
              annotations: { "linkerd.io/inject": meshed ? "enabled" : "disabled" },
            },
            spec: {
              serviceAccountName: sa,
              restartPolicy: "Never",
              containers: [{
                name: "attack",
                image: WEFT_IMAGE,
                imagePullPolicy: "Never",
                command: ["deno", "eval", code],
                resources: { requests: { cpu: "10m", memory: "32Mi" }, limits: { memory: "256Mi" } },
              }],
            },
          },
        },
      },
    ],
  });
}

async function runAttack(ns: string, name: string, sa: string, meshed: boolean): Promise<Map<string, Probe>> {
  // The admin port is not on the Service: the pod's address.
  const [tapPod] = await waitForReadyPods("weft", "linkerd.io/control-plane-component=tap", 1);
  await apply(ns, attackJob(name, sa, meshed, ns, tapPod.status.podIP));
  await waitFor(`the ${name} Job to finish`, async () => {
    const j = await kjson(["-n", ns, "get", "job", name, "-o", "json"]);
    return (j.status?.succeeded ?? 0) + (j.status?.failed ?? 0) > 0;
  }, { timeoutMs: 180_000 });
  const pod = (await kjson(["-n", ns, "get", "pods", "-l", `job=${name}`, "-o", "json"])).items[0] as Json;
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c: Json) => c.name);
  assert.equal(all.includes("linkerd-proxy"), meshed, `${name}: meshed=${meshed}, containers ${all}`);
  const out = await kc(["-n", ns, "logs", `job/${name}`, "-c", "attack"]);
  const probes = JSON.parse(out.trim().split("\n").at(-1)!) as Probe[];
  console.log(
    `${name} (${meshed ? `meshed as ${identityOf(sa, ns)}` : "unmeshed"}), from ${pod.status.podIP}:`,
  );
  for (const p of probes) console.log(`  ${p.name}: ${p.status} ${JSON.stringify(p.body.slice(0, 100))}`);
  return new Map(probes.map((p) => [p.name, p]));
}

function assertRefused(who: string, probes: Map<string, Probe>) {
  const tap = probes.get("tap API")!;
  assert.equal(tap.status, 403, `${who}: tap API ${JSON.stringify(tap)}`);
  assert.ok(
    !tap.body.includes('"event"') && !tap.body.includes('"end"'),
    `${who}: tap data leaked: ${tap.body}`,
  );
  for (const name of ["prometheus query", "prometheus series"]) {
    const p = probes.get(name)!;
    assert.equal(p.status, 403, `${who}: ${name} ${JSON.stringify(p)}`);
    assert.ok(
      !p.body.includes('"success"') && !p.body.includes("__name__"),
      `${who}: ${name} leaked: ${p.body}`,
    );
  }
  // The dashboard would otherwise lend any pod its own identity towards tap and the store.
  const dash = probes.get("dashboard API")!;
  assert.equal(dash.status, 403, `${who}: dashboard API ${JSON.stringify(dash)}`);
  assert.ok(
    !dash.body.includes('"rows"') && !dash.body.includes("weft-tap"),
    `${who}: dashboard leaked: ${dash.body}`,
  );
  // The same pod reaches the ports next to them: the network is open, the Servers refuse.
  assert.equal(probes.get("tap admin (unguarded)")!.status, 200, `${who}: weft-tap:9998 unreachable`);
  assert.equal(probes.get("prometheus probe path")!.status, 200, `${who}: 9090's probe path unreachable`);
}

Deno.test({
  name:
    "e2e: weft-tap:8089, weft-prometheus:9090 and weft-dashboard:8084 refuse pods (unmeshed, other identity); the API server's path works",
  ...opts,
  fn: async (t) => {
    await requireMesh();
    await waitForReadyPods("weft", "linkerd.io/control-plane-component=tap", 1);
    await waitForReadyPods("weft", "linkerd.io/control-plane-component=prometheus", 1);
    const servers = await kjson(["-n", "weft", "get", "servers.policy.linkerd.io", "-o", "json"]);
    assert.deepEqual(
      (servers.items as Json[]).map((s) => s.metadata.name).filter((n: string) => n.endsWith("-api")).sort(),
      ["weft-prometheus-api", "weft-tap-api"],
    );
    assert.ok(
      (servers.items as Json[]).some((s) => s.metadata.name === "weft-dashboard-web"),
      "the dashboard's port has its Server",
    );
    await inNamespace("e2e-cp-ports", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "server", serviceAccount: "server-sa", service: true }));
      await apply(ns, appManifest({ name: "client", serviceAccount: "client-sa" }));
      await waitForReadyPods(ns, "app=server", 1);
      const [client] = await waitForReadyPods(ns, "app=client", 1);
      await startSession(client.status.podIP, `server.${ns}.svc.cluster.local:80`, 100);
      try {
        await t.step("an unmeshed pod gets 403 and no data from 8089, 9090 and 8084", async () => {
          assertRefused("unmeshed", await runAttack(ns, "unmeshed", "unmeshed-sa", false));
        });

        await t.step(
          "a meshed pod with another ServiceAccount gets 403 and no data from 8089, 9090 and 8084",
          async () => {
            assertRefused("meshed", await runAttack(ns, "meshed", "intruder-sa", true));
          },
        );

        await t.step("weft tap, through the API server, still streams events", async () => {
          const r = await exec(Deno.execPath(), [
            "run",
            "-A",
            CLI,
            "tap",
            "deploy/server",
            "-n",
            ns,
            "--authority",
            `server.${ns}.svc.cluster.local:80`,
            "--limit",
            "3",
            "-o",
            "json",
          ], { env: { KUBECONFIG }, signal: AbortSignal.timeout(90_000) });
          assert.equal(r.code, 0, r.stderr);
          const evs = r.stdout.trim().split("\n").filter((l) => l).map((l) => JSON.parse(l));
          assert.equal(evs.filter((e) => e.http.kind === "request").length, 3, `${r.stdout}\n${r.stderr}`);
          assert.ok(evs.every((e) => e.sourceLabels.client_id === identityOf("client-sa", ns)), r.stdout);
        });

        await t.step("weft stat, through the API server, still reads the store", async () => {
          const ctx = recordingContext({ env: { KUBECONFIG } });
          const code = await dispatch(COMMANDS, ["stat", "deploy", "-n", "weft", "-o", "json"], ctx);
          assert.equal(code, 0, ctx.stderr.join("\n"));
          const rows = JSON.parse(ctx.stdout.join("")) as Json[];
          const tap = rows.find((r) => r.name === "weft-tap");
          assert.ok(tap && tap.meshed === `${tap.running_pods}/${tap.running_pods}`, JSON.stringify(rows));
          // Its inbound requests (the API server's taps) are in the store.
          assert.ok(rows.some((r) => r.rps > 0), JSON.stringify(rows));
        });
      } finally {
        await stopSession(client.status.podIP).catch(() => {});
      }
    });
  },
});
