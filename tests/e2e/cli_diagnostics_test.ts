// Cluster e2e of `weft diagnostics`, run as a user runs it (`deno run cli/main.ts`, KUBECONFIG): what it
// prints must match the cluster. endpoints lists the pod IPs of the Service's EndpointSlices; policy
// prints the Server on a port with its authorization; profile prints the ServiceProfile's routes;
// proxy-metrics of a meshed pod has request_total and the proxy's control-plane client metrics with
// their TLS labels (tls="true", the controller's server_id); controller-metrics has every component.
import assert from "node:assert/strict";
import { exec } from "../lib/exec.ts";
import {
  apply,
  CONTROL_PLANE_NS,
  inNamespace,
  kjson,
  KUBECONFIG,
  requireMesh,
  waitForReadyPods,
} from "./lib/kube.ts";
import { APP_PORT, appManifest, fetchFrom, identityOf, TRUST_DOMAIN } from "./lib/workloads.ts";
import { waitFor } from "./lib/wait.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const CLI = new URL("../../cli/main.ts", import.meta.url).pathname;

async function weft(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return await exec(Deno.execPath(), ["run", "-A", CLI, ...args], {
    env: { KUBECONFIG, WEFT_NAMESPACE: CONTROL_PLANE_NS },
    signal: AbortSignal.timeout(90_000),
  });
}

