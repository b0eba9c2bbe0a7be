import assert from "node:assert/strict";
import type { V1Container, V1Namespace, V1Pod } from "@kubernetes/client-node";
import { defaultInjectorConfig } from "./config.ts";
import { buildPatch, inboundPorts } from "./patch.ts";
import { applyPatch } from "./testing/json_patch.ts";

const here = new URL(".", import.meta.url).pathname;
const update = Deno.args.includes("--update-golden");
const ANCHORS = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n";
const cfg = { ...defaultInjectorConfig(ANCHORS), version: "v0.1.0" };

async function readPod(name: string): Promise<V1Pod> {
  return JSON.parse(await Deno.readTextFile(`${here}testdata/${name}.pod.json`));
}
const ns = (name: string, annotations: Record<string, string> = {}): V1Namespace => ({
  metadata: { name, annotations: { "linkerd.io/inject": "enabled", ...annotations } },
});
const env = (c: V1Container, name: string) => c.env?.find((e) => e.name === name)?.value;

async function golden(name: string, value: unknown): Promise<void> {
  const path = `${here}testdata/${name}.patch.json`;
  const text = JSON.stringify(value, null, 2) + "\n";
  if (update) await Deno.writeTextFile(path, text);
  assert.equal(
    text,
    await Deno.readTextFile(path),
    `golden ${path} differs (run with -- --update-golden to rewrite)`,
  );
}

Deno.test("native-sidecar patch for a Deployment pod matches its golden file and means what it says", async () => {
  const pod = await readPod("web");
  const res = await buildPatch(pod, ns("shop"), cfg);
  assert.ok(res.ok);
  if (!res.ok) return;
  await golden("web", res.patch);
  const out = applyPatch(pod, res.patch);
  const [init, proxy, ...rest] = out.spec!.initContainers!;
  assert.equal(rest.length, 0);
  assert.equal(init.name, "linkerd-init");
  assert.deepEqual(init.securityContext?.capabilities?.add, ["NET_ADMIN", "NET_RAW"]);
  assert.equal(proxy.name, "linkerd-proxy");
  assert.equal(proxy.restartPolicy, "Always");
  assert.equal(proxy.startupProbe?.httpGet?.path, "/ready");
  assert.equal(proxy.startupProbe?.httpGet?.port, 4191);
  assert.equal(out.spec!.containers.length, 1);
  // Container ports (TCP only) and probe ports, named probe ports resolved.
  assert.equal(env(proxy, "LINKERD2_PROXY_INBOUND_PORTS"), "6379,8080,9090");
  assert.equal(
    env(proxy, "LINKERD2_PROXY_IDENTITY_LOCAL_NAME"),
    "$(_pod_sa).$(_pod_ns).serviceaccount.identity.weft.cluster.local",
  );
  assert.equal(env(proxy, "LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS"), ANCHORS);
  // Tap is served to the tap component's identity only.
  assert.equal(
    env(proxy, "LINKERD2_PROXY_TAP_SVC_NAME"),
    "weft-tap.weft.serviceaccount.identity.weft.cluster.local",
  );
  assert.equal(env(proxy, "LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED"), undefined, "/shutdown is opt-in");
  assert.equal(out.metadata!.labels!["linkerd.io/proxy-deployment"], "web");
  assert.equal(out.metadata!.annotations!["config.linkerd.io/opaque-ports"], "6379");
  const token = out.spec!.volumes!.find((v) => v.name === "linkerd-identity-token");
  assert.equal(token?.projected?.sources?.[0].serviceAccountToken?.audience, "identity.l5d.io");
  // The live trust bundle (issue 21): the namespace's copy of the trust-roots ConfigMap, read-only.
  assert.equal(env(proxy, "WEFT_PROXY_IDENTITY_TRUST_ROOTS_DIR"), "/var/run/weft/identity/trust-roots");
  const roots = out.spec!.volumes!.find((v) => v.name === "weft-identity-trust-roots");
  assert.deepEqual(roots?.configMap, { name: "weft-identity-trust-roots", optional: true });
  assert.deepEqual(proxy.volumeMounts?.find((m) => m.name === "weft-identity-trust-roots"), {
    name: "weft-identity-trust-roots",
    mountPath: "/var/run/weft/identity/trust-roots",
    readOnly: true,
  });
});

