/**
 * Against the real API server in KUBECONFIG: objects written in every Server and ServiceProfile
 * version Linkerd serves are stored as the one storage version (conversion None relabels
 * apiVersion), read back through the version the controllers watch, and give the same policy as
 * when written in the newest version; fields an older version lacks are refused, as with
 * Linkerd's CRDs.
 */
import assert from "node:assert/strict";
import { inNamespace, kc, kjson, kubectl } from "../../tests/e2e/lib/kube.ts";
import { Resources } from "../k8s/resources.ts";
import { defaultPolicyConfig } from "./config.ts";
import { decideCrdInstall } from "./gateway_crds.ts";
import { inboundPolicy } from "./inbound_index.ts";
import type { Obj } from "./resources.ts";
import { namespace, pod, storeWith } from "./testing.ts";

const ROOT = new URL("../../", import.meta.url);
const CRDS = [
  "manifests/crds/policy/server.yaml",
  "manifests/crds/policy/httproute.yaml",
  "manifests/crds/serviceprofile.yaml",
];

async function installCrds(): Promise<void> {
  for (const f of CRDS) await kc(["apply", "-f", new URL(f, ROOT).pathname]);
  await kc([
    "wait",
    "--for=condition=Established",
    "--timeout=60s",
    "crd/servers.policy.linkerd.io",
    "crd/httproutes.policy.linkerd.io",
    "crd/serviceprofiles.linkerd.io",
  ]);
}

/** `kubectl create` of one object; the error text when refused. */
async function create(ns: string, o: unknown): Promise<string | undefined> {
  const r = await kubectl(["-n", ns, "create", "-f", "-"], { stdin: JSON.stringify(o) });
  return r.code === 0 ? undefined : (r.stderr || r.stdout).trim();
}

/** The object as the controllers' informers see it: through the version they watch. */
async function asWatched(ns: string, ref: { group: string; version: string; plural: string }, name: string) {
  return await kjson(["-n", ns, "get", `${ref.plural}.${ref.version}.${ref.group}`, name, "-o", "json"]);
}

const server = (version: string, name: string, spec: Record<string, unknown>) => ({
  apiVersion: `policy.linkerd.io/${version}`,
  kind: "Server",
  metadata: { name },
  spec,
});

Deno.test({
  name: "cluster: Servers of every served version are read as v1beta3 with the same policy",
  ignore: !Deno.env.get("KUBECONFIG"),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await installCrds();
    await inNamespace("crd-versions", {}, async (ns) => {
      const versions = ["v1alpha1", "v1beta1", "v1beta2", "v1beta3"];
      for (const [i, v] of versions.entries()) {
        const err = await create(
          ns,
          server(v, `web-${v}`, {
            podSelector: { matchLabels: { app: `web-${i}` } },
            port: 8080,
            proxyProtocol: "HTTP/1",
          }),
        );
        assert.equal(err, undefined, `${v} Server refused: ${err}`);
      }
      const cfg = defaultPolicyConfig();
      for (const [i, v] of versions.entries()) {
        const o = await asWatched(ns, Resources.servers, `web-${v}`);
        assert.equal(o.apiVersion, `policy.linkerd.io/${Resources.servers.version}`, v);
        assert.equal(o.spec.proxyProtocol, "HTTP/1", v);
        assert.equal(o.spec.port, 8080, v);
        // The index over the object as read: same protocol and the storage version's accessPolicy default.
        const p = pod(ns, `p${i}`, { app: `web-${i}` });
        const policy = inboundPolicy(
          storeWith(["Namespace", namespace(ns)], ["Pod", p], ["Server", o as Obj]),
          cfg,
          ns,
          p.metadata.name,
          8080,
        );
        assert.equal(policy.protocol?.kind?.$case, "http1", v);
        assert.deepEqual(policy.labels, { group: "policy.linkerd.io", kind: "server", name: `web-${v}` }, v);
        assert.equal(policy.authorizations.length, 0, `${v}: deny by default`);
      }

      // Fields a version does not have are refused (kubectl validates fields strictly), as Linkerd's CRDs do.
      const accessInAlpha = await create(
        ns,
        server("v1alpha1", "a1-access", {
          podSelector: { matchLabels: { a: "b" } },
          port: 80,
          accessPolicy: "deny",
        }),
      );
      assert.match(accessInAlpha ?? "", /accessPolicy/);
      const externalInBeta1 = await create(
        ns,
        server("v1beta1", "b1-ext", { externalWorkloadSelector: { matchLabels: { a: "b" } }, port: 80 }),
      );
      assert.ok(externalInBeta1, "v1beta1 has no externalWorkloadSelector and needs podSelector");
      const emptyInAlpha = await create(ns, server("v1alpha1", "a1-empty", { podSelector: {}, port: 81 }));
      assert.ok(emptyInAlpha, "v1alpha1 refuses an empty podSelector");
      assert.equal(await create(ns, server("v1beta1", "b1-empty", { podSelector: {}, port: 82 })), undefined);

      // policy HTTPRoute: timeouts only from v1beta3.
      const route = (v: string, name: string) => ({
        apiVersion: `policy.linkerd.io/${v}`,
        kind: "HTTPRoute",
        metadata: { name },
        spec: {
          parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: "web-v1beta3" }],
          rules: [{ timeouts: { request: "5s" } }],
        },
      });
      assert.match(await create(ns, route("v1beta2", "r-b2")) ?? "", /timeouts/);
      assert.equal(await create(ns, route("v1beta3", "r-b3")), undefined);
    });
  },
});

