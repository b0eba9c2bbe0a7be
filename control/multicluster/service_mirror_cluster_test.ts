/**
 * The service mirror against a real API server (KUBECONFIG), used as both source and target: the
 * credentials Secret holds the admin kubeconfig's data, the remote Services live in
 * `mc-remote-<rand>` and their mirrors land in the same namespace, told apart by the `-<target>`
 * suffix and the cluster-name label. The Link lives in a namespace of its own so nothing else's
 * weft-multicluster is touched. The gateway probe goes to a local HTTP server.
 */
import assert from "node:assert/strict";
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { loadKubeConfig } from "../k8s/mod.ts";
import { apiMessage, kubeRequest } from "../k8s/raw_request.ts";
import { parseServiceMirrorConfig } from "./config.ts";
import { kubeMirrorApi } from "./kube_mirror_api.ts";
import { run, unlink } from "./main.ts";
import { Annotations, Labels, LINK_GROUP, LINK_VERSION } from "./link.ts";
import type { Endpoints, Service } from "./mirror_objects.ts";

const kubeconfig = Deno.env.get("KUBECONFIG");
const CRD_FILE = new URL("../../manifests/crds/multicluster/link.yaml", import.meta.url);

async function waitFor<T>(
  what: string,
  f: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function ensureLinkCrd(kc: KubeConfig): Promise<boolean> {
  const path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  const got = await kubeRequest(kc, {
    method: "GET",
    path: `${path}/links.multicluster.linkerd.io`,
    fieldManager: "t",
  });
  if (got.status === 200) return false;
  const { parse } = await import("yaml");
  const body = JSON.stringify(parse(await Deno.readTextFile(CRD_FILE)));
  const r = await kubeRequest(kc, {
    method: "POST",
    path,
    body,
    contentType: "application/json",
    fieldManager: "test",
  });
  if (r.status !== 201 && r.status !== 409) throw new Error(`create CRD: ${r.status} ${apiMessage(r.text)}`);
  await waitFor("Link CRD served", async () => {
    const l = await kubeRequest(kc, {
      method: "GET",
      path: `/apis/${LINK_GROUP}/${LINK_VERSION}/links`,
      fieldManager: "t",
    });
    return l.status === 200;
  });
  return true;
}

Deno.test({
  name: "service mirror on a real API server: gateway, flat and federated mirrors, unexport, probe, unlink",
  ignore: !kubeconfig,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kc = loadKubeConfig(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const rand = crypto.randomUUID().slice(0, 6);
    const target = `mc${rand}`;
    const remoteNs = `mc-remote-${rand}`;
    const linksNs = `mc-links-${rand}`;
    const createdCrd = await ensureLinkCrd(kc);
    const stop = new AbortController();
    let probeStatus = 200;
    const probeStop = new AbortController();
    // Endpoints may not hold loopback addresses: the "gateway" is this host's first non-loopback IPv4 address.
    const hostIp = Deno.networkInterfaces().find((i) =>
      i.family === "IPv4" && !i.address.startsWith("127.")
    )!.address;
    const probeServer = Deno.serve(
      { hostname: hostIp, port: 0, signal: probeStop.signal, onListen: () => {} },
      () => new Response("probe\n", { status: probeStatus }),
    );
    const probePort = (probeServer.addr as Deno.NetAddr).port;
    let running: Promise<void> | undefined;
    try {
      for (const ns of [remoteNs, linksNs]) await core.createNamespace({ body: { metadata: { name: ns } } });
      const svc = (
        name: string,
        labels: Record<string, string>,
        selector: Record<string, string> | null = { app: name },
      ) =>
        core.createNamespacedService({
          namespace: remoteNs,
          body: {
            metadata: { name, labels: { app: name, ...labels } },
            spec: {
              selector: selector ?? undefined,
              ports: [
                { name: "http", port: 80, targetPort: 8080 },
                { name: "grpc", port: 9090 },
              ],
            },
          },
        });
      // `web` has no selector and Endpoints of our own, so the test decides whether it has ready endpoints
      // (Endpoints carry the exported label, as the endpoints controller copies a Service's labels).
      await svc("web", { [Labels.exported]: "true" }, null);
      const remoteEndpoints = (ready: boolean) => ({
        metadata: { name: "web", labels: { app: "web", [Labels.exported]: "true" } },
        subsets: [{
          [ready ? "addresses" : "notReadyAddresses"]: [{ ip: "10.244.250.250" }],
          ports: [{ name: "http", port: 8080 }, { name: "grpc", port: 9090 }],
        }],
      });
      await core.createNamespacedEndpoints({ namespace: remoteNs, body: remoteEndpoints(true) });
      await svc("flat", { [Labels.exported]: "remote-discovery" });
      await svc("fed", { [Labels.federated]: "member" });
      await svc("plain", {});
      // An orphan from an "earlier run": no remote service behind it.
      await core.createNamespacedService({
        namespace: remoteNs,
        body: {
          metadata: {
            name: `ghost-${target}`,
            labels: { [Labels.mirroredService]: "true", [Labels.clusterName]: target },
          },
          spec: { ports: [{ port: 80 }] },
        },
      });
      const kubeconfigText = await Deno.readTextFile(kubeconfig!);
      await core.createNamespacedSecret({
        namespace: linksNs,
        body: {
          metadata: {
            name: `cluster-credentials-${target}`,
            labels: { "multicluster.linkerd.io/cluster-name": target },
          },
          type: "mirror.linkerd.io/remote-kubeconfig",
          stringData: { kubeconfig: kubeconfigText },
        },
      });
      const linkBody = {
        apiVersion: `${LINK_GROUP}/${LINK_VERSION}`,
        kind: "Link",
        metadata: { name: target, namespace: linksNs },
        spec: {
          targetClusterName: target,
          targetClusterDomain: "cluster.local",
          clusterCredentialsSecret: `cluster-credentials-${target}`,
          gatewayAddress: hostIp,
          gatewayPort: "30143",
          gatewayIdentity: "weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local",
          probeSpec: { path: "/ready", port: String(probePort), period: "1s" },
        },
      };
      const createLink = () =>
        custom.createNamespacedCustomObject({
          group: LINK_GROUP,
          version: LINK_VERSION,
          namespace: linksNs,
          plural: "links",
          body: linkBody,
        });
      await createLink();

      const config = parseServiceMirrorConfig(
        [`--link=${target}`, `--namespace=${linksNs}`, "--admin-addr=127.0.0.1:0", "--resync-period=1m"],
        { KUBECONFIG: kubeconfig },
      );
      let admin: Deno.NetAddr | undefined;
      running = run(config, stop.signal, { onAdmin: (a) => admin = a });
      const adminUrl = () => `http://127.0.0.1:${admin!.port}`;
      await waitFor("service mirror ready", async () => {
        if (!admin) return false;
        const r = await fetch(`${adminUrl()}/ready`);
        await r.body?.cancel();
        return r.status === 200;
      });

      const getSvc = async (name: string) => {
        const r = await kubeRequest(kc, {
          method: "GET",
          path: `/api/v1/namespaces/${remoteNs}/services/${name}`,
          fieldManager: "t",
        });
        return r.status === 200 ? JSON.parse(r.text) as Service : undefined;
      };
      const getEp = async (name: string) => {
        const r = await kubeRequest(kc, {
          method: "GET",
          path: `/api/v1/namespaces/${remoteNs}/endpoints/${name}`,
          fieldManager: "t",
        });
        return r.status === 200 ? JSON.parse(r.text) as Endpoints : undefined;
      };

      // Gateway mode.
      const web = (await getSvc(`web-${target}`))!;
      assert.ok(web, "gateway mirror exists");
      assert.equal(web.metadata.labels?.[Labels.mirroredService], "true");
      assert.equal(web.metadata.labels?.[Labels.clusterName], target);
      assert.equal(web.metadata.labels?.app, "web");
      assert.equal(web.metadata.labels?.[Labels.exported], undefined);
      assert.equal(
        web.metadata.annotations?.[Annotations.remoteSvcFqName],
        `web.${remoteNs}.svc.cluster.local`,
      );
      assert.ok(web.metadata.annotations?.[Annotations.remoteResourceVersion]);
      assert.equal(web.spec?.selector, undefined);
      assert.deepEqual(web.spec?.ports?.map((p) => [p.name, p.port]), [["http", 80], ["grpc", 9090]]);
      const ep = (await getEp(`web-${target}`))!;
      assert.equal(
        ep.metadata.annotations?.[Annotations.remoteGatewayIdentity],
        linkBody.spec.gatewayIdentity,
      );
      assert.deepEqual(ep.subsets?.[0].addresses?.map((a) => a.ip), [hostIp]);
      assert.deepEqual(ep.subsets?.[0].ports?.map((p) => [p.name, p.port]).sort(), [["grpc", 30143], [
        "http",
        30143,
      ]]);

      // Flat mode.
      const flat = (await getSvc(`flat-${target}`))!;
      assert.equal(flat.metadata.labels?.[Labels.remoteDiscovery], target);
      assert.equal(flat.metadata.labels?.[Labels.remoteService], "flat");
      assert.equal(await getEp(`flat-${target}`), undefined);

      // Federated: the local `fed` is the same object, so it is a local member too.
      const fed = (await getSvc("fed-federated"))!;
      assert.equal(fed.metadata.annotations?.[Annotations.remoteDiscovery], `fed@${target}`);
      assert.equal(fed.metadata.annotations?.[Annotations.localDiscovery], "fed");
      assert.equal(fed.metadata.labels?.[Labels.mirroredService], "true");
      assert.equal(await getSvc(`fed-${target}`), undefined);
      assert.equal(await getSvc(`plain-${target}`), undefined);
      assert.equal(await getSvc(`ghost-${target}`), undefined, "orphan deleted by the start-up resync");

      // Metrics: probe alive, counts by mode.
      const metrics = async () => await (await fetch(`${adminUrl()}/metrics`)).text();
      await waitFor(
        "gateway alive",
        async () => (await metrics()).includes(`gateway_alive{target_cluster_name="${target}"} 1`),
      );
      const m = await metrics();
      for (const mode of ["gateway", "flat", "federated"]) {
        assert.ok(
          m.includes(`service_mirror_mirrored_services{target_cluster_name="${target}",mode="${mode}"} 1`),
          `one ${mode} mirror in the metrics`,
        );
      }
      assert.match(
        m,
        new RegExp(`gateway_probe_latency_ms_count\\{target_cluster_name="${target}"\\} [1-9]`),
      );
      probeStatus = 503;
      await waitFor(
        "gateway dead",
        async () => (await metrics()).includes(`gateway_alive{target_cluster_name="${target}"} 0`),
      );
      assert.match(
        await metrics(),
        new RegExp(`gateway_probe_failures_total\\{target_cluster_name="${target}"\\} [1-9]`),
      );
      // The gateway Endpoints follow the probe: not ready while it fails, ready again after.
      await waitFor("gateway endpoints not ready", async () => {
        const e = await getEp(`web-${target}`);
        return e?.subsets?.[0].addresses === undefined &&
          e?.subsets?.[0].notReadyAddresses?.[0]?.ip === hostIp;
      });
      probeStatus = 200;
      await waitFor("gateway endpoints ready", async () =>
        (await getEp(`web-${target}`))?.subsets?.[0].addresses?.[0]?.ip === hostIp);

      // The remote service without ready endpoints: its gateway mirror's Endpoints are emptied, then filled again.
      await core.replaceNamespacedEndpoints({
        namespace: remoteNs,
        name: "web",
        body: remoteEndpoints(false),
      });
      await waitFor("mirror endpoints emptied", async () =>
        (await getEp(`web-${target}`))?.subsets === undefined);
      await core.replaceNamespacedEndpoints({
        namespace: remoteNs,
        name: "web",
        body: remoteEndpoints(true),
      });
      await waitFor("mirror endpoints filled", async () =>
        (await getEp(`web-${target}`))?.subsets?.length === 1);

      // Another link's entry on the federated Service survives this link leaving and joining again.
      const patchLabels = (name: string, labels: Record<string, string | null>) =>
        kubeRequest(kc, {
          method: "PATCH",
          path: `/api/v1/namespaces/${remoteNs}/services/${name}`,
          body: JSON.stringify({ metadata: { labels } }),
          contentType: "application/merge-patch+json",
          fieldManager: "test",
        });
      const patch = await kubeRequest(kc, {
        method: "PATCH",
        path: `/api/v1/namespaces/${remoteNs}/services/fed-federated`,
        body: JSON.stringify({
          metadata: { annotations: { [Annotations.remoteDiscovery]: `fed@${target},fed@other` } },
        }),
        contentType: "application/merge-patch+json",
        fieldManager: "other-service-mirror",
      });
      assert.equal(patch.status, 200);
      await patchLabels("fed", { [Labels.federated]: null });
      await waitFor("left the federated service", async () => {
        const s = await getSvc("fed-federated");
        return s?.metadata.annotations?.[Annotations.remoteDiscovery] === "fed@other" &&
          s.metadata.annotations?.[Annotations.localDiscovery] === undefined;
      });
      await patchLabels("fed", { [Labels.federated]: "member" });
      await waitFor("joined again", async () => {
        const s = await getSvc("fed-federated");
        return s?.metadata.annotations?.[Annotations.remoteDiscovery] === `fed@other,fed@${target}` &&
          s.metadata.annotations?.[Annotations.localDiscovery] === "fed";
      });

      // Unexport: the mirror and its Endpoints go.
      await patchLabels("web", { [Labels.exported]: null });
      await waitFor(
        "gateway mirror deleted",
        async () =>
          (await getSvc(`web-${target}`)) === undefined && (await getEp(`web-${target}`)) === undefined,
      );
      await patchLabels("web", { [Labels.exported]: "true" });
      await waitFor("gateway mirror back", async () =>
        (await getEp(`web-${target}`)) !== undefined);

      // Link deleted: every mirror of this link goes; the other link's federated entry stays.
      await custom.deleteNamespacedCustomObject({
        group: LINK_GROUP,
        version: LINK_VERSION,
        namespace: linksNs,
        plural: "links",
        name: target,
      });
      await waitFor(
        "mirrors deleted with the Link",
        async () =>
          (await getSvc(`web-${target}`)) === undefined && (await getEp(`web-${target}`)) === undefined &&
          (await getSvc(`flat-${target}`)) === undefined &&
          (await getSvc("fed-federated"))?.metadata.annotations?.[Annotations.remoteDiscovery] ===
            "fed@other",
      );

      // Linked again, then `--unlink` (the controller stopped first, as unlink deletes its Deployment).
      await createLink();
      await waitFor("mirrors back", async () =>
        (await getSvc(`web-${target}`)) !== undefined);
      await waitFor(
        "federated back",
        async () =>
          (await getSvc("fed-federated"))?.metadata.annotations?.[Annotations.remoteDiscovery] ===
            `fed@other,fed@${target}`,
      );
      stop.abort();
      await running;
      running = undefined;
      const removed = await unlink({ ...config, unlink: true }, kc);
      assert.equal(removed, 3);
      assert.equal(await getSvc(`web-${target}`), undefined);
      assert.equal(await getEp(`web-${target}`), undefined);
      assert.equal(await getSvc(`flat-${target}`), undefined);
      assert.equal(
        (await getSvc("fed-federated"))?.metadata.annotations?.[Annotations.remoteDiscovery],
        "fed@other",
      );
      // The precondition delete the last federated member uses: refused at a stale version, done at the current one.
      const api = kubeMirrorApi(kc);
      const fedNow = (await getSvc("fed-federated"))!;
      assert.equal(await api.services.deleteAt(remoteNs, "fed-federated", "1"), "conflict");
      assert.equal(
        await api.services.deleteAt(remoteNs, "fed-federated", fedNow.metadata.resourceVersion!),
        "ok",
      );
      assert.equal(await getSvc("fed-federated"), undefined);
      const left = await kubeRequest(kc, {
        method: "GET",
        path: `/api/v1/namespaces/${remoteNs}/services?labelSelector=${
          encodeURIComponent(`${Labels.clusterName}=${target}`)
        }`,
        fieldManager: "t",
      });
      assert.deepEqual(JSON.parse(left.text).items, []);
    } finally {
      stop.abort();
      await running?.catch(() => {});
      probeStop.abort();
      await probeServer.finished;
      for (const ns of [remoteNs, linksNs]) {
        await core.deleteNamespace({ name: ns }).catch(() => {});
      }
      if (createdCrd) {
        await kubeRequest(kc, {
          method: "DELETE",
          path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/links.multicluster.linkerd.io",
          fieldManager: "t",
        }).catch(() => {});
      }
    }
  },
});