Deno.test("a pod in the control plane's namespace mounts the trust-roots ConfigMap itself, not a copy", async () => {
  const pod = await readPod("web");
  const res = await buildPatch({ ...pod, metadata: { ...pod.metadata, namespace: "weft" } }, ns("weft"), cfg);
  assert.ok(res.ok);
  if (!res.ok) return;
  const out = applyPatch(pod, res.patch);
  const roots = out.spec!.volumes!.find((v) => v.name === "weft-identity-trust-roots");
  assert.deepEqual(roots?.configMap, { name: "linkerd-identity-trust-roots", optional: true });
});

Deno.test("classic-mode patch for a Job pod with overrides matches its golden file", async () => {
  const pod = await readPod("job");
  const res = await buildPatch(pod, ns("batch"), cfg);
  assert.ok(res.ok);
  if (!res.ok) return;
  await golden("job", res.patch);
  const out = applyPatch(pod, res.patch);
  assert.deepEqual(out.spec!.initContainers!.map((c) => c.name), ["linkerd-init", "wait-db"]);
  assert.deepEqual(out.spec!.containers.map((c) => c.name), ["linkerd-proxy", "migrate"]);
  const proxy = out.spec!.containers[0];
  assert.deepEqual(proxy.lifecycle?.postStart?.exec?.command, cfg.awaitCommand);
  assert.deepEqual(proxy.lifecycle?.preStop?.exec?.command, ["weft-await", "sleep", "3"]);
  assert.equal(env(proxy, "LINKERD2_PROXY_CORES"), "2");
  // The Job asked for /shutdown (its app ends the proxy that way without native sidecars).
  assert.equal(env(proxy, "LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED"), "true");
  assert.match(
    res.warnings.join("\n"),
    /POST http:\/\/localhost:4191\/shutdown, which is enabled for this pod/,
  );
  assert.equal(proxy.securityContext?.runAsGroup, 2102);
  const args = out.spec!.initContainers![0].args!;
  assert.equal(args[args.indexOf("--outbound-ports-to-ignore") + 1], "5432");
  assert.equal(args[args.indexOf("--subnets-to-ignore") + 1], "10.96.0.0/12");
  assert.equal(args[args.indexOf("--inbound-ports-to-ignore") + 1], "4190,4191");
  assert.equal(out.metadata!.labels!["linkerd.io/proxy-job"], "migrate");
  assert.deepEqual(out.spec!.volumes!.map((v) => v.name), [
    "data",
    "linkerd-proxy-init-xtables-lock",
    "linkerd-identity-end-entity",
    "linkerd-identity-token",
    "weft-identity-trust-roots",
  ]);
});

Deno.test("namespace overrides apply unless the pod sets its own; a bad namespace value is a warning", async () => {
  const pod = await readPod("web");
  pod.metadata!.annotations = { "config.linkerd.io/proxy-log-level": "debug" };
  const res = await buildPatch(
    pod,
    ns("shop", {
      "config.linkerd.io/proxy-log-level": "error",
      "config.linkerd.io/default-inbound-policy": "deny",
      "config.linkerd.io/proxy-memory-limit": "huge",
    }),
    cfg,
  );
  assert.ok(res.ok);
  if (!res.ok) return;
  const proxy = applyPatch(pod, res.patch).spec!.initContainers![1];
  assert.equal(env(proxy, "LINKERD2_PROXY_LOG"), "debug");
  assert.equal(env(proxy, "LINKERD2_PROXY_INBOUND_DEFAULT_POLICY"), "deny");
  assert.equal(proxy.resources?.limits?.memory, "256Mi");
  assert.equal(res.warnings.length, 1);
  assert.match(
    res.warnings[0],
    /namespace shop: annotation config\.linkerd\.io\/proxy-memory-limit="huge" is invalid/,
  );
});

