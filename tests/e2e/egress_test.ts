// Cluster e2e for the egress kinds (issue 24), against the deployed control plane: the CRDs are installed and
// served, the policy controller watches EgressNetworks and writes their status (Accepted, or not when a network
// overlaps the cluster networks), and the admission webhook admits EgressNetwork parents on routes, refusing a
// parent without a port with a message naming the field. The second test reads the route status the deployed
// policy controller writes on TLSRoutes/TCPRoutes with EgressNetwork and Service parents, and the outbound policy it
// sends for those Services (`weft diagnostics policy`). No traffic is sent: the networks
// used are a documentation range (203.0.113.0/24) and a cluster range; the data path is covered by
// tests/egress/egress_netns_test.ts.
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { exec } from "../lib/exec.ts";
import { apply, CONTROL_PLANE_NS, inNamespace, kjson, KUBECONFIG, kubectl, requireMesh } from "./lib/kube.ts";
import { waitFor, waitForValue } from "./lib/wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

const egressNet = (name: string, cidr: string) => ({
  apiVersion: "policy.linkerd.io/v1alpha1",
  kind: "EgressNetwork",
  metadata: { name },
  spec: { trafficPolicy: "Deny", networks: [{ cidr }] },
});
const parent = (ns: string, port?: number) => ({
  group: "policy.linkerd.io",
  kind: "EgressNetwork",
  name: "docs-net",
  namespace: ns,
  ...(port ? { port } : {}),
});

Deno.test({
  name: "e2e: EgressNetwork status and egress route admission against the deployed control plane",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-egress", {}, async (ns) => {
      await apply(ns, JSON.stringify(egressNet("docs-net", "203.0.113.0/24")));
      await apply(ns, JSON.stringify(egressNet("overlap-net", "10.250.0.0/24")));
      const accepted = (name: string) =>
        waitForValue(`status of EgressNetwork ${name}`, async () => {
          const en = await kjson(["-n", ns, "get", "egressnetwork", name]);
          return (en.status?.conditions ?? []).find((c: { type: string }) => c.type === "Accepted");
        }, { timeoutMs: 60_000 });
      const ok = await accepted("docs-net");
      assert.equal(ok.status, "True");
      assert.equal(ok.reason, "Accepted");
      const clash = await accepted("overlap-net");
      assert.equal(clash.status, "False");
      assert.equal(clash.reason, "EgressReasonNetworkOverlap");

      // A route of any kind with an EgressNetwork parent and no port is refused, naming the field.
      for (
        const [apiVersion, kind] of [["v1", "GRPCRoute"], ["v1alpha2", "TLSRoute"], ["v1alpha2", "TCPRoute"]]
      ) {
        const bad = await kubectl(["-n", ns, "apply", "--dry-run=server", "-f", "-"], {
          stdin: JSON.stringify({
            apiVersion: `gateway.networking.k8s.io/${apiVersion}`,
            kind,
            metadata: { name: "no-port" },
            spec: { parentRefs: [parent(ns)], rules: [{}] },
          }),
        });
        assert.notEqual(bad.code, 0, `an EgressNetwork parent of a ${kind} without a port must be refused`);
        assert.match(bad.stderr, /spec\.parentRefs\[0\]\.port/);
        assert.equal(bad.stderr.includes(kind), true);
      }

      // With a port, HTTP, TLS and TCP routes are admitted and stored.
      await apply(
        ns,
        JSON.stringify({
          apiVersion: "gateway.networking.k8s.io/v1",
          kind: "HTTPRoute",
          metadata: { name: "with-port" },
          spec: {
            parentRefs: [parent(ns, 80)],
            rules: [{
              backendRefs: [{ group: "policy.linkerd.io", kind: "EgressNetwork", name: "docs-net" }],
            }],
          },
        }),
      );
      await apply(
        ns,
        JSON.stringify({
          apiVersion: "gateway.networking.k8s.io/v1alpha2",
          kind: "TLSRoute",
          metadata: { name: "sni" },
          spec: { parentRefs: [parent(ns, 443)], hostnames: ["api.example.test"], rules: [{}] },
        }),
      );
      await apply(
        ns,
        JSON.stringify({
          apiVersion: "gateway.networking.k8s.io/v1alpha2",
          kind: "TCPRoute",
          metadata: { name: "tcp" },
          spec: { parentRefs: [parent(ns, 5432)], rules: [{}] },
        }),
      );
      const names = (kind: string) =>
        kjson(["-n", ns, "get", kind]).then((l) =>
          l.items.map((i: { metadata: { name: string } }) => i.metadata.name)
        );
      assert.deepEqual(await names("httproutes.gateway.networking.k8s.io"), ["with-port"]);
      assert.deepEqual(await names("tlsroutes.gateway.networking.k8s.io"), ["sni"]);
      assert.deepEqual(await names("tcproutes.gateway.networking.k8s.io"), ["tcp"]);
    });
  },
});

