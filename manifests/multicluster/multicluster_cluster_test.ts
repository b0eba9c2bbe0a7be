/**
 * `weft multicluster install | link | check | unlink` against the real API server in KUBECONFIG (issue 23), the
 * cluster linked to itself as target (cluster name `self-<random>`), since this test must not depend on a second
 * cluster: install twice (the second changes nothing), the gateway answering its probe on the node port, a gateway
 * link whose service mirror mirrors an exported Service, every check passing through the stored credentials, a
 * flat-only link, and unlink removing the Link, the service mirror, both Secrets, the mirrors, and the cluster's
 * entries of federated Services. Needs weft deployed with an image that has the service mirror. Run under
 * `flock /tmp/weft/cluster.lock`.
 */
import assert from "node:assert/strict";
import { checkMulticluster } from "../check/multicluster.ts";
import { Kube } from "../kube.ts";
import { NAMESPACE } from "../render.ts";
import { MC_NAMESPACE, PROBE_NODE_PORT, REMOTE_ACCESS_SA } from "./install.ts";
import { install } from "./install_run.ts";
import { credentialsSecretName } from "./link.ts";
import { link } from "./link_run.ts";
import { serviceMirrorName } from "./service_mirror.ts";
import { renderServiceMirrorFor, serviceMirrorObjectsFor } from "./service_mirror_link.ts";
import { unlink } from "./unlink.ts";

const kubeconfig = Deno.env.get("KUBECONFIG")?.split(":")[0];

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

