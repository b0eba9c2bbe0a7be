import assert from "node:assert/strict";
import {
  API_URL,
  clusterConfig,
  CONTAINERD_SOCKET,
  workerContainerdSocket,
} from "../tests/cluster/config.ts";
import { chooseTarget, type TargetFacts } from "./target.ts";

const facts = (over: Partial<TargetFacts> = {}): TargetFacts => ({
  server: "https://api.example:6443",
  clusterName: "prod",
  exists: () => false,
  kindAvailable: () => Promise.resolve(undefined),
  ...over,
});

Deno.test("the local cluster is recognised by its API server and containerd socket", async () => {
  const t = await chooseTarget({}, facts({ server: API_URL, exists: (p) => p === CONTAINERD_SOCKET }));
  assert.equal(t.kind, "containerd");
  assert.equal(t.kind === "containerd" && t.socket, CONTAINERD_SOCKET);
  assert.deepEqual(t.kind === "containerd" && t.alsoSockets, []);
});

Deno.test("the local cluster's worker nodes get the image in their own containerd too", async () => {
  const present = [CONTAINERD_SOCKET, workerContainerdSocket(1), workerContainerdSocket(3)];
  const t = await chooseTarget({}, facts({ server: API_URL, exists: (p) => present.includes(p) }));
  assert.equal(t.kind === "containerd" && t.socket, CONTAINERD_SOCKET);
  assert.deepEqual(t.kind === "containerd" && t.alsoSockets, [
    workerContainerdSocket(1),
    workerContainerdSocket(3),
  ]);
});

Deno.test("the local east cluster gets the image in its own containerd, west's untouched", async () => {
  const east = clusterConfig("east");
  const present = [CONTAINERD_SOCKET, workerContainerdSocket(1), east.containerdSocket];
  const t = await chooseTarget({}, facts({ server: east.apiUrl, exists: (p) => present.includes(p) }));
  assert.equal(t.kind, "containerd");
  assert.equal(t.kind === "containerd" && t.socket, "/run/weft-cluster-east/containerd.sock");
  assert.deepEqual(t.kind === "containerd" && t.alsoSockets, []);
  // East's API URL without its runtime on this machine is no local cluster.
  await assert.rejects(
    chooseTarget({}, facts({ server: east.apiUrl, exists: (p) => p === CONTAINERD_SOCKET })),
    /cannot tell how to get the image/,
  );
});

Deno.test("kind: from the kubeconfig's cluster name or --kind, and a clear error without Docker", async () => {
  const auto = await chooseTarget({}, facts({ clusterName: "kind-dev" }));
  assert.deepEqual(auto, { kind: "kind", cluster: "dev", why: 'kubeconfig cluster "kind-dev"' });
  assert.equal((await chooseTarget({ kind: "other" }, facts())).kind, "kind");
  await assert.rejects(
    chooseTarget({ kind: true }, facts({ kindAvailable: () => Promise.resolve("no Docker engine answers") })),
    /--kind needs kind, but no Docker engine answers: install kind and start Docker/,
  );
});

Deno.test("an unknown cluster needs a flag; --no-image-load and --containerd are taken as said", async () => {
  await assert.rejects(
    chooseTarget({}, facts()),
    /cannot tell how to get the image into the cluster at https:\/\/api\.example:6443/,
  );
  assert.equal((await chooseTarget({ noImageLoad: true }, facts())).kind, "none");
  await assert.rejects(chooseTarget({ containerd: "/nope.sock" }, facts()), /no such socket/);
  assert.equal(
    (await chooseTarget({ containerd: "/c.sock" }, facts({ exists: () => true }))).kind,
    "containerd",
  );
});
