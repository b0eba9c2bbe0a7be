// Cluster e2e (issue 24, mesh expansion): a Service whose selector matches an ExternalWorkload's labels has the
// workload's address among its endpoints as the deployed destination controller serves them (Destination.Get
// from the host to the destination pod, whose proxy admits unauthenticated clients), with the workload's mesh
// identity; the address leaves when the workload stops being ready. Both served versions are created. No
// traffic is sent to the workload addresses (TEST-NET-1, 192.0.2.0/24).
import assert from "node:assert/strict";
import { Ports } from "../../proto/ports.ts";
import { fromTcpAddress } from "../../proto/ip.ts";
import { dialDestination } from "../../control/destination/testing.ts";
import { dialInboundPolicy } from "../../control/policy/test_server.ts";
import { apply, CONTROL_PLANE_NS, inNamespace, type Json, kc, kjson, requireMesh } from "./lib/kube.ts";
import { waitFor } from "./lib/wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

type Update = Awaited<ReturnType<ReturnType<ReturnType<typeof dialDestination>["get"]>["next"]>>;

interface Seen {
  ip: string;
  identity: string | undefined;
  serverName: string | undefined;
}

function service(ns: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "legacy", namespace: ns },
    spec: { selector: { app: "legacy" }, ports: [{ name: "http", port: 80, targetPort: "http" }] },
  });
}

function workload(ns: string, version: "v1alpha1" | "v1beta1", name: string, ip: string): string {
  const tls = {
    identity: `spiffe://root.linkerd.cluster.local/${name}`,
    serverName: `${name}.${ns}.cluster.local`,
  };
  return JSON.stringify({
    apiVersion: `workload.linkerd.io/${version}`,
    kind: "ExternalWorkload",
    metadata: { name, namespace: ns, labels: { app: "legacy" } },
    spec: {
      [version === "v1alpha1" ? "meshTls" : "meshTLS"]: tls,
      ports: [{ name: "http", port: 8080 }],
      workloadIPs: [{ ip }],
    },
  });
}

async function setReady(ns: string, name: string, ready: boolean): Promise<void> {
  const status = { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] };
  // v1beta1 (the storage version) has a status subresource, so status is written there.
  await kc([
    "-n",
    ns,
    "patch",
    "externalworkloads.v1beta1.workload.linkerd.io",
    name,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({ status }),
  ]);
}

async function destinationAddress(port: number = Ports.destination): Promise<string> {
  const list: Json[] = (await kjson([
    "-n",
    CONTROL_PLANE_NS,
    "get",
    "pods",
    "-l",
    "linkerd.io/control-plane-component=destination",
  ])).items;
  const ready = list.find((p) =>
    p.status?.podIP &&
    (p.status?.conditions ?? []).some((c: Json) => c.type === "Ready" && c.status === "True")
  );
  assert.ok(ready, "no ready destination pod");
  return `${ready.status.podIP}:${port}`;
}

