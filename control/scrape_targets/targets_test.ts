import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { allTargets, type PodLike, podTargets, sanitizeLabelName, slimPod } from "./targets.ts";

function pod(over: Partial<PodLike["status"]> = {}): PodLike {
  return {
    metadata: {
      name: "web-7d9-abc",
      namespace: "shop",
      uid: "u-1",
      labels: { app: "web", "linkerd.io/proxy-deployment": "web", "linkerd.io/control-plane-ns": "weft" },
      annotations: { "linkerd.io/inject": "enabled" },
      ownerReferences: [{ kind: "ReplicaSet", name: "web-7d9", controller: true }],
    },
    spec: {
      nodeName: "node-1",
      initContainers: [{
        name: "linkerd-proxy",
        image: "localhost/weft:dev",
        ports: [{ name: "linkerd-proxy", containerPort: 4143 }, {
          name: "linkerd-admin",
          containerPort: 4191,
        }],
      }, { name: "linkerd-init", image: "localhost/weft:dev" }],
      containers: [{ name: "web", image: "web:1", ports: [{ name: "http", containerPort: 8080 }] }, {
        name: "sleeper",
      }],
    },
    status: { phase: "Running", podIP: "10.0.0.7", conditions: [{ type: "Ready", status: "True" }], ...over },
  };
}

Deno.test("label keys become Prometheus label names as Kubernetes discovery writes them", () => {
  assertEquals(sanitizeLabelName("linkerd.io/proxy-deployment"), "linkerd_io_proxy_deployment");
  assertEquals(sanitizeLabelName("app.kubernetes.io/name"), "app_kubernetes_io_name");
});

Deno.test("one target per declared port, init containers (native sidecars) included and marked", () => {
  const groups = podTargets(pod());
  assertEquals(groups.map((g) => g.targets[0]), [
    "10.0.0.7:4143",
    "10.0.0.7:4191",
    "10.0.0.7:8080",
    "10.0.0.7", // a regular container without ports: one portless target, as Prometheus does
  ]);
  const admin = groups[1].labels;
  assertEquals(admin.__meta_kubernetes_pod_container_name, "linkerd-proxy");
  assertEquals(admin.__meta_kubernetes_pod_container_port_name, "linkerd-admin");
  assertEquals(admin.__meta_kubernetes_pod_container_port_number, "4191");
  assertEquals(admin.__meta_kubernetes_pod_container_port_protocol, "TCP");
  assertEquals(admin.__meta_kubernetes_pod_container_init, "true");
  assertEquals(admin.__meta_kubernetes_namespace, "shop");
  assertEquals(admin.__meta_kubernetes_pod_name, "web-7d9-abc");
  assertEquals(admin.__meta_kubernetes_pod_phase, "Running");
  assertEquals(admin.__meta_kubernetes_pod_ready, "true");
  assertEquals(admin.__meta_kubernetes_pod_label_linkerd_io_proxy_deployment, "web");
  assertEquals(admin.__meta_kubernetes_pod_labelpresent_app, "true");
  assertEquals(admin.__meta_kubernetes_pod_annotation_linkerd_io_inject, "enabled");
  assertEquals(admin.__meta_kubernetes_pod_controller_kind, "ReplicaSet");
  assertEquals(admin.__meta_kubernetes_pod_controller_name, "web-7d9");
  assertEquals(groups[2].labels.__meta_kubernetes_pod_container_init, "false");
});

Deno.test("a pod without an IP has nothing to scrape; IPv6 addresses are bracketed", () => {
  assertEquals(podTargets(pod({ podIP: undefined, phase: "Pending" })), []);
  assertEquals(podTargets(pod({ podIP: "fd00::7" }))[0].targets, ["[fd00::7]:4143"]);
});

Deno.test("all targets come in a stable order whatever the cache order", () => {
  const a = pod();
  const b = structuredClone(a);
  b.metadata.name = "aaa";
  b.status!.podIP = "10.0.0.8";
  assertEquals(allTargets([a, b]), allTargets([b, a]));
  assertEquals(allTargets([a, b])[0].labels.__meta_kubernetes_pod_name, "aaa");
});

Deno.test("the cache keeps only what targets are made of, and the targets are the same", () => {
  const full = pod() as PodLike & { spec: Record<string, unknown>; status: Record<string, unknown> };
  full.spec.volumes = [{ name: "big", emptyDir: {} }];
  (full.spec.containers as unknown as Record<string, unknown>[])[0].env = [{
    name: "SECRET_LOOKING",
    value: "x".repeat(1000),
  }];
  full.status.containerStatuses = [{ name: "web", ready: true }];
  const slim = slimPod(full);
  assertEquals(podTargets(slim), podTargets(full));
  assertEquals(JSON.stringify(slim).includes("SECRET_LOOKING"), false);
  assertEquals("volumes" in (slim.spec as object), false);
  assertEquals("containerStatuses" in (slim.status as object), false);
});
