// Cluster e2e (issue 23): two real clusters on this machine, "west" (the local cluster) and "east"
// (`cluster:up --name=east`, started when absent), meshed with one trust anchor and issuer and linked with
// `weft multicluster install|link|unlink`. A client in west calls a Service in east through east's gateway, straight
// to east's pods (flat), and through a federated Service whose members live in both clusters; east's policy decides
// by the west caller's identity; the gateway dies and comes back; unlink removes the mirrors. Prints the figures the
// issue asks for: each mode's latency against an in-cluster call (same run), link set-up time, memory of the
// service mirror and of the gateway.
import assert from "node:assert/strict";
import { ClusterCtl } from "./lib/clusters.ts";
import { containerMemoryMiB, denoRun, EAST_KUBECONFIG, eastUnavailable, ensureEast } from "./lib/east.ts";
import { type Json, KUBECONFIG, requireMesh } from "./lib/kube.ts";
import { type Answer, appManifest, fetchFrom, identityOf, PROXY_ADMIN_PORT } from "./lib/workloads.ts";
import { scrape, sum } from "./lib/prom.ts";
import { sleep, waitFor } from "./lib/wait.ts";

const unavailable = await eastUnavailable().catch((e) => `${e}`);
if (unavailable) console.log(`multicluster tests ignored: ${unavailable}`);

const NS = "mc-e2e";
const LINK = "east";
const GATEWAY_ID = "weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local";
const DOMAIN = "svc.cluster.local";
const MIRROR_SELECTOR = `component=service-mirror,mirror.linkerd.io/cluster-name=${LINK}`;
const svc = (name: string) => `${name}.${NS}.${DOMAIN}:80`;

function stats(answers: Answer[]): { ok: number; failed: number; p50: number; p99: number } {
  const ms = answers.filter((a) => a.ok).map((a) => a.ms).sort((a, b) => a - b);
  const at = (q: number) => ms.length ? ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] : NaN;
  return { ok: ms.length, failed: answers.length - ms.length, p50: at(0.5), p99: at(0.99) };
}

const fmt = (n: number) => n.toFixed(1);

function mustAllOk(what: string, answers: Answer[]): void {
  const bad = answers.filter((a) => !a.ok || a.status !== 200);
  assert.equal(
    bad.length,
    0,
    `${what}: ${bad.length}/${answers.length} failed, e.g. ${JSON.stringify(bad.slice(0, 3))}`,
  );
}

async function memoryMiB(ip: string, port: number): Promise<number> {
  return sum(await scrape(ip, port), "process_resident_memory_bytes") / 2 ** 20;
}

