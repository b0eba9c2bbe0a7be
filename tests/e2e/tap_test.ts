// Cluster e2e: `weft tap` through the deployed tap component shows live requests with the identities both
// proxies proved and the status codes the app answered, and ends by itself at --limit; a meshed pod with
// another ServiceAccount that calls a proxy's tap port is refused (PERMISSION_DENIED), as Linkerd's proxies
// refuse every client but the tap component.
import assert from "node:assert/strict";
import { exec } from "../lib/exec.ts";
import {
  apply,
  inNamespace,
  kc,
  kjson,
  KUBECONFIG,
  requireMesh,
  waitForReadyPods,
  WEFT_IMAGE,
} from "./lib/kube.ts";
import { waitForMetric } from "./lib/mesh.ts";
import { sleep, waitFor } from "./lib/wait.ts";
import {
  appManifest,
  CONTROL_PORT,
  fetchFrom,
  identityOf,
  startSession,
  stopSession,
} from "./lib/workloads.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const CLI = new URL("../../cli/main.ts", import.meta.url).pathname;

interface TapRun {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** `weft tap ARGS` as a user runs it, killed after `timeoutMs` (a tap that does not end fails the test). */
async function weftTap(args: string[], timeoutMs = 90_000): Promise<TapRun> {
  const t0 = Date.now();
  const r = await exec(Deno.execPath(), ["run", "-A", CLI, "tap", ...args], {
    env: { KUBECONFIG },
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { ...r, ms: Date.now() - t0 };
}

// deno-lint-ignore no-explicit-any
type Ev = any;
const events = (stdout: string): Ev[] => stdout.trim().split("\n").filter((l) => l).map((l) => JSON.parse(l));

/** Each request shown is complete: its req, rsp and end lines, in that order. */
function assertComplete(evs: Ev[]): Ev[] {
  const reqs = evs.filter((e) => e.http.kind === "request");
  for (const r of reqs) {
    const kinds = evs.filter((e) => e.pod === r.pod && e.http.id === r.http.id).map((e) => e.http.kind);
    assert.deepEqual(kinds, ["request", "response", "end"], `request ${r.pod} ${r.http.id}`);
  }
  return reqs;
}

/** A Job (meshed, ServiceAccount `sa`) that calls Tap.Observe on `target` in h2c, as a tap client would. */
function observeJob(name: string, sa: string, target: string): string {
  const code = `
import * as http2 from "node:http2";
const session = http2.connect("http://${target}");
session.on("error", (e) => { console.log("session error:", e.message); Deno.exit(3); });
const req = session.request({ ":method": "POST", ":path": "/io.linkerd.proxy.tap.Tap/Observe",
  "content-type": "application/grpc", te: "trailers" });
let status = "none", message = "";
const take = (h) => { if (h["grpc-status"] !== undefined) { status = h["grpc-status"]; message = decodeURIComponent(h["grpc-message"] ?? ""); } };
req.on("response", take);
req.on("trailers", take);
let events = 0;
req.on("data", () => events++);
const done = () => { console.log(JSON.stringify({ grpcStatus: status, message, events })); session.destroy(); Deno.exit(0); };
req.on("close", done);
req.on("error", (e) => { console.log("stream error:", e.message); done(); });
setTimeout(done, 20000);
// ObserveRequest{limit: 1, match: {}}: a valid request, so only the identity check can refuse it.
req.end(new Uint8Array([0, 0, 0, 0, 4, 8, 1, 18, 0]));
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
          activeDeadlineSeconds: 120,
          template: {
            metadata: { labels: { job: name } },
            spec: {
              serviceAccountName: sa,
              restartPolicy: "Never",
              containers: [{
                name: "observe",
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

Deno.test({
  name:
    "e2e: weft tap shows live requests with both identities and status codes, ends at --limit; others are refused",
  ...opts,
  fn: async (t) => {
    await requireMesh();
    await waitForReadyPods("weft", "linkerd.io/control-plane-component=tap", 1);
    await inNamespace("e2e-tap", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "server", serviceAccount: "server-sa", service: true }));
      await apply(ns, appManifest({ name: "client", serviceAccount: "client-sa" }));
      const [server] = await waitForReadyPods(ns, "app=server", 1);
      const [client] = await waitForReadyPods(ns, "app=client", 1);
      const clientId = identityOf("client-sa", ns);
      const serverId = identityOf("server-sa", ns);
      const serverIp = server.status.podIP;
      await startSession(client.status.podIP, `server.${ns}.svc.cluster.local:80`, 100);
      try {
        await t.step(
          "tap deploy/server: inbound requests with the client's identity, 200, ends at --limit 5",
          async () => {
            // The kubelet's readiness probes (plaintext, to the control port) are requests too: --authority
            // keeps the client's.
            const authority = `server.${ns}.svc.cluster.local:80`;
            const r = await weftTap([
              "deploy/server",
              "-n",
              ns,
              "--authority",
              authority,
              "--limit",
              "5",
              "-o",
              "json",
            ]);
            assert.equal(r.code, 0, r.stderr);
            const reqs = assertComplete(events(r.stdout));
            assert.equal(reqs.length, 5, r.stdout);
            for (const e of events(r.stdout)) {
              assert.equal(e.direction, "inbound");
              assert.equal(e.pod, `${ns}/${server.metadata.name}`);
              assert.equal(e.sourceLabels.tls, "true");
              assert.equal(e.sourceLabels.client_id, clientId);
              if (e.http.kind === "request") assert.equal(e.http.authority, authority);
              if (e.http.kind === "response") assert.equal(e.http.status, 200);
            }
            assert.match(r.stderr, /tap limit of 5 request\(s\) reached/);
            console.log(`tap deploy/server --limit 5: ${r.ms} ms from start to exit`);
          },
        );

        await t.step(
          "tap deploy/client -o wide: outbound lines as Linkerd prints them, with the server's identity",
          async () => {
            // --to keeps the client's requests to the server (the kubelet probes the client's proxy too).
            const r = await weftTap([
              "deploy/client",
              "-n",
              ns,
              "--to",
              "deploy/server",
              "--limit",
              "3",
              "-o",
              "wide",
            ]);
            assert.equal(r.code, 0, r.stderr);
            const lines = r.stdout.trim().split("\n");
            assert.equal(lines.length, 9, r.stdout);
            console.log(`tap deploy/client -o wide, first request:\n${lines.slice(0, 3).join("\n")}`);
            // weft's outbound events carry no client port: the pod's address is shown.
            const src = `${client.status.podIP.replaceAll(".", "\\.")}(:\\d+)?`;
            for (const l of lines) {
              assert.match(
                l,
                new RegExp(
                  `^(req|rsp|end) id=\\d+:\\d+ proxy=out src=${src} dst=${serverIp}:8080 tls=true `,
                ),
              );
              assert.ok(l.includes(`server_id=${serverId}`), l);
              assert.ok(l.includes(`src_res=po/${client.metadata.name} src_ns=${ns}`), l);
            }
            assert.equal(
              lines.filter((l) => l.startsWith("req ") && l.includes(":method=GET") && l.includes(":path=/"))
                .length,
              3,
            );
            assert.equal(
              lines.filter((l) => l.startsWith("rsp ") && l.includes(":status=200 latency=")).length,
              3,
            );
            assert.equal(
              lines.filter((l) => /^end .* duration=\d+µs response-length=\d+B/.test(l)).length,
              3,
            );
          },
        );

        await t.step("--path selects requests; a pod dialled by IP answers 404 over mTLS", async () => {
          let finished = false;
          const tap = weftTap(["deploy/server", "-n", ns, "--path", "/nope", "--limit", "3", "-o", "json"])
            .finally(() => finished = true);
          // The CLI takes a moment to start and open the pods' taps: requests go until the tap has seen 3.
          const statuses: (number | undefined)[] = [];
          for (let i = 0; i < 60 && !finished; i++) {
            const [a] = await fetchFrom(client.status.podIP, `${serverIp}:${CONTROL_PORT}`, 1, 3000, 0, {
              path: "/nope",
            });
            statuses.push(a.status);
            await sleep(500);
          }
          assert.ok(statuses.every((s) => s === 404), JSON.stringify(statuses));
          const r = await tap;
          assert.equal(r.code, 0, r.stderr);
          const evs = events(r.stdout);
          assert.equal(assertComplete(evs).length, 3);
          for (const e of evs) {
            assert.equal(e.sourceLabels.client_id, clientId, "the pod-IP request was mTLS");
            if (e.http.kind === "request") assert.equal(e.http.path, "/nope");
            if (e.http.kind === "response") assert.equal(e.http.status, 404);
          }
        });

        await t.step(
          "without --limit the tap runs until Ctrl-C, which ends it in the component too",
          async () => {
            const authority = `server.${ns}.svc.cluster.local:80`;
            const child = new Deno.Command(Deno.execPath(), {
              args: [
                "run",
                "-A",
                CLI,
                "tap",
                "deploy/server",
                "-n",
                ns,
                "--authority",
                authority,
                "-o",
                "json",
              ],
              env: { KUBECONFIG },
              stdout: "piped",
              stderr: "piped",
            }).spawn();
            const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
            let seen = "";
            const deadline = Date.now() + 60_000;
            while ((seen.match(/"kind":"end"/g) ?? []).length < 20 && Date.now() < deadline) {
              const { value, done } = await reader.read();
              if (done) break;
              seen += value;
            }
            const logOf = () => kc(["-n", "weft", "logs", "deploy/weft-tap", "-c", "tap", "--since=5m"]);
            const started = new RegExp(`tap #(\\d+) of deployment ${ns}/server started`, "g");
            const mine = [...(await logOf()).matchAll(started)].at(-1)?.[1];
            assert.ok(mine, "the component logged the tap's start");
            const t0 = Date.now();
            child.kill("SIGINT");
            const status = await child.status;
            const stopMs = Date.now() - t0;
            await reader.cancel().catch(() => {});
            const stderr = await new Response(child.stderr).text();
            assert.ok(
              (seen.match(/"kind":"end"/g) ?? []).length >= 20,
              `20 requests before Ctrl-C: ${stderr}`,
            );
            assert.equal(status.code, 0, stderr);
            assert.ok(stopMs < 5000, `exit ${stopMs} ms after SIGINT`);
            console.log(`tap without --limit: exit ${stopMs} ms after SIGINT`);
            // The component ends the tap (and cancels the pods' streams) once it sees the reader gone.
            await waitFor(
              `the component to end tap #${mine}`,
              async () => (await logOf()).includes(`tap #${mine} of deployment ${ns}/server ended`),
              { timeoutMs: 20_000 },
            );
            console.log(`tap without --limit: ended in the component ${Date.now() - t0} ms after SIGINT`);
          },
        );

        await t.step("a resource without pods is a clear error", async () => {
          const r = await weftTap(["deploy/nope", "-n", ns, "--limit", "1"]);
          assert.equal(r.code, 1);
          assert.match(r.stderr, new RegExp(`no pods found for deployment ${ns}/nope`));
        });

        await t.step(
          "a meshed pod calling the tap API directly (not through the API server) is refused",
          async () => {
            const [a] = await fetchFrom(
              client.status.podIP,
              "weft-tap.weft.svc.cluster.local:8089",
              1,
              5000,
              0,
              {
                method: "POST",
                path: "/apis/tap",
              },
            );
            assert.equal(a.status, 403, JSON.stringify(a));
          },
        );

        await t.step("a meshed pod with another identity calling the tap port is refused", async () => {
          await apply(ns, observeJob("intruder", "intruder-sa", `${serverIp}:4190`));
          await waitFor("the intruder Job to finish", async () => {
            const j = await kjson(["-n", ns, "get", "job", "intruder", "-o", "json"]);
            return (j.status?.succeeded ?? 0) + (j.status?.failed ?? 0) > 0;
          }, { timeoutMs: 120_000 });
          const out = await kc(["-n", ns, "logs", "job/intruder", "-c", "observe"]);
          const result = JSON.parse(out.trim().split("\n").at(-1)!);
          assert.equal(result.grpcStatus, "7", out);
          assert.equal(result.events, 0, "no event reached the intruder");
          assert.ok(result.message.includes(identityOf("intruder-sa", ns)), result.message);
          await waitForMetric(serverIp, "tap_refused_connections_total", { reason: "unauthorized" }, 1);
        });
      } finally {
        await stopSession(client.status.podIP).catch(() => {});
      }
    });
  },
});
