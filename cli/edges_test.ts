import assert from "node:assert/strict";
import { directory, edgeQueries, foldEdges, parseIdentity, renderEdges } from "./edges.ts";
import { findKind } from "./kinds.ts";
import { objectInfo, podInfo } from "./kube_objects.ts";

const D = findKind("deploy");
const id = (sa: string, ns = "demo") => `${sa}.${ns}.serviceaccount.identity.weft.cluster.local`;
const pod = (name: string, app: string, ip: string, sa = app) =>
  podInfo({
    metadata: {
      name,
      namespace: "demo",
      labels: { app, "pod-template-hash": "h1" },
      ownerReferences: [{ kind: "ReplicaSet", name: `${app}-h1` }],
    },
    spec: { serviceAccountName: sa, containers: [{ name: "linkerd-proxy" }] },
    status: { phase: "Running", podIP: ip },
  });
const pods = [
  pod("web-h1-a", "web", "10.0.0.1"),
  pod("api-h1-a", "api", "10.0.0.2"),
  pod("tcp-h1-a", "tcp", "10.0.0.3"),
  pod("tcp-load-h1-a", "tcp-load", "10.0.0.4"),
];
const svcs = [
  objectInfo({
    kind: "Service",
    metadata: { name: "tcp", namespace: "demo" },
    spec: { selector: { app: "tcp" }, clusterIP: "10.96.0.3", ports: [] },
  }),
];

Deno.test("edges: queries read both sides, grouped by the labels that name an edge", () => {
  const q = edgeQueries(D, "1m");
  assert.equal(
    q.outHttp,
    'sum(increase(request_total{direction="outbound", deployment!=""}[1m])) by (namespace, deployment, ' +
      "dst_namespace, dst_deployment, target_addr, tls, server_id, no_tls_reason)",
  );
  assert.equal(
    q.inTcpOpen,
    'sum(max_over_time(tcp_open_connections{direction="inbound", deployment!="", peer="src"}[1m])) by (namespace, ' +
      "deployment, client_id, tls, no_tls_reason)",
  );
  assert.match(q.outTcpNew, /tcp_open_total\{direction="outbound", deployment!="", peer="dst"\}/);
  assert.deepEqual(parseIdentity(id("web")), { serviceAccount: "web", namespace: "demo" });
  assert.equal(parseIdentity("spiffe://x"), undefined);
});

Deno.test("edges: HTTP by dst labels, TCP by Service IP and identity, clients by identity; plaintext with its reason", () => {
  const edges = foldEdges(D, {
    outHttp: [{
      metric: {
        namespace: "demo",
        deployment: "web",
        dst_namespace: "demo",
        dst_deployment: "api",
        tls: "true",
        server_id: id("api"),
      },
      value: 120,
    }],
    outTcpOpen: [{
      metric: {
        namespace: "demo",
        deployment: "tcp-load",
        target_addr: "10.96.0.3:7000",
        tls: "true",
        server_id: id("tcp"),
      },
      value: 1,
    }],
    outTcpNew: [{
      metric: {
        namespace: "demo",
        deployment: "web",
        target_addr: "10.9.9.9:80",
        tls: "no_identity",
        no_tls_reason: "not_provided_by_service_discovery",
      },
      value: 0,
    }],
    inHttp: [{
      metric: { namespace: "demo", deployment: "api", tls: "true", client_id: id("web") },
      value: 118,
    }],
    inTcpOpen: [
      { metric: { namespace: "demo", deployment: "tcp", tls: "true", client_id: id("tcp-load") }, value: 1 },
      {
        metric: {
          namespace: "demo",
          deployment: "web",
          tls: "no_identity",
          no_tls_reason: "no_tls_from_remote",
        },
        value: 2,
      },
    ],
    inTcpNew: [],
  }, directory(D, pods, svcs));
  const find = (s: string, d: string) => edges.find((e) => e.src.name === s && e.dst.name === d);
  assert.equal(edges.length, 3, JSON.stringify(edges));
  const webApi = find("web", "api")!;
  assert.deepEqual([webApi.client_id, webApi.server_id, webApi.secured], [id("web"), id("api"), true]);
  assert.deepEqual(webApi.seen_by, ["client", "server"]);
  const tcp = find("tcp-load", "tcp")!;
  assert.deepEqual([tcp.client_id, tcp.server_id, tcp.secured], [id("tcp-load"), id("tcp"), true]);
  const plain = find("", "web")!;
  assert.equal(plain.secured, false);
  assert.equal(plain.no_tls_reason, "no_tls_from_remote");
  const table = renderEdges(edges, false, false);
  assert.match(table, /^\(unmeshed\)\s+web\s+-\s+demo\s+× the client sent no identity\s+-\s+-$/m);
  assert.match(table, /^web\s+api\s+demo\s+demo\s+√\s+web\.demo\.serviceaccount/m);
});

Deno.test("edges: a client identity whose pods are gone is named by its service account, not merged with the unmeshed", () => {
  const edges = foldEdges(D, {
    outHttp: [],
    outTcpOpen: [],
    outTcpNew: [],
    inHttp: [{
      metric: { namespace: "demo", deployment: "web", tls: "true", client_id: id("old-job", "batch") },
      value: 3,
    }],
    inTcpOpen: [{
      metric: {
        namespace: "demo",
        deployment: "web",
        tls: "no_identity",
        no_tls_reason: "no_tls_from_remote",
      },
      value: 1,
    }],
    inTcpNew: [],
  }, directory(D, pods, svcs));
  assert.deepEqual(edges.map((e) => [e.src.namespace, e.src.name, e.secured]), [["", "", false], [
    "batch",
    "sa/old-job",
    true,
  ]]);
});