type Cond = { type: string; status: string; reason: string; message: string; lastTransitionTime?: string };
type Parent = { parentRef: Record<string, unknown>; controllerName: string; conditions: Cond[] };

const CONTROLLER = "linkerd.io/policy-controller";
const cond = (type: string, status: string, reason: string, message: string) => ({
  type,
  status,
  reason,
  message,
});
const ACCEPTED = cond("Accepted", "True", "Accepted", "Route was valid");
const RESOLVED = cond("ResolvedRefs", "True", "ResolvedRefs", "Resolved all references");

Deno.test({
  name:
    "e2e: route status on TLSRoutes and TCPRoutes with EgressNetwork and Service parents, as Linkerd writes it",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-egress-status", {}, async (ns) => {
      await apply(ns, JSON.stringify(egressNet("docs-net", "203.0.113.0/24")));
      await apply(ns, JSON.stringify(egressNet("overlap-net", "10.250.0.0/24")));
      for (const name of ["db", "db-primary"]) {
        await apply(
          ns,
          JSON.stringify({
            apiVersion: "v1",
            kind: "Service",
            metadata: { name },
            spec: { ports: [{ port: 5432 }] },
          }),
        );
      }
      const en = (name: string, port: number) => ({ ...parent(ns, port), name });
      const svcParent = { group: "core", kind: "Service", name: "db", port: 5432 };
      const route = (kind: string, name: string, spec: Record<string, unknown>) =>
        apply(
          ns,
          JSON.stringify({
            apiVersion: "gateway.networking.k8s.io/v1alpha2",
            kind,
            metadata: { name },
            spec,
          }),
        );
      await route("TLSRoute", "sni", {
        parentRefs: [en("docs-net", 443)],
        hostnames: ["api.example.test"],
        rules: [{ backendRefs: [{ group: "policy.linkerd.io", kind: "EgressNetwork", name: "docs-net" }] }],
      });
      await route("TCPRoute", "tcp", { parentRefs: [en("docs-net", 5432)], rules: [{}] });
      // Same parent and port as the TLSRoute: the TLSRoute outranks it (GEP-1426), as the egress policy does.
      await route("TCPRoute", "tcp-443", { parentRefs: [en("docs-net", 443)], rules: [{}] });
      await route("TCPRoute", "tcp-overlap", { parentRefs: [en("overlap-net", 5432)], rules: [{}] });
      await route("TLSRoute", "svc-tls", {
        parentRefs: [svcParent],
        rules: [{ backendRefs: [{ name: "db-primary", port: 5432 }] }],
      });
      // Same Service parent and port as svc-tls, which outranks it.
      await route("TCPRoute", "svc-tcp", { parentRefs: [svcParent], rules: [{}] });
      await route("TCPRoute", "svc-tcp-alone", {
        parentRefs: [{ ...svcParent, name: "db-primary" }],
        rules: [{ backendRefs: [{ name: "gone", port: 5432 }] }],
      });

      const enRef = (name: string, port: number) => ({
        group: "policy.linkerd.io",
        kind: "EgressNetwork",
        namespace: ns,
        name,
        port,
      });
      const svcRef = { group: "core", kind: "Service", namespace: ns, name: "db", port: 5432 };
      const want: [string, string, Parent[]][] = [
        ["tlsroutes", "sni", [{
          parentRef: enRef("docs-net", 443),
          controllerName: CONTROLLER,
          conditions: [ACCEPTED, RESOLVED],
        }]],
        ["tcproutes", "tcp", [{
          parentRef: enRef("docs-net", 5432),
          controllerName: CONTROLLER,
          conditions: [ACCEPTED, RESOLVED],
        }]],
        ["tcproutes", "tcp-443", [{
          parentRef: enRef("docs-net", 443),
          controllerName: CONTROLLER,
          conditions: [
            cond(
              "Accepted",
              "False",
              "RouteReasonConflicted",
              "a GRPCRoute or HTTPRoute or TLSRoute with the same parent takes precedence over this TCPRoute",
            ),
            RESOLVED,
          ],
        }]],
        ["tcproutes", "tcp-overlap", [{
          parentRef: enRef("overlap-net", 5432),
          controllerName: CONTROLLER,
          conditions: [
            cond("Accepted", "False", "NoMatchingParent", "EgressNetwork parent has not been accepted"),
            RESOLVED,
          ],
        }]],
        ["tlsroutes", "svc-tls", [{
          parentRef: svcRef,
          controllerName: CONTROLLER,
          // As Linkerd: the Service's outbound policy routes by it (protocol tls).
          conditions: [ACCEPTED, RESOLVED],
        }]],
        ["tcproutes", "svc-tcp", [{
          parentRef: svcRef,
          controllerName: CONTROLLER,
          conditions: [
            cond(
              "Accepted",
              "False",
              "RouteReasonConflicted",
              "a GRPCRoute or HTTPRoute or TLSRoute with the same parent takes precedence over this TCPRoute",
            ),
            RESOLVED,
          ],
        }]],
        ["tcproutes", "svc-tcp-alone", [{
          parentRef: { ...svcRef, name: "db-primary" },
          controllerName: CONTROLLER,
          conditions: [
            ACCEPTED,
            cond("ResolvedRefs", "False", "BackendNotFound", `backend Service ${ns}/gone not found`),
          ],
        }]],
      ];
      for (const [resource, name, parents] of want) {
        let seen: Parent[] = [];
        const read = async () => {
          const r = await kjson(["-n", ns, "get", `${resource}.gateway.networking.k8s.io`, name]);
          seen = ((r.status?.parents ?? []) as Parent[]).map((p) => ({
            ...p,
            conditions: p.conditions.map(({ lastTransitionTime: t, observedGeneration: _g, ...c }: Cond & {
              observedGeneration?: number;
            }) => {
              assert.match(t ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
              return c;
            }),
          }));
          return isDeepStrictEqual(seen, parents);
        };
        await waitFor(`status of ${resource} ${name}`, read, {
          timeoutMs: 60_000,
          describe: () => JSON.stringify(seen),
        });
        assert.deepEqual(seen, parents);
      }

      // The Service's outbound policy, as the deployed controller sends it to a proxy, is routed by them:
      // protocol tls with svc-tls (which outranks svc-tcp), and opaque with svc-tcp-alone, whose
      // missing backend Service stays in the route (its share of connections is refused).
      const outbound = async (svc: string, want: RegExp[]) => {
        let text = "";
        await waitFor(`the outbound policy of svc/${svc}`, async () => {
          const r = await weft("diagnostics", "policy", `svc/${svc}`, "5432", "-n", ns);
          text = r.stdout + r.stderr;
          return r.code === 0 && want.every((w) => w.test(text));
        }, { timeoutMs: 60_000, intervalMs: 2000, describe: () => text });
        return text;
      };
      const dns = (svc: string) => `${svc}\\.${ns}\\.svc\\.cluster\\.local:5432`;
      const tls = await outbound("db", [
        /^protocol: tls$/m,
        new RegExp(`^tlsroute/${ns}/svc-tls +service/${ns}/db-primary \\(${dns("db-primary")}\\) w=1$`, "m"),
      ]);
      assert.doesNotMatch(tls, /svc-tcp/);
      await outbound("db-primary", [
        /^protocol: opaque$/m,
        new RegExp(`^tcproute/${ns}/svc-tcp-alone +service/${ns}/gone w=1$`, "m"),
      ]);
    });
  },
});

const CLI = new URL("../../cli/main.ts", import.meta.url).pathname;

/** `weft` as a user runs it, against the cluster. */
function weft(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return exec(Deno.execPath(), ["run", "-A", CLI, ...args], {
    env: { KUBECONFIG, WEFT_NAMESPACE: CONTROL_PLANE_NS },
    signal: AbortSignal.timeout(90_000),
  });
}
