/** runningPid's guard against a reused pid: a process counts only if it existed when its pid file was written. */
import assert from "node:assert/strict";
import { processStartMs, startedBy } from "./processes.ts";

Deno.test("processStartMs: this process started in the past, minutes ago at most (a wrong tick rate is off by hours)", async () => {
  const start = await processStartMs(Deno.pid);
  assert.ok(start !== undefined);
  const now = Date.now();
  assert.ok(start <= now + 1000, `start ${new Date(start).toISOString()} is in the future`);
  // The test runner has been up for at most a few minutes; a wrong tick rate would be off by hours.
  assert.ok(now - start < 30 * 60_000, `start ${new Date(start).toISOString()} is too far back`);
});

Deno.test("startedBy: a pid file written before its process started names a reused pid", async () => {
  const before = Date.now() - 10_000;
  const child = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    assert.equal(await startedBy(child.pid, Date.now()), true, "pid file written after the start: ours");
    assert.equal(await startedBy(child.pid, before), false, "pid file 10 s older than the process: reused");
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
  assert.equal(await startedBy(child.pid, Date.now()), false, "a pid with no process");
});
