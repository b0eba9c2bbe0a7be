import assert from "node:assert/strict";
import { KubeConfig } from "@kubernetes/client-node";
import { KubeApiSource } from "./api_source.ts";
import { ApiError, GoneError } from "./event_source.ts";
import type { KubeObject, WatchEvent } from "./types.ts";

// The HTTP framing of list and watch against a loopback server that answers as the API server
// does; the same code runs against a real one in informer_cluster_test.ts.

interface Seen {
  url: URL;
  accept: string | null;
  auth: string | null;
}

function serve(
  handler: (req: Request, url: URL) => Response,
): { kc: KubeConfig; seen: Seen[]; close: () => Promise<void> } {
  const seen: Seen[] = [];
  const ctrl = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: ctrl.signal, onListen: () => {} },
    (req) => {
      const url = new URL(req.url);
      seen.push({ url, accept: req.headers.get("accept"), auth: req.headers.get("authorization") });
      return handler(req, url);
    },
  );
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${server.addr.port}`, skipTLSVerify: true }],
    users: [{ name: "u", token: "secret-token" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return {
    kc,
    seen,
    close: async () => {
      ctrl.abort();
      await server.finished;
    },
  };
}

function chunked(parts: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    async pull(c) {
      const p = parts.shift();
      if (p === undefined) return c.close();
      await new Promise((r) => setTimeout(r, 2));
      c.enqueue(enc.encode(p));
    },
  });
}

Deno.test("list sends selectors, paging and the metadata-only Accept header; watch splits lines across chunks", async () => {
  const s = serve((_req, url) => {
    if (url.searchParams.get("watch") === "true") {
      const a = JSON.stringify({ type: "ADDED", object: { metadata: { name: "a", resourceVersion: "11" } } });
      const b = JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: "12" } } });
      // One event split in the middle, two in one chunk.
      return new Response(chunked([a.slice(0, 10), a.slice(10) + "\n" + b + "\n", "\n"]));
    }
    return Response.json({
      kind: "PartialObjectMetadataList",
      metadata: { resourceVersion: "10", continue: "tok" },
      items: [{ metadata: { name: "x", namespace: "n" } }],
    });
  });
  try {
    const src = new KubeApiSource<KubeObject>(s.kc, {
      group: "apps",
      version: "v1",
      plural: "replicasets",
      namespace: "n",
      labelSelector: "a=b",
      metadataOnly: true,
    });
    const signal = new AbortController().signal;
    const page = await src.list({ limit: 7, signal });
    assert.deepEqual(page, {
      items: [{ metadata: { name: "x", namespace: "n" } }],
      resourceVersion: "10",
      continue: "tok",
    });
    assert.equal(s.seen[0].url.pathname, "/apis/apps/v1/namespaces/n/replicasets");
    assert.equal(s.seen[0].url.searchParams.get("limit"), "7");
    assert.equal(s.seen[0].url.searchParams.get("labelSelector"), "a=b");
    assert.match(s.seen[0].accept!, /^application\/json;as=PartialObjectMetadataList;g=meta\.k8s\.io;v=v1/);
    assert.equal(s.seen[0].auth, "Bearer secret-token");
    const events: WatchEvent<KubeObject>[] = [];
    await src.watch({ resourceVersion: "10", timeoutSeconds: 5, signal }, (e) => events.push(e));
    assert.deepEqual(events.map((e) => [e.type, e.object.metadata.resourceVersion]), [["ADDED", "11"], [
      "BOOKMARK",
      "12",
    ]]);
    const w = s.seen[1].url.searchParams;
    assert.deepEqual([w.get("resourceVersion"), w.get("allowWatchBookmarks"), w.get("timeoutSeconds")], [
      "10",
      "true",
      "5",
    ]);
    assert.match(s.seen[1].accept!, /as=PartialObjectMetadata;/);
  } finally {
    await s.close();
  }
});

Deno.test("410 as a status or as a watch ERROR event is GoneError; other failures are ApiError with the message", async () => {
  const s = serve((_req, url) => {
    if (url.pathname.endsWith("/pods")) {
      return new Response(
        chunked([
          JSON.stringify({
            type: "ERROR",
            object: { kind: "Status", code: 410, message: "too old resource version: 1 (50)" },
          }) + "\n",
        ]),
      );
    }
    if (url.pathname.endsWith("/services")) {
      return Response.json({ kind: "Status", code: 410, message: "expired continue" }, { status: 410 });
    }
    return Response.json({
      kind: "Status",
      code: 403,
      message: 'services is forbidden: User "u" cannot list',
    }, { status: 403 });
  });
  try {
    const signal = new AbortController().signal;
    const pods = new KubeApiSource<KubeObject>(s.kc, { group: "", version: "v1", plural: "pods" });
    await assert.rejects(
      pods.watch({ resourceVersion: "1", timeoutSeconds: 5, signal }, () => {}),
      (e) => e instanceof GoneError && /too old resource version/.test(e.message),
    );
    const svcs = new KubeApiSource<KubeObject>(s.kc, { group: "", version: "v1", plural: "services" });
    await assert.rejects(svcs.list({ signal }), GoneError);
    const eps = new KubeApiSource<KubeObject>(s.kc, {
      group: "discovery.k8s.io",
      version: "v1",
      plural: "endpointslices",
    });
    await assert.rejects(
      eps.list({ signal }),
      (e) =>
        e instanceof ApiError && e.statusCode === 403 &&
        /list discovery\.k8s\.io\/v1\/endpointslices: HTTP 403: services is forbidden/.test(e.message),
    );
  } finally {
    await s.close();
  }
});

Deno.test("an aborted watch resolves instead of failing", async () => {
  const s = serve(() => new Response(new ReadableStream({ start() {} })));
  try {
    const ctrl = new AbortController();
    const src = new KubeApiSource<KubeObject>(s.kc, { group: "", version: "v1", plural: "pods" });
    const p = src.watch({ resourceVersion: "1", timeoutSeconds: 5, signal: ctrl.signal }, () => {});
    await new Promise((r) => setTimeout(r, 50));
    ctrl.abort();
    await p;
  } finally {
    await s.close();
  }
});
