import assert from "node:assert/strict";
import { Annotations } from "../../proto/annotations.ts";
import { NAMESPACE } from "../render.ts";
import { injectedNamespaces, unmeshedPods, unreadyProxies } from "./data_plane.ts";

const PROXY = { name: "linkerd-proxy" };
const pod = (name: string, o: { ns?: string; phase?: string; proxy?: boolean; ready?: boolean } = {}) => ({
  metadata: { name, namespace: o.ns ?? "app" },
  spec: { containers: [{ name: "app" }], initContainers: o.proxy === false ? [] : [PROXY] },
  status: {
    phase: o.phase ?? "Running",
    initContainerStatuses: o.proxy === false ? [] : [{ name: PROXY.name, ready: o.ready ?? true }],
  },
});

Deno.test("injected namespaces: annotated enabled, not the control plane's, not excluded, not deleting", () => {
  const ns = (name: string, extra: Record<string, unknown> = {}) => ({
    metadata: { name, annotations: { [Annotations.inject]: "enabled" }, ...extra },
  });
  const got = injectedNamespaces([
    ns("shop"),
    ns(NAMESPACE),
    ns("excluded", { labels: { [Annotations.admissionWebhooks]: "disabled" } }),
    ns("leaving", { deletionTimestamp: "2026-01-01T00:00:00Z" }),
    { metadata: { name: "plain" } },
  ]);
  assert.deepEqual(got.map((n) => n.metadata.name), ["shop"]);
});

Deno.test("a running meshed pod whose proxy is not ready is reported; other namespaces' pods count", () => {
  const { running, unready } = unreadyProxies([
    pod("ok"),
    pod("stuck", { ready: false }),
    pod("starting", { phase: "Pending", ready: false }),
    pod("destination", { ns: NAMESPACE, ready: false }),
  ]);
  assert.equal(running, 2);
  assert.deepEqual(unready.map((p) => p.metadata.name), ["stuck"]);
});

Deno.test("running pods without a proxy are unmeshed unless host-network or opted out", () => {
  const hostNet = { ...pod("node-agent", { proxy: false }), spec: { containers: [], hostNetwork: true } };
  const optedOut = pod("batch", { proxy: false });
  (optedOut.metadata as Record<string, unknown>).annotations = { [Annotations.inject]: "disabled" };
  const got = unmeshedPods([pod("meshed"), pod("early", { proxy: false }), hostNet, optedOut]);
  assert.deepEqual(got.map((p) => p.metadata.name), ["early"]);
});
