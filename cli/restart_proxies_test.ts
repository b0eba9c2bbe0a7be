import assert from "node:assert/strict";
import { RESTARTED_AT } from "./restart_plan.ts";
import { type RestartApi, restartProxies } from "./restart_proxies.ts";
import { recordingContext } from "./testing.ts";

/**
 * A fake API with meshed Deployments a, b, c in namespace n: a patched Deployment's rollout finishes after
 * `rollsAfter` GETs (never, for a name in `stuck`).
 */
function fakeApi(names: string[], stuck: string[] = [], rollsAfter = 2) {
  const log: string[] = [];
  const gets = new Map<string, number>();
  const api: RestartApi = {
    list: (c, ns, selector) => {
      log.push(`list ${c} ${ns ?? "*"}${selector ? ` ${selector}` : ""}`);
      if (c === "deployments") {
        return Promise.resolve(names.map((n) => ({ metadata: { namespace: "n", name: n } })));
      }
      if (c === "replicasets") {
        return Promise.resolve(names.map((n) => ({
          metadata: {
            namespace: "n",
            name: `${n}-1`,
            ownerReferences: [{ kind: "Deployment", name: n, controller: true }],
          },
        })));
      }
      if (c === "pods") {
        return Promise.resolve(names.map((n) => ({
          metadata: {
            namespace: "n",
            name: `${n}-1-x`,
            ownerReferences: [{ kind: "ReplicaSet", name: `${n}-1` }],
          },
          spec: { containers: [{ name: "linkerd-proxy" }] },
          status: { phase: "Running" },
        })));
      }
      return Promise.resolve([]);
    },
    patch: (w, body) => {
      assert.ok(JSON.parse(body).spec.template.metadata.annotations[RESTARTED_AT]);
      log.push(`patch ${w.name}`);
      gets.set(w.name, 0);
      return Promise.resolve({});
    },
    get: (w) => {
      const n = (gets.get(w.name) ?? 0) + 1;
      gets.set(w.name, n);
      const done = !stuck.includes(w.name) && n >= rollsAfter;
      return Promise.resolve({
        metadata: { generation: 2 },
        spec: { replicas: 2 },
        status: {
          observedGeneration: 2,
          replicas: 2,
          updatedReplicas: done ? 2 : 1,
          availableReplicas: done ? 2 : 1,
        },
      });
    },
  };
  return { api, log };
}

const clock = () => {
  let t = 0;
  return { now: () => t, sleep: (ms: number) => (t += ms, Promise.resolve()) };
};

const base = { namespace: "n", batch: 2, timeoutMs: 60_000, dryRun: false };

Deno.test("restart-proxies: patches a batch, waits for its rollouts, then the next batch", async () => {
  const { api, log } = fakeApi(["a", "b", "c"]);
  const ctx = recordingContext();
  assert.equal(await restartProxies({ ...base, selector: "app" }, ctx, { api, ...clock() }), 0);
  const order = log.filter((l) => l.startsWith("patch"));
  assert.deepEqual(order, ["patch a", "patch b", "patch c"]);
  assert.ok(log.includes("list deployments n app"), "the selector applies to the workloads");
  // c is patched only after a and b rolled out (each needed 2 GETs).
  const out = ctx.stdout.join("");
  assert.match(out, /3 meshed workloads in namespace n matching app, 2 batches of up to 2\n/);
  assert.match(out, /batch 1\/2: deployment\/a, deployment\/b rolled out in 1\.0s\n/);
  assert.match(out, /batch 2\/2: deployment\/c rolled out in 1\.0s\n/);
  assert.match(out, /restarted 3 workloads in 2\.0s\n/);
});

Deno.test("restart-proxies: a batch that does not roll out in time stops, naming the workload and the rest", async () => {
  const { api, log } = fakeApi(["a", "b", "c"], ["b"]);
  const ctx = recordingContext();
  assert.equal(await restartProxies({ ...base, timeoutMs: 10_000 }, ctx, { api, ...clock() }), 1);
  assert.deepEqual(log.filter((l) => l.startsWith("patch")), ["patch a", "patch b"], "c is never restarted");
  assert.equal(
    ctx.stderr.at(-1),
    "batch 1/2: n/deployment/b (1 of 2 new replicas updated) did not finish rolling out within 10.0s; " +
      "not restarted: deployment/c. See kubectl -n n rollout status deployment/b",
  );
});

Deno.test("restart-proxies: --dry-run lists the batches and patches nothing; nothing meshed is not an error", async () => {
  const { api, log } = fakeApi(["a", "b", "c"]);
  const ctx = recordingContext();
  assert.equal(
    await restartProxies({ ...base, namespace: undefined, dryRun: true }, ctx, { api, ...clock() }),
    0,
  );
  assert.deepEqual(log.filter((l) => l.startsWith("patch")), []);
  assert.deepEqual(ctx.stdout, [
    "3 meshed workloads in every namespace, 2 batches of up to 2 (dry run: nothing restarted)\n",
    "batch 1/2: n/deployment/a, n/deployment/b\n",
    "batch 2/2: n/deployment/c\n",
  ]);
  const empty = recordingContext();
  assert.equal(await restartProxies(base, empty, { api: fakeApi([]).api, ...clock() }), 0);
  assert.deepEqual(empty.stdout, [
    "no meshed Deployment, StatefulSet or DaemonSet in namespace n: nothing to restart\n",
  ]);
});
