import assert from "node:assert/strict";
import { UsageError } from "./context.ts";
import { parseFlags } from "./flags.ts";
import {
  batches,
  RESTART_FLAGS,
  RESTARTED_AT,
  restartOptions,
  restartPatch,
  rolloutState,
  selectMeshed,
} from "./restart_plan.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const opts = (...args: string[]) => restartOptions(parseFlags(args, RESTART_FLAGS), () => "ctx-ns");

Deno.test("restart-proxies flags: defaults, -n, -A, -l, --batch, --timeout, --dry-run", () => {
  assert.deepEqual(opts(), {
    namespace: "ctx-ns",
    selector: undefined,
    batch: 1,
    timeoutMs: 300_000,
    dryRun: false,
  });
  assert.deepEqual(opts("-n", "demo", "--batch=2", "--timeout=90s", "-l", "app in (web,api)", "--dry-run"), {
    namespace: "demo",
    selector: "app in (web,api)",
    batch: 2,
    timeoutMs: 90_000,
    dryRun: true,
  });
  assert.equal(opts("-A").namespace, undefined);
  assert.equal(opts("--all-namespaces", "--batch", "10").batch, 10);
});

Deno.test("restart-proxies flags: bad combinations and values are usage errors naming the flag", () => {
  const cases: [string[], RegExp][] = [
    [["-n", "a", "-A"], /-n and --all-namespaces exclude each other/],
    [["--batch=0"], /--batch: "0" is not a whole number of workloads/],
    [["--batch=two"], /--batch: "two"/],
    [["--batch=1.5"], /--batch: "1.5"/],
    [["--timeout=soon"], /--timeout: "soon" is not a duration/],
    [["--timeout=0s"], /--timeout: "0s" must be longer than 0s/],
    [["web"], /unexpected argument "web"/],
    [["-n="], /-n: the namespace is empty/],
  ];
  for (const [args, re] of cases) {
    assert.throws(() => opts(...args), (e) => e instanceof UsageError && re.test(e.message), args.join(" "));
  }
  assert.throws(() => parseFlags(["--bogus"], RESTART_FLAGS), /unknown flag --bogus/);
});