async function ok(...args: string[]): Promise<string> {
  const r = await weft(...args);
  assert.equal(r.code, 0, `weft ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

function policies(ns: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "List",
    items: [{
      apiVersion: "policy.linkerd.io/v1beta3",
      kind: "Server",
      metadata: { name: "web-http", namespace: ns },
      spec: { podSelector: { matchLabels: { app: "web" } }, port: APP_PORT, proxyProtocol: "HTTP/1" },
    }, {
      apiVersion: "policy.linkerd.io/v1alpha1",
      kind: "MeshTLSAuthentication",
      metadata: { name: "client-only", namespace: ns },
      spec: { identityRefs: [{ kind: "ServiceAccount", name: "client" }] },
    }, {
      apiVersion: "policy.linkerd.io/v1alpha1",
      kind: "AuthorizationPolicy",
      metadata: { name: "web-from-client", namespace: ns },
      spec: {
        targetRef: { group: "policy.linkerd.io", kind: "Server", name: "web-http" },
        requiredAuthenticationRefs: [{
          group: "policy.linkerd.io",
          kind: "MeshTLSAuthentication",
          name: "client-only",
        }],
      },
    }, {
      apiVersion: "linkerd.io/v1alpha2",
      kind: "ServiceProfile",
      metadata: { name: `web.${ns}.svc.cluster.local`, namespace: ns },
      spec: {
        routes: [
          { name: "GET /items", condition: { method: "GET", pathRegex: "/items" }, isRetryable: true },
          { name: "POST /orders", condition: { method: "POST", pathRegex: "/orders" }, timeout: "2s" },
        ],
      },
    }],
  });
}

Deno.test({
  name:
    "e2e: weft diagnostics endpoints, policy, profile, proxy-metrics and controller-metrics show what the cluster holds",
  ...opts,
  fn: async () => {
    await requireMesh();
    await inNamespace("e2e-diag", { inject: true }, async (ns) => {
      await apply(ns, appManifest({ name: "web", replicas: 2, service: true }));
      await apply(ns, appManifest({ name: "client" }));
      await apply(ns, policies(ns));
      const web = await waitForReadyPods(ns, "app=web", 2);
      const [client] = await waitForReadyPods(ns, "app=client", 1);
      const authority = `web.${ns}.svc.cluster.local:80`;

      // endpoints: the same pod IPs as the Service's EndpointSlices (ready endpoints).
      const slices = await kjson(["-n", ns, "get", "endpointslices", "-l", "kubernetes.io/service-name=web"]);
      const sliceIps = slices.items.flatMap((
        s: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[] },
      ) => (s.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses))
        .sort();
      assert.deepEqual(sliceIps, web.map((p) => p.status.podIP).sort(), "EndpointSlices and pods disagree");
      const table = await ok("diagnostics", "endpoints", authority);
      const tableIps = table.trim().split("\n").slice(1).map((l) => l.split(/\s+/)[2]).sort();
      assert.deepEqual(tableIps, sliceIps, table);
      const asJson = JSON.parse(await ok("diagnostics", "endpoints", authority, "-o", "json"));
      const jsonIps = asJson[0].updates.flatMap((
        u: { update: { add?: { addrs: { addr: { ip: string } }[] } } },
      ) => u.update.add?.addrs.map((a) => a.addr.ip) ?? []).sort();
      assert.deepEqual(jsonIps, sliceIps);
      assert.match(table, new RegExp(identityOf("web", ns).replaceAll(".", "\\.")));

      // policy: the Server on the app port, its protocol and its authorization (the client's identity only).
      let inbound = "";
      await waitFor("the Server and its authorization in the policy answer", async () => {
        inbound = await ok("diagnostics", "policy", "deploy/web", String(APP_PORT), "-n", ns);
        return /authorizationpolicy\/web-from-client/.test(inbound);
      }, { timeoutMs: 60_000, intervalMs: 2000, describe: () => inbound });
      assert.match(inbound, /^server: +server\/web-http$/m);
      assert.match(inbound, /^protocol: http1$/m);
      assert.match(inbound, new RegExp(`meshTLS: ${identityOf("client", ns).replaceAll(".", "\\.")}`));

      // profile: the ServiceProfile's routes as the proxy gets them.
      let profile = "";
      await waitFor("the ServiceProfile's routes", async () => {
        profile = await ok("diagnostics", "profile", authority, "-n", ns, "--as", "deploy/client");
        return /GET \/items/.test(profile);
      }, { timeoutMs: 60_000, intervalMs: 2000, describe: () => profile });
      assert.match(profile, new RegExp(`^profile: +web\\.${ns}\\.svc\\.cluster\\.local$`, "m"));
      // The condition is the conjunction of method and path, in the order the controller sends them.
      assert.match(
        profile,
        /^GET \/items +(method=GET && path=\/items|path=\/items && method=GET) +true +- /m,
      );
      assert.match(
        profile,
        /^POST \/orders +(method=POST && path=\/orders|path=\/orders && method=POST) +false +2s /m,
      );

      // proxy-metrics: traffic from the client shows in request_total on both sides, and the client's proxy
      // counted its control-plane calls over mesh TLS to each controller's identity.
      const answers = await fetchFrom(client.status.podIP, authority, 4);
      assert.ok(answers.every((a) => a.ok), JSON.stringify(answers));
      const serverMetrics = await ok("diagnostics", "proxy-metrics", `po/${web[0].metadata.name}`, "-n", ns);
      assert.match(serverMetrics, /^request_total\{direction="inbound",/m);
      const clientMetrics = await ok("diagnostics", "proxy-metrics", "deploy/client", "-n", ns);
      assert.match(clientMetrics, /^request_total\{direction="outbound",/m);
      const controller = (sa: string) =>
        `${sa}.${CONTROL_PLANE_NS}.serviceaccount.identity.${CONTROL_PLANE_NS}.${TRUST_DOMAIN}`;
      for (
        const [what, id] of [["destination and policy", controller("weft-destination")], [
          "identity",
          controller("weft-identity"),
        ]]
      ) {
        assert.match(
          clientMetrics,
          new RegExp(
            `^control_request_total\\{addr="[^"]+",tls="true",server_id="${
              id.replaceAll(".", "\\.")
            }"\\} [1-9]`,
            "m",
          ),
          `${what}: no control_request_total over TLS to ${id}`,
        );
      }
      // Certify is unary: its response is counted as soon as it returns.
      assert.match(
        clientMetrics,
        new RegExp(
          `^control_response_total\\{addr="[^"]+",tls="true",server_id="${
            controller("weft-identity").replaceAll(".", "\\.")
          }",status_code="200",classification="success",grpc_status="0",error=""\\} [1-9]`,
          "m",
        ),
      );

      // controller-metrics: every control-plane component's admin server answers.
      const cp = await ok("diagnostics", "controller-metrics");
      for (const c of ["destination", "policy", "identity", "proxy-injector"]) {
        assert.match(
          cp,
          new RegExp(`^# POD weft-[a-z0-9-]+ CONTAINER ${c} \\(port \\d+\\)$`, "m"),
          `no ${c}`,
        );
      }
      assert.match(cp, /^grpc_server_handled_total\{/m);
    });
  },
});
