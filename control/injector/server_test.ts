/**
 * The injector end to end in-process: real AdmissionReviews over HTTPS (certificate from a test
 * CA, served from a kubelet-style Secret directory), namespaces from a FakeEventSource-fed
 * informer, the admin server's readiness and metrics.
 */
import assert from "node:assert/strict";
import type { V1Container, V1Pod } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { FakeEventSource, Informer } from "../k8s/mod.ts";
import { testCa, writeLikeKubelet } from "../webhook/testing/pki.ts";
import { defaultInjectorConfig } from "./config.ts";
import type { NamespaceObject } from "./namespace_cache.ts";
import { type InjectorServer, startInjector } from "./server.ts";
import { applyPatch } from "./testing/json_patch.ts";
import { parseTrustAnchors } from "./trust_anchors.ts";

type Ca = Awaited<ReturnType<typeof testCa>>;

interface Harness {
  server: InjectorServer;
  namespaces: FakeEventSource<NamespaceObject>;
  ca: Ca;
  dir: string;
  anchorsFile: string;
  inject(body: unknown): Promise<{ status: number; json: Record<string, unknown> }>;
  raw(method: string, path: string, body?: string): Promise<{ status: number; text: string }>;
  admin(path: string): Promise<{ status: number; text: string }>;
}

const ns = (name: string, annotations: Record<string, string> = {}): NamespaceObject => ({
  metadata: { name, annotations },
});

async function withInjector(
  opts: { native: boolean; failLists?: number; maxBodyBytes?: number },
  fn: (h: Harness) => Promise<void>,
): Promise<void> {
  const ca = await testCa();
  const dir = await Deno.makeTempDir({ prefix: "weft-injector-test-" });
  const leaf = await ca.issue("weft-proxy-injector");
  await writeLikeKubelet(dir, { "tls.crt": leaf.cert, "tls.key": leaf.key });
  const anchorsFile = `${dir}/ca-bundle.crt`;
  await Deno.writeTextFile(anchorsFile, ca.caPem);
  const namespaces = new FakeEventSource<NamespaceObject>("v1/namespaces");
  namespaces.apply(ns("meshed", { "linkerd.io/inject": "enabled" }));
  namespaces.apply(ns("plain"));
  for (let i = 0; i < (opts.failLists ?? 0); i++) {
    namespaces.failNextLists(new Error("API server unavailable"));
  }
  const ac = new AbortController();
  const logs: string[] = [];
  const anchors = parseTrustAnchors(ca.caPem, anchorsFile);
  const server = await startInjector({
    webhook: {
      hostname: "127.0.0.1",
      port: 0,
      certFile: `${dir}/tls.crt`,
      keyFile: `${dir}/tls.key`,
      reloadIntervalMs: 30,
      maxBodyBytes: opts.maxBodyBytes,
    },
    admin: { hostname: "127.0.0.1", port: 0 },
    config: { ...defaultInjectorConfig(anchors.pem), version: "v-test", nativeSidecars: opts.native },
    namespaces: new Informer<NamespaceObject>({
      name: "namespaces",
      source: namespaces,
      backoff: { initialMs: 150, maxMs: 150 },
      log: (m) => logs.push(m),
    }),
    namespaceWaitMs: 2000,
    trustAnchors: { file: anchorsFile, current: anchors, reloadIntervalMs: 30 },
    registry: new Registry(),
    signal: ac.signal,
    log: (m) => logs.push(m),
  });
  const client = Deno.createHttpClient({ caCerts: [ca.caPem] });
  const raw = async (method: string, path: string, body?: string) => {
    const res = await fetch(`https://127.0.0.1:${server.webhook.port}${path}`, {
      method,
      body,
      headers: { "content-type": "application/json" },
      client,
    });
    return { status: res.status, text: await res.text() };
  };
  try {
    await fn({
      server,
      namespaces,
      ca,
      dir,
      anchorsFile,
      raw,
      async inject(body) {
        const r = await raw("POST", "/inject", JSON.stringify(body));
        return { status: r.status, json: JSON.parse(r.text) };
      },
      async admin(path) {
        const res = await fetch(`http://127.0.0.1:${server.adminPort}${path}`);
        return { status: res.status, text: await res.text() };
      },
    });
  } finally {
    client.close();
    ac.abort();
    await server.finished;
    await Deno.remove(dir, { recursive: true });
    await ca.close();
  }
}

