/**
 * Multicluster Get against a real API server (KUBECONFIG), which serves as both the local and the
 * "remote" cluster: destination's cluster store reads a credentials Secret whose kubeconfig points
 * at the same API server (with another trust domain, so remote identities are told apart), as
 * main.ts wires it. Pods are held unscheduled (a scheduling gate): discovery reads only their
 * objects, and the EndpointSlices are the test's own. The gateway mirror's Endpoints are mirrored
 * into an EndpointSlice by the cluster's EndpointSliceMirroring controller, annotations included.
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { CoreV1Api, DiscoveryV1Api, type V1EndpointSlice, type V1Pod } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { fromTcpAddress } from "../../proto/ip.ts";
import { KubeApiSource, kubeConfigFromText, loadKubeConfig, Resources } from "../k8s/mod.ts";
import { ClusterState } from "./cluster_state.ts";
import { ClusterStore } from "./cluster_store.ts";
import { defaultConfig } from "./config.ts";
import type { WeightedAddr } from "./endpoints.ts";
import type { Update } from "./frame.ts";
import { Multicluster } from "./multicluster_names.ts";
import { serveDestination } from "./server.ts";
import { dialDestination, type Stream } from "./testing.ts";

const kubeconfig = Deno.env.get("KUBECONFIG");

function describe(u: Update): string {
  switch (u.update?.$case) {
    case "add":
      return `add ${u.update.value.addrs.map((a) => fromTcpAddress(a.addr!)).sort().join(",")}`;
    case "remove":
      return `remove ${u.update.value.addrs.map((a) => fromTcpAddress(a)).sort().join(",")}`;
    case "noEndpoints":
      return `noEndpoints(${u.update.value.exists})`;
    default:
      return "none";
  }
}

function addrsOf(u: Update): Map<string, WeightedAddr> {
  assert.equal(u.update?.$case, "add", describe(u));
  return new Map(
    (u.update as { value: { addrs: WeightedAddr[] } }).value.addrs.map((a) => [fromTcpAddress(a.addr!), a]),
  );
}

function identityOf(a: WeightedAddr): string | undefined {
  const st = a.tlsIdentity?.strategy;
  return st?.$case === "dnsLikeIdentity" ? st.value.name : undefined;
}

async function until<T>(what: string, f: () => T | undefined | false, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The next message, skipping nothing: each step of the test expects exactly one. */
async function next(s: Stream<Update>): Promise<Update> {
  return await s.next(20_000);
}