Deno.test({
  name: "e2e: an ExternalWorkload selected by a Service is among the endpoints Destination.Get serves",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-ew", {}, async (ns) => {
      await apply(ns, service(ns));
      await apply(ns, workload(ns, "v1beta1", "vm-beta", "192.0.2.21"));
      await apply(ns, workload(ns, "v1alpha1", "vm-alpha", "192.0.2.22"));
      await setReady(ns, "vm-beta", true);
      await setReady(ns, "vm-alpha", true);

      const dst = dialDestination(await destinationAddress());
      const current = new Map<string, Seen>();
      const messages: string[] = [];
      const record = (u: Update): void => {
        const up = u.update;
        messages.push(up?.$case ?? "empty");
        if (up?.$case === "add") {
          for (const a of up.value.addrs) {
            const id = a.tlsIdentity;
            current.set(fromTcpAddress(a.addr!), {
              ip: fromTcpAddress(a.addr!),
              identity: id?.strategy?.$case === "uriLikeIdentity" ? id.strategy.value.uri : undefined,
              serverName: id?.serverName?.name,
            });
          }
        } else if (up?.$case === "remove") {
          for (const a of up.value.addrs) current.delete(fromTcpAddress(a));
        }
      };
      try {
        // The Service reaches the controller's informer shortly after it is created: retry NotFound.
        let stream: ReturnType<typeof dst.get> | undefined;
        await waitFor("Destination.Get to accept the Service", async () => {
          const s = dst.get(`legacy.${ns}.svc.cluster.local:80`);
          try {
            const first = await s.next(5_000);
            stream = s;
            record(first);
            return true;
          } catch {
            s.cancel();
            return false;
          }
        }, { timeoutMs: 60_000, intervalMs: 1000 });
        const pump = (async () => {
          for (;;) {
            try {
              record(await stream!.next(120_000));
            } catch {
              return;
            }
          }
        })();

        await waitFor(
          "both workloads' addresses in the Service's endpoints",
          () => Promise.resolve(current.has("192.0.2.21:8080") && current.has("192.0.2.22:8080")),
          { timeoutMs: 30_000 },
        );
        assert.deepEqual(current.get("192.0.2.21:8080"), {
          ip: "192.0.2.21:8080",
          identity: "spiffe://root.linkerd.cluster.local/vm-beta",
          serverName: `vm-beta.${ns}.cluster.local`,
        });
        // Written as v1alpha1 (`meshTls`), stored as v1beta1: weft's CRD keeps the field (Linkerd's drops it).
        assert.deepEqual(current.get("192.0.2.22:8080"), {
          ip: "192.0.2.22:8080",
          identity: "spiffe://root.linkerd.cluster.local/vm-alpha",
          serverName: `vm-alpha.${ns}.cluster.local`,
        });

        await setReady(ns, "vm-beta", false);
        await waitFor(
          "the unready workload's address to be removed",
          () => Promise.resolve(!current.has("192.0.2.21:8080")),
          { timeoutMs: 30_000 },
        );
        assert.ok(current.has("192.0.2.22:8080"), "the other workload stays");
        stream!.cancel();
        await pump;
      } catch (e) {
        console.error(`messages seen: ${JSON.stringify(messages)}`);
        throw e;
      } finally {
        dst.close();
      }
    });
  },
});

Deno.test({
  name: "e2e: the deployed policy controller serves an ExternalWorkload's inbound policy from its Servers",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-ew-policy", {}, async (ns) => {
      await apply(ns, workload(ns, "v1beta1", "vm-beta", "192.0.2.21"));
      await apply(
        ns,
        JSON.stringify({
          apiVersion: "policy.linkerd.io/v1beta3",
          kind: "Server",
          metadata: { name: "vm-http", namespace: ns },
          spec: {
            externalWorkloadSelector: { matchLabels: { app: "legacy" } },
            port: "http",
            proxyProtocol: "HTTP/1",
          },
        }),
      );
      const client = dialInboundPolicy(await destinationAddress(Ports.policy));
      try {
        const workload = JSON.stringify({ ns, external_workload: "vm-beta" });
        const get = () =>
          new Promise<{ name: string; protocol: string | undefined }>((resolve, reject) =>
            client.getPort(
              { workload, port: 8080 },
              (err, res) =>
                err ? reject(err) : resolve({ name: res!.labels.name, protocol: res!.protocol?.kind?.$case }),
            )
          );
        // The workload and the Server reach the controller's informers shortly after they are created.
        let last: unknown;
        await waitFor("the Server's policy for the workload's port", async () => {
          try {
            last = await get();
            return (last as { name: string }).name === "vm-http";
          } catch (e) {
            last = e;
            return false;
          }
        }, { timeoutMs: 30_000, intervalMs: 500 });
        assert.deepEqual(last, { name: "vm-http", protocol: "http1" });
      } finally {
        client.close();
      }
    });
  },
});
