/**
 * Issue 21: the control plane's own proxies (injected at render time) watch the trust-roots
 * ConfigMap itself, which lives in their namespace, and the injector may copy it into other
 * namespaces and keep the copies in sync, and nothing broader.
 */
import assert from "node:assert/strict";
import type { V1Container } from "@kubernetes/client-node";
import { PROXY_CONTAINER } from "../control/injector/decision.ts";
import { createWebhookCa } from "./certs.ts";
import { CONTROL_PLANE_DIR } from "./deploy.ts";
import { loadDir, NAMESPACE, renderControlPlane } from "./render.ts";
import {
  TRUST_ROOTS_CONFIGMAP,
  TRUST_ROOTS_COPY_CONFIGMAP,
  TRUST_ROOTS_DIR_ENV,
  TRUST_ROOTS_MOUNT_PATH,
  TRUST_ROOTS_VOLUME,
} from "../proto/trust_roots.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

const objects = await renderControlPlane(await loadDir(CONTROL_PLANE_DIR), {
  image: "registry.example/weft:1.2.3",
  imagePullPolicy: "IfNotPresent",
  trustAnchorsPem: "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n",
  nativeSidecars: true,
  webhookCaPem: (await createWebhookCa(NAMESPACE, Date.now())).certPem,
}) as Obj[];

Deno.test("every control-plane proxy mounts the trust-roots ConfigMap itself and is told where", () => {
  const deployments = objects.filter((o) => o.kind === "Deployment");
  assert.ok(deployments.length >= 3);
  for (const d of deployments) {
    const spec = d.spec.template.spec;
    const proxy = [...(spec.initContainers ?? []), ...spec.containers].find((c: V1Container) =>
      c.name === PROXY_CONTAINER
    ) as V1Container;
    assert.equal(proxy.env?.find((e) => e.name === TRUST_ROOTS_DIR_ENV)?.value, TRUST_ROOTS_MOUNT_PATH);
    assert.ok(proxy.volumeMounts?.some((m) => m.name === TRUST_ROOTS_VOLUME && m.readOnly), d.metadata.name);
    const vol = spec.volumes.find((v: Obj) => v.name === TRUST_ROOTS_VOLUME);
    assert.deepEqual(vol.configMap, { name: TRUST_ROOTS_CONFIGMAP, optional: true }, d.metadata.name);
  }
});

Deno.test("the injector may create configmaps, but read and patch only the trust roots and their copies", () => {
  const role = objects.find((o) => o.kind === "ClusterRole" && o.metadata.name === "weft-proxy-injector");
  const cm = role.rules.filter((r: Obj) => r.resources.includes("configmaps"));
  const verbs = (names: string[] | undefined) =>
    cm.filter((r: Obj) => JSON.stringify(r.resourceNames) === JSON.stringify(names)).flatMap((r: Obj) =>
      r.verbs
    )
      .sort();
  assert.deepEqual(verbs(undefined), ["create"]);
  assert.deepEqual(verbs([TRUST_ROOTS_COPY_CONFIGMAP]), ["get", "list", "patch"]);
  assert.deepEqual(verbs([TRUST_ROOTS_CONFIGMAP]), ["get"]);
});