let uid = 0;
function podReview(namespace: string, annotations: Record<string, string> = {}) {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: `req-${++uid}`,
      kind: { group: "", version: "v1", kind: "Pod" },
      resource: { group: "", version: "v1", resource: "pods" },
      namespace,
      operation: "CREATE",
      object: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          generateName: "web-6f7d9-",
          namespace,
          annotations,
          labels: { app: "web", "pod-template-hash": "6f7d9" },
          ownerReferences: [{
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            name: "web-6f7d9",
            uid: "1",
            controller: true,
          }],
        },
        spec: {
          serviceAccountName: "web",
          containers: [{ name: "web", image: "localhost/weft:dev", ports: [{ containerPort: 8080 }] }],
        },
      },
    },
  };
}

function patched(review: ReturnType<typeof podReview>, response: Record<string, unknown>): V1Pod {
  const r = response.response as { patch?: string; patchType?: string; uid: string };
  assert.equal(r.uid, review.request.uid);
  assert.equal(r.patchType, "JSONPatch", `no patch in ${JSON.stringify(response)}`);
  return applyPatch(review.request.object as V1Pod, JSON.parse(atob(r.patch!)));
}

const envOf = (c: V1Container, name: string) => c.env?.find((e) => e.name === name)?.value;

Deno.test("HTTPS admission injects a native sidecar for a pod in an annotated namespace", async () => {
  await withInjector({ native: true }, async (h) => {
    const review = podReview("meshed");
    const res = await h.inject(review);
    assert.equal(res.status, 200);
    assert.equal((res.json.response as { allowed: boolean }).allowed, true);
    const pod = patched(review, res.json);
    assert.deepEqual(pod.spec!.initContainers!.map((c) => c.name), ["linkerd-init", "linkerd-proxy"]);
    const proxy = pod.spec!.initContainers![1];
    assert.equal(proxy.restartPolicy, "Always");
    assert.equal(proxy.startupProbe?.httpGet?.path, "/ready");
    assert.deepEqual(proxy.command, ["weft-proxy"]);
    assert.equal(envOf(proxy, "LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS"), h.ca.caPem);
    assert.deepEqual(pod.spec!.containers.map((c) => c.name), ["web"]);
    assert.equal(pod.metadata!.annotations!["linkerd.io/proxy-version"], "v-test");

    // A pod in a namespace without the annotation is admitted untouched.
    const plain = await h.inject(podReview("plain"));
    assert.equal((plain.json.response as { patch?: string }).patch, undefined);

    const metrics = (await h.admin("/metrics")).text;
    assert.match(
      metrics,
      /proxy_inject_admission_requests_total\{owner_kind="replicaset",namespace="meshed",annotation_at="namespace"\} 1/,
    );
    assert.match(
      metrics,
      /proxy_inject_admission_responses_total\{[^}]*namespace="meshed"[^}]*skip="false"[^}]*\} 1/,
    );
    assert.match(
      metrics,
      /proxy_inject_admission_responses_total\{[^}]*namespace="plain"[^}]*skip="true",skip_reason="injection_enable_annotation_absent"\} 1/,
    );
    assert.equal((await h.admin("/ready")).status, 200);
  });
});

