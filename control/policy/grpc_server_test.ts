/** The policy API over real grpc-js on 127.0.0.1, fed by a fake event source. */
import * as grpc from "@grpc/grpc-js";
import { assertEquals, assertRejects } from "./assert.ts";
import type { Server } from "../../proto/gen/inbound.ts";
import type { OutboundPolicy } from "../../proto/gen/outbound.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import { startPolicyServer } from "./test_server.ts";
import { httpRoute, namespace, pod, server, service } from "./testing.ts";

/** Collects a stream's messages and lets a test await the next one (bounded wait). */
class Inbox<T> {
  readonly items: T[] = [];
  #waiters: (() => void)[] = [];
  error: grpc.ServiceError | undefined;
  constructor(stream: grpc.ClientReadableStream<T>) {
    stream.on("data", (m: T) => {
      this.items.push(m);
      this.#wake();
    });
    stream.on("error", (e: grpc.ServiceError) => {
      this.error = e;
      this.#wake();
    });
  }
  #wake() {
    for (const w of this.#waiters.splice(0)) w();
  }
  async next(i: number): Promise<T> {
    const deadline = Date.now() + 5000;
    while (this.items.length <= i) {
      if (this.error) throw this.error;
      if (Date.now() > deadline) throw new Error(`no message #${i} within 5s (have ${this.items.length})`);
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 100);
      });
    }
    return this.items[i];
  }
  async ended(): Promise<grpc.ServiceError> {
    const deadline = Date.now() + 5000;
    while (!this.error) {
      if (Date.now() > deadline) throw new Error("stream did not end within 5s");
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.error;
  }
}

const NS = "emojivoto";
const workload = JSON.stringify({ ns: NS, pod: "web-1" });
const protoCase = (s: Server) => s.protocol?.kind?.$case;

Deno.test("WatchPort streams add, change and delete of a Server in order", async () => {
  await using t = await startPolicyServer();
  t.source.emit("added", "Namespace", namespace(NS));
  t.source.emit("added", "Pod", pod(NS, "web-1", { app: "web" }));
  const call = t.inbound.watchPort({ workload, port: 8080 });
  const inbox = new Inbox(call);
  const first = await inbox.next(0);
  assertEquals([first.labels.name, protoCase(first)], ["all-unauthenticated", "detect"]);

  t.source.emit(
    "added",
    "Server",
    server(NS, "web-http", { podSelector: { matchLabels: { app: "web" } }, port: 8080 }),
  );
  const added = await inbox.next(1);
  assertEquals([added.labels.kind, added.labels.name, added.authorizations.length], [
    "server",
    "web-http",
    0,
  ]);

  // An unrelated change publishes nothing; the next message is the real change.
  t.source.emit(
    "added",
    "Server",
    server(NS, "other", { podSelector: { matchLabels: { app: "db" } }, port: 5432 }),
  );
  t.source.emit(
    "modified",
    "Server",
    server(NS, "web-http", {
      podSelector: { matchLabels: { app: "web" } },
      port: 8080,
      proxyProtocol: "HTTP/2",
    }),
  );
  const changed = await inbox.next(2);
  assertEquals([changed.labels.name, protoCase(changed)], ["web-http", "http2"]);

  t.source.emit("deleted", "Server", server(NS, "web-http", {}));
  const deleted = await inbox.next(3);
  assertEquals(deleted.labels.name, "all-unauthenticated");
  await new Promise((r) => setTimeout(r, 50));
  assertEquals(inbox.items.length, 4);
  call.cancel();
});

Deno.test("WatchPort: the pod's default-policy annotation change streams; pod deletion ends with NOT_FOUND", async () => {
  await using t = await startPolicyServer();
  t.source.emit("added", "Pod", pod(NS, "web-1", { app: "web" }));
  const inbox = new Inbox(t.inbound.watchPort({ workload: `${NS}:web-1`, port: 8080 }));
  assertEquals((await inbox.next(0)).labels.name, "all-unauthenticated");
  t.source.emit(
    "modified",
    "Pod",
    pod(NS, "web-1", { app: "web" }, { annotations: { "config.linkerd.io/default-inbound-policy": "deny" } }),
  );
  const denied = await inbox.next(1);
  assertEquals([denied.labels.name, denied.authorizations.length], ["deny", 0]);
  t.source.emit("deleted", "Pod", pod(NS, "web-1", {}));
  const e = await inbox.ended();
  assertEquals([e.code, e.details], [grpc.status.NOT_FOUND, "pod emojivoto/web-1 not found"]);
});

