import assert from "node:assert/strict";
import { sharedFor } from "./shared_answer.ts";

Deno.test("sharedFor: callers within the window share one computation, later ones get a fresh one", async () => {
  let t = 0;
  let runs = 0;
  const get = sharedFor(1_000, () => t, () => Promise.resolve(++runs));
  const [a, b] = await Promise.all([get(), get()]);
  assert.deepEqual([a, b, runs], [1, 1, 1]);
  t = 999;
  assert.equal(await get(), 1);
  t = 1_000;
  assert.equal(await get(), 2);
  assert.equal(runs, 2);
});

Deno.test("sharedFor: a failure is not kept; the next caller computes again", async () => {
  let runs = 0;
  const get = sharedFor(60_000, () => 0, () => {
    runs++;
    return runs === 1 ? Promise.reject(new Error("API server down")) : Promise.resolve("ok");
  });
  await assert.rejects(get(), /API server down/);
  assert.equal(await get(), "ok");
  assert.equal(runs, 2);
});