Deno.test("classic mode puts the proxy first with the await hook, and the namespace cache follows changes", async () => {
  await withInjector({ native: false }, async (h) => {
    // The namespace is annotated after the injector started: the informer's cache sees it.
    h.namespaces.apply(ns("plain", { "linkerd.io/inject": "enabled" }));
    const deadline = Date.now() + 2000;
    let pod: V1Pod | undefined;
    while (!pod && Date.now() < deadline) {
      const review = podReview("plain");
      const res = await h.inject(review);
      if ((res.json.response as { patch?: string }).patch) pod = patched(review, res.json);
      else await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(pod, "the namespace annotation never reached the cache");
    assert.deepEqual(pod.spec!.initContainers!.map((c) => c.name), ["linkerd-init"]);
    const proxy = pod.spec!.containers[0];
    assert.equal(proxy.name, "linkerd-proxy");
    assert.equal(proxy.restartPolicy, undefined);
    assert.deepEqual(proxy.lifecycle?.postStart?.exec?.command, [
      "weft-await",
      "--timeout=120s",
      "--port=4191",
    ]);
    assert.deepEqual(pod.spec!.containers.map((c) => c.name), ["linkerd-proxy", "web"]);

    // A namespace created just before its first pod: the admission waits for the watch event.
    const review = podReview("fresh");
    const pending = h.inject(review);
    await new Promise((r) => setTimeout(r, 100));
    h.namespaces.apply(ns("fresh", { "linkerd.io/inject": "enabled" }));
    const fresh = patched(review, (await pending).json);
    assert.equal(fresh.spec!.containers[0].name, "linkerd-proxy");
    assert.match(
      (await h.admin("/metrics")).text,
      /proxy_inject_namespace_cache_misses_total\{outcome="arrived"\} 1/,
    );
  });
});

Deno.test("until the namespace cache has synced, /inject answers 503 and the injector is not ready", async () => {
  await withInjector({ native: true, failLists: 1 }, async (h) => {
    const early = await h.raw("POST", "/inject", JSON.stringify(podReview("meshed")));
    assert.equal(early.status, 503);
    assert.deepEqual(JSON.parse(early.text), { error: "namespace cache not synced yet" });
    const ready = await h.admin("/ready");
    assert.equal(ready.status, 503);
    assert.match(ready.text, /namespaces: namespace cache not synced/);
    const deadline = Date.now() + 3000;
    while ((await h.admin("/ready")).status !== 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal((await h.admin("/ready")).status, 200);
    assert.equal((await h.inject(podReview("meshed"))).status, 200);
  });
});

Deno.test("bad requests get a clear error and the injector keeps serving", async () => {
  await withInjector({ native: true, maxBodyBytes: 64 * 1024 }, async (h) => {
    const corpus: [string, string, string, number, RegExp][] = [
      ["not JSON", "POST", "{kind: AdmissionReview", 400, /^request body is not JSON: /],
      ["empty body", "POST", "", 400, /request body is empty/],
      [
        "a JSON array",
        "POST",
        "[1,2]",
        400,
        /^bad AdmissionReview: kind is undefined, want AdmissionReview$/,
      ],
      ["a JSON string", "POST", '"hello"', 400, /^bad AdmissionReview: body is not a JSON object$/],
      [
        "wrong kind",
        "POST",
        JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "Pod" }),
        400,
        /kind is "Pod", want AdmissionReview/,
      ],
      [
        "v1beta1 review",
        "POST",
        JSON.stringify({ ...podReview("meshed"), apiVersion: "admission.k8s.io/v1beta1" }),
        400,
        /apiVersion is "admission\.k8s\.io\/v1beta1", want admission\.k8s\.io\/v1/,
      ],
      [
        "no uid",
        "POST",
        JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: { kind: {} } }),
        400,
        /request\.uid is missing/,
      ],
      ["oversized body", "POST", JSON.stringify({ pad: "x".repeat(70 * 1024) }), 413, /exceeds 65536 bytes/],
      ["GET", "GET", "", 405, /method GET not allowed; use POST/],
    ];
    for (const [what, method, body, status, message] of corpus) {
      const res = await h.raw(method, "/inject", method === "GET" ? undefined : body);
      assert.equal(res.status, status, `${what}: ${res.text}`);
      assert.match(JSON.parse(res.text).error, message, what);
    }
    const elsewhere = await h.raw("POST", "/mutate", JSON.stringify(podReview("meshed")));
    assert.equal(elsewhere.status, 404);
    assert.match(JSON.parse(elsewhere.text).error, /no webhook at \/mutate; use \/inject/);

    // An AdmissionReview whose object is not a pod is answered (allowed: false), not an HTTP error.
    const noSpec = podReview("meshed");
    (noSpec.request.object as { spec?: unknown }).spec = undefined;
    const refused = await h.inject(noSpec);
    assert.equal(refused.status, 200);
    assert.equal((refused.json.response as { allowed: boolean }).allowed, false);

    const review = podReview("meshed");
    assert.equal(patched(review, (await h.inject(review)).json).spec!.initContainers!.length, 2);
    const metrics = (await h.admin("/metrics")).text;
    assert.match(metrics, /webhook_http_responses_total\{path="\/inject",code="400"\} 7/);
    assert.match(metrics, /webhook_http_responses_total\{path="\/inject",code="413"\} 1/);
  });
});

Deno.test("a new serving certificate and new trust anchors are picked up without a restart", async () => {
  await withInjector({ native: true }, async (h) => {
    const next = await h.ca.issue("weft-proxy-injector-rotated");
    await writeLikeKubelet(h.dir, { "tls.crt": next.cert, "tls.key": next.key });
    const other = await testCa();
    try {
      await Deno.writeTextFile(`${h.anchorsFile}.tmp`, other.caPem);
      await Deno.rename(`${h.anchorsFile}.tmp`, h.anchorsFile);
      const deadline = Date.now() + 3000;
      while (
        (h.server.webhook.reloads() === 0 || h.server.config().trustAnchorsPem !== other.caPem) &&
        Date.now() < deadline
      ) await new Promise((r) => setTimeout(r, 20));
      assert.equal(h.server.webhook.reloads(), 1);
      const review = podReview("meshed");
      const proxy = patched(review, (await h.inject(review)).json).spec!.initContainers![1];
      assert.equal(envOf(proxy, "LINKERD2_PROXY_IDENTITY_TRUST_ANCHORS"), other.caPem);
    } finally {
      await other.close();
    }
  });
});