Deno.test("the shutdown endpoint is enabled only by the proxy-admin-shutdown annotation, pod over namespace", async () => {
  const shutdownEnv = async (podAnn: Record<string, string>, nsAnn: Record<string, string>) => {
    const pod = await readPod("web");
    pod.metadata!.annotations = podAnn;
    const res = await buildPatch(pod, ns("shop", nsAnn), cfg);
    assert.ok(res.ok);
    if (!res.ok) return undefined;
    return env(
      applyPatch(pod, res.patch).spec!.initContainers![1],
      "LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED",
    );
  };
  const key = "config.linkerd.io/proxy-admin-shutdown";
  assert.equal(await shutdownEnv({}, {}), undefined);
  assert.equal(await shutdownEnv({ [key]: "enabled" }, {}), "true");
  assert.equal(await shutdownEnv({}, { [key]: "enabled" }), "true");
  assert.equal(await shutdownEnv({ [key]: "disabled" }, { [key]: "enabled" }), undefined);
  const pod = await readPod("web");
  pod.metadata!.annotations = { [key]: "yes" };
  const res = await buildPatch(pod, ns("shop"), cfg);
  assert.equal(res.ok, false);
  if (res.ok) return;
  assert.match(
    res.problems[0].message,
    /proxy-admin-shutdown="yes" is invalid: unknown value; want enabled or disabled/,
  );
});

Deno.test("a Job without native sidecars or the shutdown annotation is warned how to end its proxy", async () => {
  const pod = await readPod("job");
  delete pod.metadata!.annotations!["config.linkerd.io/proxy-admin-shutdown"];
  const res = await buildPatch(pod, ns("batch"), cfg);
  assert.ok(res.ok);
  if (!res.ok) return;
  assert.match(
    res.warnings.join("\n"),
    /is off unless the pod or namespace is annotated config\.linkerd\.io\/proxy-admin-shutdown=enabled/,
  );
});

Deno.test("a bad pod override refuses the pod with every problem named", async () => {
  const pod = await readPod("web");
  pod.metadata!.annotations = {
    "config.linkerd.io/proxy-uid": "root",
    "config.linkerd.io/opaque-ports": "0",
  };
  const res = await buildPatch(pod, ns("shop"), cfg);
  assert.equal(res.ok, false);
  if (res.ok) return;
  assert.deepEqual(res.problems.map((p) => p.annotation).sort(), [
    "config.linkerd.io/opaque-ports",
    "config.linkerd.io/proxy-uid",
  ]);
});

Deno.test("inbound ports ignore UDP and resolve named probe ports", () => {
  const pod: V1Pod = {
    spec: {
      containers: [{
        name: "a",
        ports: [{ name: "web", containerPort: 80 }, { containerPort: 53, protocol: "UDP" }],
        startupProbe: { httpGet: { port: "web", path: "/" } },
        readinessProbe: { grpc: { port: 9000 } },
      }],
    },
  };
  assert.deepEqual(inboundPorts(pod), [80, 9000]);
});

Deno.test("IPv6 off: init is told not to redirect IPv6 and the proxy listens on IPv4 only (the same choice)", async () => {
  const pod = await readPod("web");
  const res = await buildPatch(pod, ns("shop"), { ...cfg, ipv6: false });
  assert.ok(res.ok);
  if (!res.ok) return;
  const out = applyPatch(pod, res.patch);
  const [init, proxy] = out.spec!.initContainers!;
  assert.deepEqual(init.args!.slice(-2), ["--ipv6", "false"]);
  assert.equal(env(proxy, "LINKERD2_PROXY_INBOUND_LISTEN_ADDR"), "0.0.0.0:4143");
  assert.equal(env(proxy, "LINKERD2_PROXY_OUTBOUND_LISTEN_ADDRS"), "127.0.0.1:4140");
  assert.equal(env(proxy, "LINKERD2_PROXY_ADMIN_LISTEN_ADDR"), "0.0.0.0:4191");
});

