import assert from "node:assert/strict";
import { exec, must } from "./exec.ts";

Deno.test("exec feeds stdin and returns output and exit code without throwing", async () => {
  assert.deepEqual(await exec("cat", [], { stdin: "hello" }), { code: 0, stdout: "hello", stderr: "" });
  const r = await exec("sh", ["-c", "echo oops >&2; exit 3"]);
  assert.deepEqual([r.code, r.stderr], [3, "oops\n"]);
});

Deno.test("exec kills the command when its signal aborts", async () => {
  const start = performance.now();
  const r = await exec("sleep", ["10"], { signal: AbortSignal.timeout(100) });
  assert.notEqual(r.code, 0);
  assert.ok(performance.now() - start < 5000, "the command ran on after the abort");
});

Deno.test("must returns stdout, and throws with the command, exit code and stderr on failure", async () => {
  assert.equal(await must("sh", ["-c", "echo ok"]), "ok\n");
  await assert.rejects(() => must("sh", ["-c", "echo broken >&2; exit 2"]), /sh -c .* exited 2: broken/);
});
