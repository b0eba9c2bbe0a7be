/**
 * Deploys to the real cluster (KUBECONFIG), twice, and checks what a user would: the control plane
 * is ready with certified proxies, the second deploy changes nothing (apart from rolling out a new
 * build of the image, if the code changed in between), and mesh:check passes. It leaves the control
 * plane running for the end-to-end tests.
 */
import assert from "node:assert/strict";
import { runChecks } from "./check.ts";
import { CONTROL_PLANE_DIR, deploy, type DeploySummary } from "./deploy.ts";
import { Kube } from "./kube.ts";
import { defaultCertsDir } from "./main.ts";
import { Progress } from "./progress.ts";
import { IMAGE_DIGEST_ANNOTATION, loadDir, NAMESPACE } from "./render.ts";

const KUBECONFIG = Deno.env.get("KUBECONFIG");

interface Pod {
  metadata: { name: string; labels: Record<string, string>; deletionTimestamp?: string };
  spec: { serviceAccountName: string };
  status: { conditions?: { type: string; status: string }[] };
}

async function runDeploy(kube: Kube): Promise<{ summary: DeploySummary; lines: string[] }> {
  const progress = new Progress({ write: () => {}, isTerminal: false });
  const summary = await deploy({
    kube,
    image: "localhost/weft:dev",
    imagePullPolicy: "Never",
    target: {},
    certsDir: defaultCertsDir(kube.server, Deno.env.toObject()),
    timeoutMs: 300_000,
    progress,
  });
  return { summary, lines: progress.lines };
}

Deno.test({
  name: "deploy brings the control plane up meshed, a second deploy changes nothing, mesh:check passes",
  ignore: !KUBECONFIG,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const kube = Kube.fromFile(KUBECONFIG!);
    const first = await runDeploy(kube);
    assert.ok(first.lines.some((l) => l.startsWith("✓ control plane ready")), first.lines.join("\n"));

    // Every control-plane pod is Ready, and its proxy says it was certified.
    const pods = (await kube.list<Pod>(`/api/v1/namespaces/${NAMESPACE}/pods`)).filter((p) =>
      !p.metadata.deletionTimestamp
    );
    // One pod per control-plane Deployment, and the embedded metrics store (deploy's default).
    const expected = (await loadDir(CONTROL_PLANE_DIR)).filter((d) => d.kind === "Deployment").map((d) =>
      (d.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata
        .labels["linkerd.io/control-plane-component"]
    );
    assert.deepEqual(
      pods.map((p) => p.metadata.labels["linkerd.io/control-plane-component"]).sort(),
      [...expected, "prometheus"].sort(),
    );
    assert.ok(first.lines.some((l) => l.startsWith("✓ metrics store")), first.lines.join("\n"));
    for (const p of pods) {
      assert.ok(
        p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        p.metadata.name,
      );
      const log = await kube.request(
        "GET",
        `/api/v1/namespaces/${NAMESPACE}/pods/${p.metadata.name}/log`,
        { query: { container: "linkerd-proxy" }, accept: "*/*" },
      );
      assert.equal(log.status, 200, log.text);
      const sa = p.spec.serviceAccountName;
      assert.match(
        log.text,
        new RegExp(`Certified identity: ${sa}\\.${NAMESPACE}\\.serviceaccount\\.identity\\.`),
      );
    }

    // Nothing changes, except that a Deployment may roll out a different build of the image: this
    // run's build when the code changed in between, or one deployed by someone else meanwhile.
    const second = await runDeploy(kube);
    const digestPath = `.spec.template.metadata.annotations.${IMAGE_DIGEST_ANNOTATION}`;
    const unexplained = second.summary.changes.filter((c) =>
      !(c.object.startsWith("Deployment ") && c.changed?.length === 1 && c.changed[0] === digestPath)
    );
    assert.deepEqual(unexplained, [], second.lines.join("\n"));
    if (second.summary.changes.length === 0) {
      assert.ok(second.lines.some((l) => l.includes(": no changes")), second.lines.join("\n"));
    }

    const results = await runChecks({ kube, thresholdMs: 30 * 86_400_000 });
    const failed = results.filter((r) => r.outcome === "fail");
    assert.deepEqual(
      failed,
      [],
      results.map((r) => `${r.outcome} ${r.group} ${r.name}: ${r.detail}`).join("\n"),
    );
    assert.ok(results.some((r) => r.name === "proxy injector" && r.outcome === "ok"));

    // A threshold beyond the certificates' lifetimes fails the certificate checks (non-zero exit).
    const strict = await runChecks({ kube, thresholdMs: 20 * 365 * 86_400_000 });
    const certFails = strict.filter((r) => r.group === "certificates" && r.outcome === "fail");
    assert.equal(certFails.length, 2, strict.map((r) => `${r.outcome} ${r.name}: ${r.detail}`).join("\n"));
  },
});