Deno.test({
  name: "multicluster install, link to itself, check, flat link, unlink (real API server)",
  ignore: !kubeconfig,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const kube = Kube.fromFile(kubeconfig!);
    const suffix = crypto.randomUUID().slice(0, 6);
    const name = `self-${suffix}`;
    const flat = `flat-${suffix}`;
    const ns = `mc-test-${suffix}`;
    const hadNamespace = !!(await kube.get(`/api/v1/namespaces/${MC_NAMESPACE}`));
    const log = (l: string) => console.log(`  ${l}`);
    try {
      const first = await install(kube, { gateway: true, allowedIdentities: ["*"], timeoutMs: 180_000 });
      log(`install ${(first.ms / 1000).toFixed(1)}s: ${first.applied.map((a) => a.result).join(",")}`);
      const again = await install(kube, { gateway: true, allowedIdentities: ["*"], timeoutMs: 180_000 });
      assert.deepEqual(
        again.applied.filter((a) => a.result !== "unchanged"),
        [],
        "a second install changes nothing",
      );
      const node =
        (await kube.list<{ status: { addresses: { type: string; address: string }[] } }>("/api/v1/nodes"))
          .map((n) => n.status.addresses.find((a) => a.type === "InternalIP")?.address)[0];
      // When install rolled the gateway (a new image since the last run), the node port can still lead to the
      // old pod for a moment after the rollout: wait, bounded, for the probe to answer 200.
      let status = 0;
      await until("the gateway's probe on the node port", async () => {
        try {
          const probe = await fetch(`http://${node}:${PROBE_NODE_PORT}/ready`, {
            signal: AbortSignal.timeout(5000),
          });
          status = probe.status;
          await probe.body?.cancel();
        } catch {
          status = 0;
        }
        return status === 200 ? true : undefined;
      }, 30_000).catch(() => {});
      assert.equal(status, 200, "the gateway's proxy answers its probe on the node port");

      const r = await link(
        kube,
        kube,
        { clusterName: name, gateway: true, timeoutMs: 120_000 },
        renderServiceMirrorFor,
      );
      log(
        `link set-up ${(r.timings.totalMs / 1000).toFixed(1)}s (read ${r.timings.readTargetMs} ms, apply ` +
          `${r.timings.applyMs} ms, service mirror ready ${r.timings.readyMs} ms)`,
      );
      assert.equal(r.plan.gateway?.port, 30143);
      assert.deepEqual(r.plan.gateway?.addresses, [node]);
      for (const n of [MC_NAMESPACE, NAMESPACE]) {
        assert.ok(await kube.get(`/api/v1/namespaces/${n}/secrets/${credentialsSecretName(name)}`));
      }

      // An exported Service and two federated Services naming this link.
      await kube.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
      const svc = (n: string, labels: Record<string, string>, annotations: Record<string, string> = {}) =>
        kube.apply({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: n, namespace: ns, labels, annotations },
          spec: { ports: [{ name: "http", port: 8080 }] },
        });
      await svc("echo", { "mirror.linkerd.io/exported": "true" });
      const rd = "multicluster.linkerd.io/remote-discovery";
      await svc("web-federated", {}, { [rd]: `web@${name},web@elsewhere` });
      await svc("solo-federated", {}, { [rd]: `solo@${name}` });
      await until("the mirror of echo", () => kube.get(`/api/v1/namespaces/${ns}/services/echo-${name}`));

      const results = await until("every multicluster check to pass", async () => {
        const rs = (await checkMulticluster({ kube, thresholdMs: 0, now: Date.now() }))
          .filter((x) => x.name.startsWith(`${name}:`));
        return rs.length && rs.every((x) => x.outcome === "ok") ? rs : undefined;
      }, 60_000).catch(async (e) => {
        for (const x of await checkMulticluster({ kube, thresholdMs: 0, now: Date.now() })) {
          log(`${x.outcome} ${x.name}: ${x.detail}`);
        }
        throw e;
      });
      for (const x of results) log(`${x.outcome} ${x.name}: ${x.detail}`);
      assert.deepEqual(results.map((x) => x.name.slice(name.length + 2)), [
        "target API",
        "credentials",
        "trust anchors",
        "service mirror",
        "gateway",
        "mirrored services",
      ]);

      // A flat-only link: no gateway in the Link, no gateway check.
      const f = await link(
        kube,
        kube,
        { clusterName: flat, gateway: false, timeoutMs: 120_000 },
        renderServiceMirrorFor,
      );
      assert.equal(f.plan.gateway, undefined);
      const flatChecks = (await checkMulticluster({ kube, thresholdMs: 0, now: Date.now() }))
        .filter((x) => x.name.startsWith(`${flat}:`));
      assert.ok(!flatChecks.some((x) => x.name.endsWith("gateway")), "no gateway check for a flat link");
      assert.ok(flatChecks.find((x) => x.name.endsWith("trust anchors"))?.outcome === "ok");

      const u = await unlink(kube, name, await serviceMirrorObjectsFor(name, kube));
      log(`unlink ${u.ms} ms: deleted ${u.deleted.length}, patched ${u.patched.join(", ")}`);
      assert.equal(
        await kube.get(`/apis/multicluster.linkerd.io/v1alpha2/namespaces/${MC_NAMESPACE}/links/${name}`),
        undefined,
      );
      assert.equal(
        await kube.get(`/apis/apps/v1/namespaces/${MC_NAMESPACE}/deployments/${serviceMirrorName(name)}`),
        undefined,
      );
      for (const n of [MC_NAMESPACE, NAMESPACE]) {
        assert.equal(
          await kube.get(`/api/v1/namespaces/${n}/secrets/${credentialsSecretName(name)}`),
          undefined,
        );
      }
      assert.deepEqual(
        await kube.list("/api/v1/services", { labelSelector: `mirror.linkerd.io/cluster-name=${name}` }),
        [],
        "no mirror of the unlinked cluster is left",
      );
      const web = await kube.get<{ metadata: { annotations: Record<string, string> } }>(
        `/api/v1/namespaces/${ns}/services/web-federated`,
      );
      assert.equal(web?.metadata.annotations[rd], "web@elsewhere");
      assert.equal(await kube.get(`/api/v1/namespaces/${ns}/services/solo-federated`), undefined);
      await unlink(kube, flat, await serviceMirrorObjectsFor(flat, kube));
      assert.equal(
        (await checkMulticluster({ kube, thresholdMs: 0, now: Date.now() }))
          .filter((x) => x.name.startsWith(`${name}:`) || x.name.startsWith(`${flat}:`)).length,
        0,
      );
    } finally {
      for (const n of [name, flat]) {
        await unlink(kube, n, await serviceMirrorObjectsFor(n, kube)).catch(() => {});
      }
      await kube.delete(`/api/v1/namespaces/${ns}`).catch(() => {});
      if (!hadNamespace) {
        await kube.delete(`/api/v1/namespaces/${MC_NAMESPACE}`).catch(() => {});
        for (const k of ["clusterroles", "clusterrolebindings"]) {
          await kube.delete(`/apis/rbac.authorization.k8s.io/v1/${k}/${REMOTE_ACCESS_SA}`).catch(() => {});
        }
      }
    }
  },
});