Deno.test({
  name: "cluster: ServiceProfile v1alpha1 is stored and read as v1alpha2; it requires routes",
  ignore: !Deno.env.get("KUBECONFIG"),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await installCrds();
    await inNamespace("crd-versions-sp", {}, async (ns) => {
      const sp = (v: string, spec: Record<string, unknown>) => ({
        apiVersion: `linkerd.io/${v}`,
        kind: "ServiceProfile",
        metadata: { name: `web.${ns}.svc.cluster.local` },
        spec,
      });
      assert.ok(await create(ns, sp("v1alpha1", { opaquePorts: ["3306"] })), "v1alpha1 without routes");
      const routes = [{ name: "GET /", condition: { method: "GET", pathRegex: "/" }, isRetryable: true }];
      assert.equal(await create(ns, sp("v1alpha1", { routes })), undefined);
      const o = await asWatched(ns, Resources.serviceProfiles, `web.${ns}.svc.cluster.local`);
      assert.equal(o.apiVersion, "linkerd.io/v1alpha2");
      assert.deepEqual(o.spec.routes, routes);
    });
  },
});

Deno.test({
  name:
    "cluster: sessionPersistence is admitted on Gateway API HTTPRoute and GRPCRoute, with its constraints",
  ignore: !Deno.env.get("KUBECONFIG"),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    for (
      const [file, name] of [
        ["gateway-httproute.yaml", "httproutes.gateway.networking.k8s.io"],
        ["gateway-grpcroute.yaml", "grpcroutes.gateway.networking.k8s.io"],
      ]
    ) {
      const live = await kubectl(["get", "crd", name, "-o", "json"]);
      const d = decideCrdInstall(name, live.code === 0 ? JSON.parse(live.stdout) : undefined, ["v1"]);
      if (d.action === "skip") {
        console.warn(`${name}: ${d.reason}; sessionPersistence case not run`);
        return;
      }
      await kc(["apply", "-f", new URL(`manifests/crds/policy/${file}`, ROOT).pathname]);
    }
    await kc([
      "wait",
      "--for=condition=Established",
      "--timeout=60s",
      "crd/httproutes.gateway.networking.k8s.io",
    ]);
    await inNamespace("crd-session", {}, async (ns) => {
      const r = (kind: string, version: string, n: string, sp: unknown) => ({
        apiVersion: `gateway.networking.k8s.io/${version}`,
        kind,
        metadata: { name: n },
        spec: {
          parentRefs: [{ group: "", kind: "Service", name: "web", port: 80 }],
          rules: [{ backendRefs: [{ name: "web", port: 80 }], sessionPersistence: sp }],
        },
      });
      const permanent = {
        sessionName: "s",
        absoluteTimeout: "1h",
        cookieConfig: { lifetimeType: "Permanent" },
      };
      for (
        const [kind, v] of [["HTTPRoute", "v1"], ["HTTPRoute", "v1beta1"], ["GRPCRoute", "v1"], [
          "GRPCRoute",
          "v1alpha2",
        ]]
      ) {
        const n = `${kind.toLowerCase()}-${v}`;
        assert.equal(await create(ns, r(kind, v, n, permanent)), undefined, `${kind} ${v}`);
      }
      assert.equal(
        await create(ns, r("HTTPRoute", "v1", "header", { type: "Header", sessionName: "x-s" })),
        undefined,
      );
      const stored = await kjson([
        "-n",
        ns,
        "get",
        "httproutes.v1.gateway.networking.k8s.io",
        "header",
        "-o",
        "json",
      ]);
      assert.deepEqual(stored.spec.rules[0].sessionPersistence, { type: "Header", sessionName: "x-s" });
      const noAbsolute = await create(
        ns,
        r("HTTPRoute", "v1", "bad", { cookieConfig: { lifetimeType: "Permanent" } }),
      );
      assert.match(noAbsolute ?? "", /AbsoluteTimeout must be specified/);
      assert.match(
        await create(ns, r("HTTPRoute", "v1", "bad2", { idleTimeout: "ten minutes" })) ?? "",
        /idleTimeout/,
      );
    });
  },
});