Deno.test("WatchPort and GetPort errors: unknown pod, bad workload, bad port; metrics count them", async () => {
  await using t = await startPolicyServer();
  const unknown = await new Inbox(t.inbound.watchPort({ workload, port: 8080 })).ended();
  assertEquals([unknown.code, unknown.details], [grpc.status.NOT_FOUND, "pod emojivoto/web-1 not found"]);
  const bad = await new Inbox(t.inbound.watchPort({ workload: "nonsense", port: 8080 })).ended();
  assertEquals(bad.code, grpc.status.INVALID_ARGUMENT);
  const unary = (workload: string, port: number) =>
    new Promise<Server>((resolve, reject) =>
      t.inbound.getPort({ workload, port }, (err, res) => err ? reject(err) : resolve(res))
    );
  const e = await assertRejects(() => unary(workload, 0)) as unknown as grpc.ServiceError;
  assertEquals(e.code, grpc.status.INVALID_ARGUMENT);
  t.source.emit("added", "Pod", pod(NS, "web-1", { app: "web" }));
  assertEquals((await unary(workload, 8080)).labels.name, "all-unauthenticated");
  const text = await t.registry.metrics();
  for (
    const want of [
      'grpc_server_handled_total{grpc_service="io.linkerd.proxy.inbound.InboundServerPolicies",grpc_method="WatchPort",grpc_type="server_stream",grpc_code="NOT_FOUND"} 1',
      'grpc_method="GetPort",grpc_type="unary",grpc_code="OK"} 1',
    ]
  ) {
    if (!text.includes(want)) throw new Error(`metrics lack ${want}:\n${text}`);
  }
});

Deno.test("Outbound Watch: fallback, then Service, then route, then back to fallback", async () => {
  await using t = await startPolicyServer();
  const call = t.outbound.watch({
    sourceWorkload: JSON.stringify({ ns: NS, pod: "vote-bot" }),
    target: { $case: "addr", value: toTcpAddress("10.96.0.10", 80) },
  });
  const inbox = new Inbox<OutboundPolicy>(call);
  const meta = (p: OutboundPolicy) => {
    const k = p.metadata?.kind;
    return k?.$case === "default" ? k.value : `${k?.value.kind}/${k?.value.name}`;
  };
  assertEquals(meta(await inbox.next(0)), "egress-fallback");
  const svc = service(NS, "web-svc", { clusterIP: "10.96.0.10", ports: [{ port: 80 }] });
  t.source.emit("added", "Service", svc);
  assertEquals(meta(await inbox.next(1)), "Service/web-svc");
  t.source.emit(
    "added",
    "GatewayHTTPRoute",
    httpRoute(NS, "r", { parentRefs: [{ kind: "Service", name: "web-svc", port: 80 }], rules: [{}] }),
  );
  const routed = await inbox.next(2);
  const k = routed.protocol?.kind;
  if (k?.$case !== "detect") throw new Error("want detect");
  const rm = k.value.http1?.routes[0].metadata?.kind;
  assertEquals(rm?.$case === "resource" ? rm.value.name : "", "r");
  t.source.emit("deleted", "Service", svc);
  assertEquals(meta(await inbox.next(3)), "egress-fallback");
  call.cancel();
});

Deno.test("many streams on one port share a topic and all see each change", async () => {
  await using t = await startPolicyServer();
  t.source.emit("added", "Pod", pod(NS, "web-1", { app: "web" }));
  const calls = Array.from({ length: 20 }, () => t.inbound.watchPort({ workload, port: 8080 }));
  const inboxes = calls.map((c) => new Inbox(c));
  await Promise.all(inboxes.map((i) => i.next(0)));
  t.source.emit("added", "Server", server(NS, "s", { podSelector: {}, port: 8080, proxyProtocol: "opaque" }));
  const got = await Promise.all(inboxes.map((i) => i.next(1)));
  assertEquals([...new Set(got.map(protoCase))], ["opaque" as const]);
  for (const c of calls) c.cancel();
});
