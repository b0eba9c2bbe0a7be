import assert from "node:assert/strict";
import { Registry } from "./registry.ts";
import { TcpMetrics } from "./tcp_metrics.ts";
import { metric } from "../testing/poll.ts";

Deno.test("tcp metrics: a tracked connection's bytes show at each scrape while it is open, once in total", async () => {
  const registry = new Registry();
  const m = new TcpMetrics(registry);
  const labels = {
    direction: "outbound",
    peer: "dst",
    tls: "true",
    server_id: "b.id",
    target_addr: "10.0.0.2:80",
  };
  const sock = { bytesRead: 100, bytesWritten: 40 };
  const rec = m.open(labels);
  rec.track(sock);
  const scrape = async () => {
    const t = await registry.metrics();
    return {
      read: metric(t, "tcp_read_bytes_total", labels),
      written: metric(t, "tcp_write_bytes_total", labels),
      open: metric(t, "tcp_open_connections", labels),
      opened: metric(t, "tcp_open_total", labels),
      closed: metric(t, "tcp_close_total", labels),
    };
  };
  assert.deepEqual(await scrape(), { read: 100, written: 40, open: 1, opened: 1, closed: 0 });
  sock.bytesRead = 250;
  sock.bytesWritten = 90;
  assert.deepEqual(
    await scrape(),
    { read: 250, written: 90, open: 1, opened: 1, closed: 0 },
    "bytes while open",
  );
  sock.bytesRead = 300;
  rec.close(undefined);
  sock.bytesRead = 999;
  assert.deepEqual(
    await scrape(),
    { read: 300, written: 90, open: 0, opened: 1, closed: 1 },
    "nothing after close",
  );
});

Deno.test("tcp metrics: endpoint connections carry Destination's dst_* labels; unknown labels stay refused elsewhere", async () => {
  const registry = new Registry();
  const m = new TcpMetrics(registry);
  const labels = {
    direction: "outbound",
    peer: "dst",
    tls: "true",
    server_id: "web.id",
    target_addr: "10.0.0.2:80",
    dst_namespace: "ns",
    dst_pod: "web-1",
  };
  const a = m.open(labels);
  const b = m.open({ ...labels, dst_pod: "web-2" });
  a.close("ECONNRESET");
  const text = await registry.metrics();
  assert.equal(metric(text, "tcp_open_total", { dst_pod: "web-1" }), 1, "one series per dst label set");
  assert.equal(metric(text, "tcp_open_total", { dst_namespace: "ns" }), 2);
  assert.equal(metric(text, "tcp_open_connections", { dst_pod: "web-2" }), 1);
  assert.equal(metric(text, "tcp_close_total", { dst_pod: "web-1", errno: "ECONNRESET" }), 1);
  b.close(undefined);
  assert.throws(() => m.authzDeny.inc({ srv_kind: "x", dst_pod: "p" }), /has no label "dst_pod"/);
});
