import assert from "node:assert/strict";
import { type PodLike, selectTargets } from "./targets.ts";

function pod(
  name: string,
  o: { ns?: string; rs?: string; hash?: string; meshed?: string; ip?: string; phase?: string } = {},
): PodLike {
  return {
    metadata: {
      name,
      namespace: o.ns ?? "a",
      labels: {
        ...(o.hash ? { "pod-template-hash": o.hash } : {}),
        ...(o.meshed !== "" ? { "linkerd.io/control-plane-ns": o.meshed ?? "weft" } : {}),
      },
      ownerReferences: o.rs ? [{ kind: "ReplicaSet", name: o.rs, controller: true }] : [],
    },
    status: { phase: o.phase ?? "Running", podIP: o.ip ?? "10.0.0.1" },
  };
}

Deno.test("a Deployment's pods are those of its ReplicaSets (name-hash), meshed by this control plane, running", () => {
  const pods = [
    pod("web-7f-b", { rs: "web-7f", hash: "7f", ip: "10.0.0.2" }),
    pod("web-7f-a", { rs: "web-7f", hash: "7f", ip: "10.0.0.1" }),
    // web-api's ReplicaSet "web-api-7f" is not web's even though it starts with "web-".
    pod("web-api-7f-x", { rs: "web-api-7f", hash: "7f" }),
    pod("web-7f-c", { rs: "web-7f", hash: "7f", ns: "b" }),
    pod("web-7f-d", { rs: "web-7f", hash: "7f", phase: "Pending" }),
  ];
  const s = selectTargets(pods, { namespace: "a", kind: "deployment", name: "web" }, "weft");
  assert.deepEqual(s, {
    kind: "ok",
    targets: [{ namespace: "a", name: "web-7f-a", ip: "10.0.0.1" }, {
      namespace: "a",
      name: "web-7f-b",
      ip: "10.0.0.2",
    }],
  });
});

Deno.test("no tappable pods: the reason says which (none, none running, none meshed here)", () => {
  const ref = { namespace: "a", kind: "deployment", name: "web" } as const;
  assert.deepEqual(selectTargets([], ref, "weft"), {
    kind: "none",
    message: "no pods found for deployment a/web",
  });
  assert.match(
    (selectTargets([pod("web-1-a", { rs: "web-1", hash: "1", phase: "Pending" })], ref, "weft") as {
      message: string;
    })
      .message,
    /no running pods with an address for deployment a\/web \(1 found\)/,
  );
  assert.match(
    (selectTargets([pod("web-1-a", { rs: "web-1", hash: "1", meshed: "linkerd" })], ref, "weft") as {
      message: string;
    })
      .message,
    /no pods of deployment a\/web are meshed by the control plane in weft \(1 running\)/,
  );
  const ns = selectTargets([pod("x"), pod("y", { meshed: "" })], {
    namespace: "a",
    kind: "namespace",
    name: "",
  }, "weft");
  assert.deepEqual(ns, { kind: "ok", targets: [{ namespace: "a", name: "x", ip: "10.0.0.1" }] });
  const one = selectTargets([pod("x"), pod("y")], { namespace: "a", kind: "pod", name: "y" }, "weft");
  assert.deepEqual(one, { kind: "ok", targets: [{ namespace: "a", name: "y", ip: "10.0.0.1" }] });
});

Deno.test("a StatefulSet's, DaemonSet's or Job's pods are those it controls, by name and kind", () => {
  const owned = (name: string, kind: string, owner: string, controller = true): PodLike => ({
    ...pod(name),
    metadata: { ...pod(name).metadata, ownerReferences: [{ kind, name: owner, controller }] },
  });
  const pods = [
    owned("db-0", "StatefulSet", "db"),
    owned("db-1", "StatefulSet", "db"),
    owned("db-x", "DaemonSet", "db"),
    owned("dbx-0", "StatefulSet", "dbx"),
    owned("agent-a", "DaemonSet", "agent"),
    owned("migrate-q", "Job", "migrate"),
    // Owned but not controlled (e.g. adopted by a tool): not the StatefulSet's pod.
    owned("db-9", "StatefulSet", "db", false),
  ];
  const names = (kind: "statefulset" | "daemonset" | "job", name: string) => {
    const s = selectTargets(pods, { namespace: "a", kind, name }, "weft");
    return s.kind === "ok" ? s.targets.map((t) => t.name) : s.message;
  };
  assert.deepEqual(names("statefulset", "db"), ["db-0", "db-1"]);
  assert.deepEqual(names("daemonset", "db"), ["db-x"]);
  assert.deepEqual(names("daemonset", "agent"), ["agent-a"]);
  assert.deepEqual(names("job", "migrate"), ["migrate-q"]);
  assert.equal(names("job", "db"), "no pods found for job a/db");
});