Deno.test("config.linkerd.io/access-log sets LINKERD2_PROXY_ACCESS_LOG (pod over namespace); other values are refused", async () => {
  const accessEnv = async (podAnn: Record<string, string>, nsAnn: Record<string, string>) => {
    const pod = await readPod("web");
    pod.metadata!.annotations = podAnn;
    const res = await buildPatch(pod, ns("shop", nsAnn), cfg);
    assert.ok(res.ok);
    if (!res.ok) return undefined;
    return env(applyPatch(pod, res.patch).spec!.initContainers![1], "LINKERD2_PROXY_ACCESS_LOG");
  };
  const key = "config.linkerd.io/access-log";
  assert.equal(await accessEnv({}, {}), undefined);
  assert.equal(await accessEnv({ [key]: "apache" }, {}), "apache");
  assert.equal(await accessEnv({}, { [key]: "json" }), "json");
  assert.equal(await accessEnv({ [key]: "apache" }, { [key]: "json" }), "apache");
  const pod = await readPod("web");
  pod.metadata!.annotations = { [key]: "combined" };
  const res = await buildPatch(pod, ns("shop"), cfg);
  assert.equal(res.ok, false);
  if (res.ok) return;
  assert.match(
    res.problems[0].message,
    /access-log="combined" is invalid: unknown format; want apache or json/,
  );
});

Deno.test("multicluster: proxies trust no gateway unless configured (issue 23); config.linkerd.io/enable-gateway makes a gateway", async () => {
  const gwId =
    `weft-gateway.weft-multicluster.serviceaccount.identity.${cfg.controlPlaneNamespace}.${cfg.trustDomain}`;
  const proxyEnv = async (podAnn: Record<string, string>, trusted: string[] = []) => {
    const pod = await readPod("web");
    pod.metadata!.annotations = podAnn;
    const res = await buildPatch(pod, ns("weft-multicluster"), { ...cfg, trustedGatewayIdentities: trusted });
    assert.ok(res.ok);
    if (!res.ok) throw new Error("refused");
    return applyPatch(pod, res.patch).spec!.initContainers![1];
  };
  const plain = await proxyEnv({});
  assert.equal(env(plain, "WEFT_PROXY_INBOUND_TRUSTED_GATEWAY_IDENTITIES"), undefined);
  assert.equal(
    env(await proxyEnv({}, [gwId]), "WEFT_PROXY_INBOUND_TRUSTED_GATEWAY_IDENTITIES"),
    gwId,
  );
  assert.equal(
    env(
      await proxyEnv({}, [gwId, "b.ns.serviceaccount.identity.weft.td"]),
      "WEFT_PROXY_INBOUND_TRUSTED_GATEWAY_IDENTITIES",
    ),
    `${gwId},b.ns.serviceaccount.identity.weft.td`,
  );
  assert.equal(env(plain, "WEFT_PROXY_INBOUND_GATEWAY"), undefined);
  assert.equal(env(plain, "LINKERD2_PROXY_INBOUND_GATEWAY_SUFFIXES"), undefined);
  const gw = await proxyEnv({ "config.linkerd.io/enable-gateway": "true" });
  assert.equal(env(gw, "WEFT_PROXY_INBOUND_GATEWAY"), "true");
  assert.equal(env(gw, "LINKERD2_PROXY_INBOUND_GATEWAY_SUFFIXES"), `svc.${cfg.clusterDomain}.`);
  assert.equal(
    env(await proxyEnv({ "config.linkerd.io/enable-gateway": "false" }), "WEFT_PROXY_INBOUND_GATEWAY"),
    undefined,
  );
});