Deno.test({
  name: "multicluster Get on a real API server: remote discovery, federated union and leave, gateway mirror",
  ignore: !kubeconfig,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kc = loadKubeConfig(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const discovery = kc.makeApiClient(DiscoveryV1Api);
    const ns = `weft-mc-${crypto.randomUUID().slice(0, 8)}`;
    await core.createNamespace({ body: { metadata: { name: ns } } });
    const ctrl = new AbortController();
    let server: grpc.Server | undefined;
    let client: ReturnType<typeof dialDestination> | undefined;
    const logs: string[] = [];
    try {
      const config = defaultConfig({ controlPlaneNamespace: "weft", trustDomain: "cluster.local" });
      const registry = new Registry();
      const state = new ClusterState({
        sources: (ref) => new KubeApiSource(kc, ref),
        registry,
        watchServers: false,
        watchServiceProfiles: false,
        watchExternalWorkloads: false,
        log: () => {},
      });
      // As main.ts: the credentials Secrets of destination's namespace (here the test's), by type.
      const clusters = new ClusterStore({
        secrets: new KubeApiSource(kc, {
          ...Resources.secrets,
          namespace: ns,
          fieldSelector: `type=${Multicluster.credentialsSecretType}`,
        }),
        connect: (text, what) => {
          const remote = kubeConfigFromText(text, what);
          return (ref) => new KubeApiSource(remote, ref);
        },
        config,
        log: (m) => logs.push(m),
      });
      const informers = Promise.all([state.start(ctrl.signal), clusters.start(ctrl.signal)]);
      await state.synced;
      const s = await serveDestination({
        state,
        config,
        registry,
        clusters,
        hostname: "127.0.0.1",
        port: 0,
        log: () => {},
        signal: ctrl.signal,
      });
      server = s.server;
      client = dialDestination(`127.0.0.1:${s.port}`);

      // "Remote" and local workloads: Services, a ServiceAccount, held pods and their slices.
      await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "web-sa" } } });
      const podBody = (name: string, app: string): V1Pod => ({
        metadata: { name, labels: { app, "linkerd.io/control-plane-ns": "weft" } },
        spec: {
          serviceAccountName: "web-sa",
          schedulingGates: [{ name: "weft.test/held" }],
          containers: [
            { name: "app", image: "localhost/weft:dev", ports: [{ name: "http", containerPort: 8080 }] },
            { name: "linkerd-proxy", image: "localhost/weft:dev" },
          ],
        },
      });
      const sliceBody = (svc: string, eps: [string, string][]): V1EndpointSlice => ({
        metadata: {
          name: `${svc}-1`,
          labels: {
            "kubernetes.io/service-name": svc,
            "endpointslice.kubernetes.io/managed-by": "weft-test",
          },
        },
        addressType: "IPv4",
        ports: [{ name: "http", port: 8080, protocol: "TCP" }],
        endpoints: eps.map(([ip, pod]) => ({
          addresses: [ip],
          conditions: { ready: true },
          targetRef: { kind: "Pod", name: pod, namespace: ns },
        })),
      });
      const svcBody = (
        name: string,
        labels?: Record<string, string>,
        annotations?: Record<string, string>,
      ) => ({
        metadata: { name, labels, annotations },
        spec: { ports: [{ name: "http", port: 80, targetPort: 8080 }] },
      });
      for (const [pod, app] of [["web-0", "web"], ["web-1", "web"], ["api-0", "api"]]) {
        await core.createNamespacedPod({ namespace: ns, body: podBody(pod, app) });
      }
      await core.createNamespacedService({ namespace: ns, body: svcBody("web") });
      await core.createNamespacedService({ namespace: ns, body: svcBody("api") });
      await discovery.createNamespacedEndpointSlice({
        namespace: ns,
        body: sliceBody("web", [["10.250.1.1", "web-0"], ["10.250.1.2", "web-1"]]),
      });
      await discovery.createNamespacedEndpointSlice({
        namespace: ns,
        body: sliceBody("api", [["10.250.2.1", "api-0"]]),
      });
      await core.createNamespacedService({
        namespace: ns,
        body: svcBody("web-self", {
          [Multicluster.remoteDiscoveryLabel]: "self",
          [Multicluster.remoteServiceLabel]: "web",
        }),
      });
      const fed = (remote: string) =>
        svcBody("web-federated", undefined, {
          [Multicluster.remoteDiscoveryAnnotation]: remote,
          [Multicluster.localDiscoveryAnnotation]: "api",
        });
      await core.createNamespacedService({ namespace: ns, body: fed("web@self") });

      // The credentials: the same API server, trust domain remote.example.
      const text = await Deno.readTextFile(kubeconfig!);
      await core.createNamespacedSecret({
        namespace: ns,
        body: {
          metadata: {
            name: "cluster-credentials-self",
            labels: { [Multicluster.clusterNameLabel]: "self" },
            annotations: {
              [Multicluster.trustDomainAnnotation]: "remote.example",
              [Multicluster.clusterDomainAnnotation]: "cluster.local",
            },
          },
          type: Multicluster.credentialsSecretType,
          stringData: { [Multicluster.kubeconfigKey]: text },
        },
      });
      await until(
        "the local informers",
        () =>
          state.services.get(ns, "web-federated") && state.services.get(ns, "web-self") &&
          state.endpointSlices.get(ns, "api-1") && state.pods.get(ns, "api-0"),
      );
      const remote = await until("the remote cluster", () => clusters.get("self"));
      await until(
        "the remote cluster's informers",
        () =>
          remote.state.unsynced().length === 0 && remote.state.endpointSlices.get(ns, "web-1") &&
          remote.state.pods.get(ns, "web-0") && remote.state.pods.get(ns, "web-1"),
      );

      // Remote discovery: the remote pods' identities in the remote trust domain, local hints.
      const flat = client.get(`web-self.${ns}.svc.cluster.local:80`);
      const flatSet = addrsOf(await next(flat));
      assert.deepEqual([...flatSet.keys()].sort(), ["10.250.1.1:8080", "10.250.1.2:8080"]);
      const w = flatSet.get("10.250.1.1:8080")!;
      assert.equal(identityOf(w), `web-sa.${ns}.serviceaccount.identity.weft.remote.example`);
      assert.deepEqual(w.protocolHint, {
        protocol: { $case: "h2", value: {} },
        opaqueTransport: { inboundPort: 4143 },
      });
      assert.equal(w.authorityOverride, undefined);

      // Federated: the union of the local api and the remote web.
      const fedStream = client.get(`web-federated.${ns}.svc.cluster.local:80`);
      const fedSet = addrsOf(await next(fedStream));
      assert.deepEqual([...fedSet.keys()].sort(), ["10.250.1.1:8080", "10.250.1.2:8080", "10.250.2.1:8080"]);
      assert.equal(
        identityOf(fedSet.get("10.250.2.1:8080")!),
        `web-sa.${ns}.serviceaccount.identity.weft.cluster.local`,
      );
      assert.equal(
        identityOf(fedSet.get("10.250.1.2:8080")!),
        `web-sa.${ns}.serviceaccount.identity.weft.remote.example`,
      );

      // The remote member leaves the annotation, then joins again.
      await core.replaceNamespacedService({
        name: "web-federated",
        namespace: ns,
        body: { ...(await core.readNamespacedService({ name: "web-federated", namespace: ns })), ...fed("") },
      });
      assert.equal(describe(await next(fedStream)), "remove 10.250.1.1:8080,10.250.1.2:8080");
      await core.replaceNamespacedService({
        name: "web-federated",
        namespace: ns,
        body: {
          ...(await core.readNamespacedService({ name: "web-federated", namespace: ns })),
          ...fed("web@self"),
        },
      });
      assert.equal(describe(await next(fedStream)), "add 10.250.1.1:8080,10.250.1.2:8080");

      // The remote's endpoints all go away: removed from both streams, the local member stays.
      await discovery.deleteNamespacedEndpointSlice({ name: "web-1", namespace: ns });
      assert.equal(describe(await next(fedStream)), "remove 10.250.1.1:8080,10.250.1.2:8080");
      assert.equal(describe(await next(flat)), "remove 10.250.1.1:8080,10.250.1.2:8080");
      await discovery.createNamespacedEndpointSlice({
        namespace: ns,
        body: sliceBody("web", [["10.250.1.3", "web-1"]]),
      });
      assert.equal(describe(await next(fedStream)), "add 10.250.1.3:8080");
      assert.equal(describe(await next(flat)), "add 10.250.1.3:8080");

      // Gateway mirror: Endpoints written as the service mirror writes them.
      const gw = "weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local";
      await core.createNamespacedService({
        namespace: ns,
        body: svcBody("web-east", { "mirror.linkerd.io/mirrored-service": "true" }, {
          [Multicluster.remoteSvcFqNameAnnotation]: `web.${ns}.svc.cluster.local`,
        }),
      });
      await core.createNamespacedEndpoints({
        namespace: ns,
        body: {
          metadata: {
            name: "web-east",
            labels: { "mirror.linkerd.io/mirrored-service": "true" },
            annotations: {
              [Multicluster.remoteGatewayIdentityAnnotation]: gw,
              [Multicluster.remoteSvcFqNameAnnotation]: `web.${ns}.svc.cluster.local`,
            },
          },
          subsets: [{ addresses: [{ ip: "10.250.3.1" }], ports: [{ name: "http", port: 30143 }] }],
        },
      });
      const mirrored = await until(
        "the mirrored EndpointSlice",
        () =>
          state.endpointSlices.byIndex("service", `${ns}/web-east`).find((sl) =>
            (sl.endpoints ?? []).length > 0
          ),
      );
      // Where the identity came from (the controller copies the Endpoints' annotations).
      const viaSlice = mirrored.metadata.annotations?.[Multicluster.remoteGatewayIdentityAnnotation] === gw;
      const gws = client.get(`web-east.${ns}.svc.cluster.local:80`);
      const g = addrsOf(await next(gws)).get("10.250.3.1:30143")!;
      assert.equal(identityOf(g), gw);
      assert.deepEqual(g.authorityOverride, { authorityOverride: `web.${ns}.svc.cluster.local:80` });
      assert.deepEqual(g.protocolHint, { protocol: undefined, opaqueTransport: { inboundPort: 30143 } });
      console.log(`gateway identity read from the mirrored EndpointSlice's annotations: ${viaSlice}`);
      assert.ok(viaSlice, "EndpointSliceMirroring copied the Endpoints' annotations");

      // The credentials go: the cluster leaves; its streams lose its endpoints, new Gets are NotFound.
      await core.deleteNamespacedSecret({ name: "cluster-credentials-self", namespace: ns });
      assert.equal(describe(await next(fedStream)), "remove 10.250.1.3:8080");
      assert.equal(describe(await next(flat)), "remove 10.250.1.3:8080");
      await until("the cluster removed", () => !clusters.get("self"));
      const gone = client.get(`web-self.${ns}.svc.cluster.local:80`);
      const st = await gone.status;
      assert.equal(st.code, grpc.status.NOT_FOUND);
      assert.match(st.details, /Remote cluster not found: self/);
      for (const x of [flat, fedStream, gws]) x.cancel();
      ctrl.abort();
      await informers;
    } catch (e) {
      console.error(logs.join("\n"));
      throw e;
    } finally {
      client?.close();
      server?.forceShutdown();
      ctrl.abort();
      await core.deleteNamespace({ name: ns }).catch(() => {});
    }
  },
});
