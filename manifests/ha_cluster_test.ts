/**
 * The HA render (issue 19) against the real API server (KUBECONFIG), as a server-side dry run only: every
 * Deployment and PodDisruptionBudget --ha changes is applied with dryRun=All, so the API server validates
 * and defaults it (affinity, spread, strategy, resources, PDB) and stores nothing; the live objects are
 * read back afterwards to show that. Both anti-affinity forms are tried, whatever the node count. Run under
 * `flock /tmp/weft/cluster.lock`; needs the namespace weft (a deployed control plane).
 */
import assert from "node:assert/strict";
import { createWebhookCa } from "./certs.ts";
import { CONTROL_PLANE_DIR } from "./deploy.ts";
import { applyHa, haPlan, schedulableNodes } from "./ha.ts";
import { objectPath } from "./kinds.ts";
import { FIELD_MANAGER, Kube } from "./kube.ts";
import { loadDir, NAMESPACE, renderControlPlane } from "./render.ts";

const KUBECONFIG = Deno.env.get("KUBECONFIG");
// deno-lint-ignore no-explicit-any
type Obj = any;

Deno.test({
  name: "the --ha objects pass a server-side dry run (required and preferred anti-affinity); nothing stored",
  ignore: !KUBECONFIG,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const kube = Kube.fromFile(KUBECONFIG!.split(":")[0]);
    assert.ok(
      await kube.get(`/api/v1/namespaces/${NAMESPACE}`),
      `namespace ${NAMESPACE} missing: deploy first`,
    );
    const nodes = schedulableNodes(await kube.list<Obj>("/api/v1/nodes"));
    const docs = (await loadDir(CONTROL_PLANE_DIR)).filter((d) => d.kind !== "Namespace");
    const ca = await createWebhookCa(NAMESPACE, Date.now());
    const live = async (path: string) => (await kube.get<Obj>(path))?.spec;
    for (const nodeCount of [1, 3]) {
      const plan = haPlan({ flag: true, nodes: nodeCount })!;
      const objects = (await renderControlPlane(applyHa(docs, plan), {
        image: "localhost/weft:dev",
        imagePullPolicy: "Never",
        trustAnchorsPem: ca.certPem,
        nativeSidecars: true,
        webhookCaPem: ca.certPem,
      })).filter((m) =>
        (m.kind === "Deployment" || m.kind === "PodDisruptionBudget") &&
        ["destination", "identity", "proxy-injector"].includes(
          m.metadata.labels?.["linkerd.io/control-plane-component"] ?? "",
        )
      );
      assert.equal(objects.length, 6);
      for (const m of objects) {
        const path = objectPath(m);
        const before = await live(path);
        const r = await kube.request("PATCH", path, {
          body: JSON.stringify(m),
          contentType: "application/apply-patch+yaml",
          query: { dryRun: "All", fieldManager: FIELD_MANAGER, force: "true" },
        });
        assert.ok(
          r.status >= 200 && r.status < 300,
          `${m.kind} ${m.metadata.name}: ${r.status} ${r.text.slice(0, 400)}`,
        );
        const got = JSON.parse(r.text);
        if (m.kind === "Deployment") {
          assert.equal(got.spec.replicas, 3);
          const anti = got.spec.template.spec.affinity.podAntiAffinity;
          assert.ok(
            plan.antiAffinity === "required"
              ? anti.requiredDuringSchedulingIgnoredDuringExecution?.length === 1
              : anti.preferredDuringSchedulingIgnoredDuringExecution?.length === 1,
            `${m.metadata.name}: ${JSON.stringify(anti)}`,
          );
          assert.equal(
            got.spec.template.spec.topologySpreadConstraints[0].whenUnsatisfiable,
            "ScheduleAnyway",
          );
          assert.deepEqual(got.spec.strategy.rollingUpdate, { maxSurge: 0, maxUnavailable: 1 });
        } else {
          assert.equal(got.spec.maxUnavailable, 1);
        }
        // Dry run: the live object is as before.
        assert.deepEqual(await live(path), before, `${path} changed by a dry run`);
      }
    }
    console.log(
      `  dry runs passed; this cluster has ${nodes} schedulable node(s), so deploy --ha would use ${
        haPlan({ flag: true, nodes })!.antiAffinity
      } anti-affinity`,
    );
  },
});
