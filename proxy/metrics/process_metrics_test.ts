import assert from "node:assert/strict";
import { cpuUsage } from "node:process";
import { parseMaxFds, parseProcStat, registerProcessMetrics } from "./process_metrics.ts";
import { Registry } from "./registry.ts";

const STAT =
  "4242 (deno (proxy) x) S 1 4242 4242 0 -1 4194560 9000 0 12 0 250 75 0 0 20 0 9 0 123456 1073741824 25600 " +
  "18446744073709551615 1 1 0 0 0 0 0 4096 17663 0 0 0 17 1 0 0 0 0 0";

Deno.test("process metrics: /proc/self/stat fields after a command name with spaces and parentheses", () => {
  assert.deepEqual(parseProcStat(STAT), { cpuSeconds: 3.25, virtualBytes: 1073741824, residentPages: 25600 });
  assert.throws(() => parseProcStat("garbage"), /not a \/proc/);
  assert.throws(() => parseProcStat("1 (x) S 1 2"), /short/);
});

Deno.test("process metrics: the soft open-files limit", () => {
  const limits = "Limit                     Soft Limit           Hard Limit           Units\n" +
    "Max open files            1048576              1048576              files\n";
  assert.equal(parseMaxFds(limits), 1048576);
  assert.equal(
    parseMaxFds("Max open files            unlimited            unlimited            files"),
    undefined,
  );
});

Deno.test("process metrics: exported under Prometheus' standard names from what /proc says at scrape time", async () => {
  const registry = new Registry();
  let stat = STAT;
  registerProcessMetrics(registry, {
    stat: () => Promise.resolve(stat),
    limits: () => Promise.resolve("Max open files 1024 4096 files\n"),
    openFds: () => Promise.resolve(17),
    rssBytes: () => 50 * 1024 * 1024,
    pageSize: 4096,
    startTimeSeconds: 1700000000.5,
  });
  const text = await registry.metrics();
  assert.match(text, /^# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3.25$/m);
  assert.match(text, /^process_resident_memory_bytes 52428800$/m);
  assert.match(text, /^process_virtual_memory_bytes 1073741824$/m);
  assert.match(text, /^process_start_time_seconds 1700000000.5$/m);
  assert.match(text, /^process_open_fds 17$/m);
  assert.match(text, /^process_max_fds 1024$/m);
  stat = STAT.replace(" 250 75 ", " 350 75 ");
  assert.match(await registry.metrics(), /^process_cpu_seconds_total 4.25$/m);
});

Deno.test("process metrics: this process's real /proc figures are plausible", async () => {
  if (Deno.build.os !== "linux") return;
  const registry = new Registry();
  registerProcessMetrics(registry);
  const before = Number(/^process_cpu_seconds_total (\S+)$/m.exec(await registry.metrics())![1]);
  // Spin until getrusage (node's cpuUsage, a source independent of /proc) says 200 ms of CPU went by:
  // a wall-clock loop gets far less CPU on a loaded machine.
  const u0 = cpuUsage();
  const t = performance.now();
  let x = 0;
  const spent = () => {
    const u = cpuUsage(u0);
    return (u.user + u.system) / 1e6;
  };
  while (spent() < 0.2 && performance.now() - t < 10_000) x += Math.sqrt(x + 1);
  const used = spent();
  const text = await registry.metrics();
  const after = Number(/^process_cpu_seconds_total (\S+)$/m.exec(text)![1]);
  assert.ok(
    after - before >= used * 0.5 && after - before <= used * 2 + 0.1,
    `a loop of ${used} s of CPU (getrusage) counted ${after - before} s`,
  );
  const rss = Number(/^process_resident_memory_bytes (\S+)$/m.exec(text)![1]);
  assert.ok(rss > 10 * 1024 * 1024 && rss < 4 * 1024 ** 3, `rss ${rss}`);
  assert.ok(Number(/^process_open_fds (\S+)$/m.exec(text)![1]) >= 3);
});
