import assert from "node:assert/strict";
import * as prom from "prom-client";
import { Counter, Gauge } from "./instruments.ts";
import { Registry } from "./registry.ts";

// The proxy's registry replaced prom-client: scrapers and dashboards must see the same text.
Deno.test("registry: the exposition text is what prom-client printed for the same metrics", async () => {
  const ours = new Registry();
  const theirs = new prom.Registry();
  const build = <C, G>(
    counter: new (o: { name: string; help: string; labelNames?: string[]; registers: never[] }) => C,
    gauge: new (o: { name: string; help: string; labelNames?: string[]; registers: never[] }) => G,
    registry: unknown,
  ) => {
    const registers = [registry] as never[];
    return {
      plain: new counter({ name: "plain_total", help: "A counter without labels", registers }),
      conns: new counter({
        name: "tcp_open_total",
        help: "Opened connections\nwith a \\ in the help",
        labelNames: ["direction", "peer", "target_addr"],
        registers,
      }),
      open: new gauge({ name: "open_now", help: "Open now", labelNames: ["direction"], registers }),
      expiry: new gauge({ name: "identity_cert_expiration_timestamp_seconds", help: "Expiry", registers }),
    };
  };
  const a = build(Counter, Gauge, ours);
  const b = build(prom.Counter, prom.Gauge, theirs);
  for (const m of [a, b]) {
    const conns = m.conns as unknown as { inc(l: Record<string, string>, n?: number): void };
    const open = m.open as unknown as {
      inc(l: Record<string, string>): void;
      dec(l: Record<string, string>): void;
    };
    conns.inc({ direction: "inbound", peer: "src", target_addr: '10.0.0.1:80 "quoted"\n' });
    conns.inc({ direction: "inbound", peer: "src", target_addr: '10.0.0.1:80 "quoted"\n' }, 2);
    conns.inc({ peer: "dst", direction: "outbound", target_addr: "[::1]:8080" });
    open.inc({ direction: "inbound" });
    open.inc({ direction: "inbound" });
    open.dec({ direction: "inbound" });
    (m.expiry as unknown as { set(v: number): void }).set(1.5e9);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
});

Deno.test("registry: remove drops a series; a collect hook runs before each scrape", async () => {
  const r = new Registry();
  let calls = 0;
  const g = new Gauge({
    name: "invalid",
    help: "Invalid policies",
    labelNames: ["port", "reason"],
    registers: [r],
    collect() {
      calls++;
      this.set({ port: "9", reason: "collected" }, calls);
    },
  });
  g.set({ port: "8080", reason: "bad_route" }, 1);
  g.remove({ port: "8080", reason: "bad_route" });
  const text = await r.metrics();
  assert.doesNotMatch(text, /bad_route/);
  assert.match(text, /invalid\{port="9",reason="collected"\} 1/);
  assert.match(await r.metrics(), /invalid\{port="9",reason="collected"\} 2/);
});

Deno.test("registry: wrong use is refused with the metric's name", () => {
  const r = new Registry();
  const c = new Counter({ name: "x_total", help: "x", labelNames: ["a"], registers: [r] });
  assert.throws(() => c.inc({ b: "1" }), /metric x_total has no label "b"/);
  assert.throws(() => c.inc({ a: "1" }, -1), /x_total: a counter cannot be increased by -1/);
  assert.throws(
    () => new Counter({ name: "x_total", help: "again", registers: [r] }),
    /metric x_total is already registered/,
  );
});