Deno.test("batches: consecutive, the last one smaller; a batch larger than the list is one batch", () => {
  assert.deepEqual(batches([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
  assert.deepEqual(batches([1, 2, 3], 5), [[1, 2, 3]]);
  assert.deepEqual(batches([], 2), []);
  assert.throws(() => batches([1], 0), RangeError);
});

const meta = (ns: string, name: string, owner?: [string, string], extra: Json = {}) => ({
  namespace: ns,
  name,
  ...(owner ? { ownerReferences: [{ kind: owner[0], name: owner[1], controller: true }] } : {}),
  ...extra,
});
const pod = (ns: string, name: string, owner: [string, string], meshed: boolean, extra: Json = {}) => ({
  metadata: meta(ns, name, owner, extra.metadata),
  spec: {
    containers: [{ name: "app" }, ...(meshed ? [{ name: "linkerd-proxy" }] : [])],
    ...(extra.native ? { initContainers: [{ name: "linkerd-proxy", restartPolicy: "Always" }] } : {}),
  },
  status: { phase: extra.phase ?? "Running" },
});
const wl = (ns: string, name: string, spec: Json = {}) => ({ metadata: meta(ns, name), spec });

Deno.test("selectMeshed: workloads whose live pods carry the proxy, through ReplicaSets; sorted", () => {
  const deployments = [wl("b", "web"), wl("a", "api"), wl("a", "plain"), wl("a", "gone")];
  const statefulsets = [wl("a", "db", { updateStrategy: { type: "RollingUpdate" } })];
  const daemonsets = [wl("a", "agent"), wl("a", "native")];
  const replicaSets = [
    { metadata: meta("b", "web-1", ["Deployment", "web"]) },
    { metadata: meta("a", "api-1", ["Deployment", "api"]) },
    { metadata: meta("a", "plain-1", ["Deployment", "plain"]) },
    { metadata: meta("a", "gone-1", ["Deployment", "gone"]) },
  ];
  const pods = [
    pod("b", "web-1-x", ["ReplicaSet", "web-1"], true),
    pod("a", "api-1-x", ["ReplicaSet", "api-1"], true),
    pod("a", "plain-1-x", ["ReplicaSet", "plain-1"], false),
    // Only a finished or deleted pod carries the proxy: not meshed now.
    pod("a", "gone-1-x", ["ReplicaSet", "gone-1"], true, { phase: "Succeeded" }),
    pod("a", "gone-1-y", ["ReplicaSet", "gone-1"], true, { metadata: { deletionTimestamp: "x" } }),
    pod("a", "db-0", ["StatefulSet", "db"], true),
    pod("a", "agent-q", ["DaemonSet", "agent"], true),
    pod("a", "native-q", ["DaemonSet", "native"], false, { native: true }),
    pod("a", "lone", ["Job", "x"], true),
  ];
  const s = selectMeshed(
    [
      { kind: "Deployment", items: deployments },
      { kind: "StatefulSet", items: statefulsets },
      { kind: "DaemonSet", items: daemonsets },
    ],
    replicaSets,
    pods,
    "weft",
  );
  assert.deepEqual(s.selected.map((w) => `${w.namespace}/${w.kind}/${w.name}`), [
    "a/Deployment/api",
    "a/StatefulSet/db",
    "a/DaemonSet/agent",
    "a/DaemonSet/native",
    "b/Deployment/web",
  ]);
  assert.deepEqual(s.skipped, []);
});

Deno.test("selectMeshed: the control plane, OnDelete and paused rollouts are skipped with the reason", () => {
  const tpl = { template: { metadata: { labels: { "linkerd.io/control-plane-component": "tap" } } } };
  const s = selectMeshed([
    {
      kind: "Deployment",
      items: [wl("weft", "weft-destination"), wl("x", "tap", tpl), wl("a", "p", { paused: true })],
    },
    { kind: "StatefulSet", items: [wl("a", "db", { updateStrategy: { type: "OnDelete" } })] },
  ], [
    { metadata: meta("weft", "d-1", ["Deployment", "weft-destination"]) },
    { metadata: meta("x", "t-1", ["Deployment", "tap"]) },
    { metadata: meta("a", "p-1", ["Deployment", "p"]) },
  ], [
    pod("weft", "d-1-a", ["ReplicaSet", "d-1"], true),
    pod("x", "t-1-a", ["ReplicaSet", "t-1"], true),
    pod("a", "p-1-a", ["ReplicaSet", "p-1"], true),
    pod("a", "db-0", ["StatefulSet", "db"], true),
  ], "weft");
  assert.deepEqual(s.selected, []);
  assert.deepEqual(s.skipped.map((x) => `${x.workload.name}: ${x.why}`), [
    "weft-destination: the control plane: `deploy` rolls it",
    "tap: the control plane: `deploy` rolls it",
    "p: its rollout is paused (kubectl rollout resume)",
    "db: updateStrategy OnDelete: its pods roll only when deleted",
  ]);
});

Deno.test("restartPatch: kubectl rollout restart's annotation on the pod template, RFC 3339 seconds", () => {
  assert.deepEqual(JSON.parse(restartPatch(new Date("2026-12-05T11:40:01.234Z"))), {
    spec: { template: { metadata: { annotations: { [RESTARTED_AT]: "2026-12-05T11:40:01Z" } } } },
  });
});

Deno.test("rolloutState: Deployment as kubectl rollout status", () => {
  const d = (status: Json, generation = 2, replicas = 2) => ({
    metadata: { generation },
    spec: { replicas },
    status,
  });
  assert.deepEqual(rolloutState("Deployment", d({ observedGeneration: 1 })), {
    state: "waiting",
    why: "the spec update is not observed yet",
  });
  assert.deepEqual(
    rolloutState("Deployment", d({ observedGeneration: 2, updatedReplicas: 1, replicas: 3 })),
    {
      state: "waiting",
      why: "1 of 2 new replicas updated",
    },
  );
  assert.deepEqual(
    rolloutState("Deployment", d({ observedGeneration: 2, updatedReplicas: 2, replicas: 3 })),
    {
      state: "waiting",
      why: "1 old replicas pending termination",
    },
  );
  assert.deepEqual(
    rolloutState(
      "Deployment",
      d({ observedGeneration: 2, updatedReplicas: 2, replicas: 2, availableReplicas: 1 }),
    ),
    { state: "waiting", why: "1 of 2 updated replicas available" },
  );
  assert.deepEqual(
    rolloutState(
      "Deployment",
      d({ observedGeneration: 2, updatedReplicas: 2, replicas: 2, availableReplicas: 2 }),
    ),
    { state: "done" },
  );
  const stuck = d({
    observedGeneration: 2,
    conditions: [{
      type: "Progressing",
      reason: "ProgressDeadlineExceeded",
      message: 'ReplicaSet "w-2" has timed out',
    }],
  });
  assert.deepEqual(rolloutState("Deployment", stuck), {
    state: "failed",
    why: 'exceeded its progress deadline: ReplicaSet "w-2" has timed out',
  });
});

Deno.test("rolloutState: StatefulSet (revisions, partition) and DaemonSet", () => {
  const sts = (status: Json, partition?: number) => ({
    metadata: { generation: 3 },
    spec: { replicas: 3, ...(partition ? { updateStrategy: { rollingUpdate: { partition } } } : {}) },
    status: { observedGeneration: 3, ...status },
  });
  assert.equal(rolloutState("StatefulSet", sts({ readyReplicas: 2 })).state, "waiting");
  assert.deepEqual(
    rolloutState(
      "StatefulSet",
      sts({ readyReplicas: 3, currentRevision: "a", updateRevision: "b", updatedReplicas: 1 }),
    ),
    {
      state: "waiting",
      why: "1 of 3 pods updated",
    },
  );
  assert.deepEqual(
    rolloutState("StatefulSet", sts({ readyReplicas: 3, currentRevision: "b", updateRevision: "b" })),
    {
      state: "done",
    },
  );
  assert.equal(
    rolloutState("StatefulSet", sts({ readyReplicas: 3, updatedReplicas: 1 }, 1)).state,
    "waiting",
  );
  assert.equal(rolloutState("StatefulSet", sts({ readyReplicas: 3, updatedReplicas: 2 }, 1)).state, "done");
  const ds = (status: Json) => ({
    metadata: { generation: 1 },
    spec: {},
    status: { observedGeneration: 1, ...status },
  });
  assert.deepEqual(rolloutState("DaemonSet", ds({ desiredNumberScheduled: 2, updatedNumberScheduled: 1 })), {
    state: "waiting",
    why: "1 of 2 pods updated",
  });
  assert.deepEqual(
    rolloutState(
      "DaemonSet",
      ds({ desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 1 }),
    ),
    { state: "waiting", why: "1 of 2 updated pods available" },
  );
  assert.deepEqual(
    rolloutState(
      "DaemonSet",
      ds({ desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2 }),
    ),
    { state: "done" },
  );
});