Deno.test({
  name: "e2e: multicluster gateway, flat and federated between two clusters, identities end to end",
  ignore: unavailable !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    await requireMesh();
    const log = (s: string) => console.log(`  ${s}`);
    const west = new ClusterCtl("west", KUBECONFIG);
    const east = new ClusterCtl("east", EAST_KUBECONFIG);
    const setup = await ensureEast(log);
    log(`east up ${fmt(setup.upMs / 1000)} s, east meshed ${fmt(setup.deployMs / 1000)} s`);

    const weft = (args: string[], what: string) =>
      denoRun(["cli/main.ts", "multicluster", ...args], what, 600_000);
    await weft(["install", `--kubeconfig=${EAST_KUBECONFIG}`], "multicluster install (east)");
    await weft(["install", `--kubeconfig=${KUBECONFIG}`, "--gateway=false"], "multicluster install (west)");

    for (const c of [west, east]) {
      await c.run(["delete", "namespace", NS, "--wait=true"], { timeoutMs: 120_000 });
      await c.namespace(NS, true);
    }
    try {
      // east: three exported Services, one per mode, and a federated member; west: the callers, an in-cluster
      // server for the baseline and its own federated member.
      const exported = (name: string, label: Record<string, string>) => {
        const list = JSON.parse(appManifest({ name, service: true }));
        for (const item of list.items) {
          if (item.kind === "Service") item.metadata.labels = label;
        }
        return JSON.stringify(list);
      };
      await east.apply(NS, exported("target", { "mirror.linkerd.io/exported": "true" }));
      await east.apply(NS, exported("flat", { "mirror.linkerd.io/exported": "remote-discovery" }));
      await east.apply(NS, exported("fed", { "mirror.linkerd.io/federated": "member" }));
      await west.apply(NS, exported("fed", { "mirror.linkerd.io/federated": "member" }));
      await west.apply(NS, appManifest({ name: "client" }));
      await west.apply(NS, appManifest({ name: "intruder" }));
      await west.apply(NS, appManifest({ name: "local", service: true }));

      const linkStart = Date.now();
      const linkOut = await weft(
        [
          "link",
          `--cluster-name=${LINK}`,
          `--target-kubeconfig=${EAST_KUBECONFIG}`,
          `--kubeconfig=${KUBECONFIG}`,
        ],
        "multicluster link",
      );
      const linkMs = Date.now() - linkStart;
      log(
        `link set-up: ${fmt(linkMs / 1000)} s\n${
          linkOut.trim().split("\n").map((l) => `    ${l}`).join("\n")
        }`,
      );

      const [client] = await west.readyPods(NS, "app=client");
      const [intruder] = await west.readyPods(NS, "app=intruder");
      await west.readyPods(NS, "app=local");
      await west.readyPods(NS, "app=fed");
      const [target] = await east.readyPods(NS, "app=target");
      const [flat] = await east.readyPods(NS, "app=flat");
      const [eastFed] = await east.readyPods(NS, "app=fed");
      const clientId = identityOf("client", NS);

      await t.step("the link mirrors east's exported Services into west", async () => {
        await waitFor("mirrors target-east, flat-east and fed-federated in west", async () => {
          const r = await west.run(["-n", NS, "get", "service", "target-east", "flat-east", "fed-federated"]);
          return r.code === 0;
        }, { timeoutMs: 90_000 });
        const fed = await west.json(["-n", NS, "get", "service", "fed-federated"]);
        assert.equal(fed.metadata.annotations["multicluster.linkerd.io/remote-discovery"], `fed@${LINK}`);
        assert.equal(fed.metadata.annotations["multicluster.linkerd.io/local-discovery"], "fed");
        const flatMirror = await west.json(["-n", NS, "get", "service", "flat-east"]);
        assert.equal(flatMirror.metadata.labels["multicluster.linkerd.io/remote-discovery"], LINK);
        const ep = await west.json(["-n", NS, "get", "endpoints", "target-east"]);
        assert.equal(ep.metadata.annotations["mirror.linkerd.io/remote-gateway-identity"], GATEWAY_ID);
        await weft(["check", `--kubeconfig=${KUBECONFIG}`], "multicluster check");
      });

      await t.step(
        "gateway: west's client reaches east's target with its own identity end to end",
        async () => {
          let answers: Answer[] = [];
          await waitFor("a first answer through the gateway", async () => {
            answers = await fetchFrom(client.status.podIP, svc("target-east"), 1, 3000);
            return answers[0]?.status === 200;
          }, { timeoutMs: 90_000, describe: () => JSON.stringify(answers) });
          const burst = await fetchFrom(client.status.podIP, svc("target-east"), 20, 5000);
          mustAllOk("gateway calls", burst);
          assert.ok(
            burst.every((a) => a.pod === target.metadata.name),
            "answers come from east's target pod",
          );
          const m = await scrape(target.status.podIP, PROXY_ADMIN_PORT);
          const seen = sum(m, "request_total", { direction: "inbound", tls: "true", client_id: clientId });
          assert.ok(seen >= 20, `east's target saw ${seen} mTLS requests as ${clientId}`);
          const forwarded = sum(m, "inbound_forwarded_identity_total", {
            gateway_id: GATEWAY_ID,
            client_id: clientId,
          });
          assert.ok(forwarded >= 1, `east's target counted no forwarded identity from the gateway`);
        },
      );

      await t.step("east's policy allows the west client and refuses the west intruder", async () => {
        await east.apply(
          NS,
          JSON.stringify({
            apiVersion: "v1",
            kind: "List",
            items: [
              {
                apiVersion: "policy.linkerd.io/v1beta3",
                kind: "Server",
                metadata: { name: "target-http" },
                spec: {
                  podSelector: { matchLabels: { app: "target" } },
                  port: 8080,
                  proxyProtocol: "HTTP/1",
                },
              },
              {
                apiVersion: "policy.linkerd.io/v1alpha1",
                kind: "MeshTLSAuthentication",
                metadata: { name: "west-client" },
                spec: { identities: [clientId] },
              },
              {
                apiVersion: "policy.linkerd.io/v1alpha1",
                kind: "AuthorizationPolicy",
                metadata: { name: "target-from-west-client" },
                spec: {
                  targetRef: { group: "policy.linkerd.io", kind: "Server", name: "target-http" },
                  requiredAuthenticationRefs: [
                    { group: "policy.linkerd.io", kind: "MeshTLSAuthentication", name: "west-client" },
                  ],
                },
              },
            ],
          }),
        );
        let refused: Answer[] = [];
        await waitFor("the intruder refused by east's policy", async () => {
          refused = await fetchFrom(intruder.status.podIP, svc("target-east"), 1, 3000);
          return refused[0]?.status === 403;
        }, { timeoutMs: 60_000, describe: () => JSON.stringify(refused) });
        mustAllOk("allowed west client", await fetchFrom(client.status.podIP, svc("target-east"), 10, 5000));
      });

      await t.step("east's gateway admits only the west identities it is told to", async () => {
        await weft(
          ["install", `--kubeconfig=${EAST_KUBECONFIG}`, `--gateway-allowed-identities=${clientId}`],
          "multicluster install (east, gateway for the west client only)",
        );
        const [gw] = await east.readyPods("weft-multicluster", "app=weft-gateway");
        const refusedAtGateway = async () =>
          sum(await scrape(gw.status.podIP, PROXY_ADMIN_PORT), "inbound_gateway_errors_total", {
            error: "unauthorized",
          });
        const before = await refusedAtGateway();
        let last: Answer[] = [];
        await waitFor("the gateway refusing the intruder", async () => {
          last = await fetchFrom(intruder.status.podIP, svc("target-east"), 1, 3000);
          return last[0]?.status !== 200 && (await refusedAtGateway()) > before;
        }, { timeoutMs: 60_000, describe: () => JSON.stringify(last) });
        const denied = await fetchFrom(intruder.status.podIP, svc("target-east"), 5, 3000);
        assert.ok(
          denied.every((a) => a.status !== 200),
          `the intruder got through: ${JSON.stringify(denied)}`,
        );
        mustAllOk(
          "the west client through the restricted gateway",
          await fetchFrom(client.status.podIP, svc("target-east"), 10, 5000),
        );
        await weft(
          ["install", `--kubeconfig=${EAST_KUBECONFIG}`],
          "multicluster install (east, default gateway policy)",
        );
      });

      await t.step("flat: west's client reaches east's pod directly over mTLS", async () => {
        let answers: Answer[] = [];
        await waitFor("a first flat answer", async () => {
          answers = await fetchFrom(client.status.podIP, svc("flat-east"), 1, 3000);
          return answers[0]?.status === 200;
        }, { timeoutMs: 60_000, describe: () => JSON.stringify(answers) });
        const burst = await fetchFrom(client.status.podIP, svc("flat-east"), 20, 5000);
        mustAllOk("flat calls", burst);
        const m = await scrape(flat.status.podIP, PROXY_ADMIN_PORT);
        const seen = sum(m, "request_total", { direction: "inbound", tls: "true", client_id: clientId });
        assert.ok(seen >= 20, `east's flat pod saw ${seen} mTLS requests as ${clientId}`);
        assert.equal(
          sum(m, "inbound_forwarded_identity_total"),
          0,
          "flat calls must not pass through the gateway",
        );
        const c = await scrape(client.status.podIP, PROXY_ADMIN_PORT);
        const flatId = identityOf("flat", NS);
        const direct = sum(c, "response_total", {
          direction: "outbound",
          tls: "true",
          server_id: flatId,
          target_ip: flat.status.podIP,
        });
        assert.ok(
          direct >= 20,
          `west's client saw ${direct} responses over mTLS from ${flatId} at its pod IP`,
        );
      });

      await t.step(
        "federated: one Service over both clusters, still serving when east's members go",
        async () => {
          let answers: Answer[] = [];
          await waitFor("answers from both clusters' fed pods", async () => {
            answers = await fetchFrom(client.status.podIP, svc("fed-federated"), 20, 5000);
            const pods = new Set(answers.filter((a) => a.ok).map((a) => a.pod));
            return pods.has(eastFed.metadata.name) && pods.size >= 2;
          }, {
            timeoutMs: 90_000,
            describe: () => JSON.stringify(answers.map((a) => a.pod ?? a.error)),
          });
          await east.kc(["-n", NS, "scale", "deployment", "fed", "--replicas=0"]);
          await waitFor("east's fed pod gone", async () => {
            const items = (await east.json(["-n", NS, "get", "pods", "-l", "app=fed"])).items as Json[];
            return items.length === 0;
          }, { timeoutMs: 60_000 });
          await sleep(2_000);
          const after = await fetchFrom(client.status.podIP, svc("fed-federated"), 20, 5000);
          mustAllOk("federated calls with east's members gone", after);
          assert.ok(after.every((a) => a.pod !== eastFed.metadata.name));
        },
      );

      await t.step("figures: latency of each mode against an in-cluster call", async () => {
        await east.kc(["-n", NS, "scale", "deployment", "fed", "--replicas=1"]);
        await east.readyPods(NS, "app=fed");
        // Rounds in rotating order, so drift on this shared machine falls on every mode alike.
        const modes: [string, string][] = [
          ["in-cluster (west)", svc("local")],
          ["gateway", svc("target-east")],
          ["flat", svc("flat-east")],
          ["federated", svc("fed-federated")],
        ];
        const rounds = 5, n = 40;
        const p50s = new Map<string, number[]>(modes.map(([m]) => [m, []]));
        const p99s = new Map<string, number[]>(modes.map(([m]) => [m, []]));
        for (let r = 0; r < rounds; r++) {
          for (let i = 0; i < modes.length; i++) {
            const [mode, target] = modes[(i + r) % modes.length];
            const s = stats(await fetchFrom(client.status.podIP, target, n, 5000));
            assert.equal(s.failed, 0, `${mode}: ${s.failed} of ${n} failed`);
            p50s.get(mode)!.push(s.p50);
            p99s.get(mode)!.push(s.p99);
          }
        }
        const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
        const base = med(p50s.get(modes[0][0])!);
        const rows = modes.map(([mode]) => {
          const a = p50s.get(mode)!, b = p99s.get(mode)!;
          return `    ${mode.padEnd(18)} p50 ${fmt(med(a))} ms (${fmt(Math.min(...a))}–${
            fmt(Math.max(...a))
          })  p99 ${fmt(med(b))} ms (${fmt(Math.min(...b))}–${fmt(Math.max(...b))})  p50 ×${
            (med(a) / base).toFixed(2)
          }, +${fmt(med(a) - base)} ms`;
        });
        log(
          `latency from west's client, ${rounds} rounds × ${n} requests per mode, a new app connection per ` +
            `request (median of rounds, range):\n${rows.join("\n")}`,
        );
        const [gw] = await east.readyPods("weft-multicluster", "app=weft-gateway");
        const [mirror] = await west.readyPods("weft-multicluster", MIRROR_SELECTOR);
        log(
          `memory (working set): gateway proxy ${
            fmt(await containerMemoryMiB("east", gw.metadata.name, "linkerd-proxy"))
          } MiB (RSS ${
            fmt(await memoryMiB(gw.status.podIP, PROXY_ADMIN_PORT))
          } MiB), gateway idle container ${
            fmt(await containerMemoryMiB("east", gw.metadata.name, "idle").catch(() => NaN))
          } MiB, service mirror ${
            fmt(await containerMemoryMiB("west", mirror.metadata.name, "service-mirror"))
          } MiB, its proxy ${
            fmt(await containerMemoryMiB("west", mirror.metadata.name, "linkerd-proxy"))
          } MiB`,
        );
      });

      await t.step("the gateway dies: bounded, counted failures; recovery when it returns", async () => {
        await east.kc(["-n", "weft-multicluster", "scale", "deployment", "weft-gateway", "--replicas=0"]);
        await waitFor("the gateway pod gone", async () => {
          const items =
            (await east.json(["-n", "weft-multicluster", "get", "pods", "-l", "app=weft-gateway"]))
              .items as Json[];
          return items.length === 0;
        }, { timeoutMs: 60_000 });
        const errorsBefore = sum(
          await scrape(client.status.podIP, PROXY_ADMIN_PORT),
          "outbound_http_errors_total",
        );
        const down = await fetchFrom(client.status.podIP, svc("target-east"), 10, 5000);
        const failedAnswers = down.filter((a) => a.status !== 200);
        const failed = failedAnswers.length;
        assert.ok(failed >= 1, "calls through a dead gateway cannot all succeed");
        // Bounded: each failure is an answer from the client's proxy, not a hang to the caller's timeout.
        for (const a of failedAnswers) {
          assert.ok(a.status !== undefined && a.status >= 500, `a failed call got ${JSON.stringify(a)}`);
          assert.ok(a.ms < 5000, `a failed call took ${a.ms} ms`);
        }
        const errorsAfter = sum(
          await scrape(client.status.podIP, PROXY_ADMIN_PORT),
          "outbound_http_errors_total",
        );
        assert.ok(
          errorsAfter - errorsBefore >= failed,
          `west's client proxy counted ${
            errorsAfter - errorsBefore
          } outbound errors for ${failed} failed calls`,
        );
        const failMs = failedAnswers.map((a) => a.ms).sort((a, b) => a - b);
        const [mirror] = await west.readyPods("weft-multicluster", MIRROR_SELECTOR);
        await waitFor("gateway_alive 0 on the service mirror", async () => {
          const m = await scrape(mirror.status.podIP, 9999);
          return sum(m, "gateway_alive", { target_cluster_name: LINK }) === 0 &&
            sum(m, "gateway_probe_failures_total") >= 1;
        }, { timeoutMs: 60_000 });
        const backAt = Date.now();
        await east.kc(["-n", "weft-multicluster", "scale", "deployment", "weft-gateway", "--replicas=1"]);
        let answers: Answer[] = [];
        await waitFor("calls through the gateway again", async () => {
          answers = await fetchFrom(client.status.podIP, svc("target-east"), 1, 3000);
          return answers[0]?.status === 200;
        }, { timeoutMs: 120_000, describe: () => JSON.stringify(answers) });
        log(
          `gateway down: ${failed}/10 calls failed (status ${
            [...new Set(failedAnswers.map((a) => a.status))].join(",")
          }, ${fmt(failMs[0])}–${fmt(failMs[failMs.length - 1])} ms each); recovered ${
            fmt((Date.now() - backAt) / 1000)
          } s after scale-up`,
        );
        mustAllOk("after recovery", await fetchFrom(client.status.podIP, svc("target-east"), 10, 5000));
      });

      await t.step("unlink removes the mirrors", async () => {
        await weft(["unlink", `--cluster-name=${LINK}`, `--kubeconfig=${KUBECONFIG}`], "multicluster unlink");
        const left = await west.run(["-n", NS, "get", "service", "target-east", "flat-east"]);
        assert.notEqual(left.code, 0, "the mirrors are gone");
        const mirrored = (await west.json([
          "get",
          "services",
          "-A",
          "-l",
          `mirror.linkerd.io/cluster-name=${LINK}`,
        ])).items as Json[];
        assert.equal(mirrored.length, 0, `mirrors left: ${mirrored.map((s) => s.metadata.name).join(", ")}`);
      });
    } finally {
      await west.run(["delete", "namespace", NS, "--wait=false"]);
      await east.run(["delete", "namespace", NS, "--wait=false"]);
      await denoRun([
        "cli/main.ts",
        "multicluster",
        "unlink",
        `--cluster-name=${LINK}`,
        `--kubeconfig=${KUBECONFIG}`,
      ], "unlink")
        .catch(() => {});
    }
  },
});
