// Cluster e2e for the egress kinds (issue 24), against the deployed control plane: the CRDs are installed and
// served, the policy controller watches EgressNetworks and writes their status (Accepted, or not when a network
// overlaps the cluster networks), and the admission webhook admits EgressNetwork parents on routes, refusing a
// parent without a port with a message naming the field. No traffic is sent: the networks
// used are a documentation range (203.0.113.0/24) and a cluster range; the data path is covered by
// tests/egress/egress_netns_test.ts.
import assert from "node:assert/strict";
import { apply, inNamespace, kjson, kubectl, requireMesh } from "./lib/kube.ts";
import { waitForValue } from "./lib/wait.ts";

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
