import assert from "node:assert/strict";
import { HttpMethod_Registered } from "./gen/http_types.ts";
import { toHttpMethod } from "./http_method.ts";

Deno.test("HTTP methods map to registered values, others stay unregistered", () => {
  assert.deepEqual(toHttpMethod("POST"), {
    type: { $case: "registered", value: HttpMethod_Registered.POST },
  });
  assert.deepEqual(toHttpMethod("post"), { type: { $case: "unregistered", value: "post" } });
  assert.deepEqual(toHttpMethod("post", true), {
    type: { $case: "registered", value: HttpMethod_Registered.POST },
  });
  assert.deepEqual(toHttpMethod("PURGE", true), { type: { $case: "unregistered", value: "PURGE" } });
});
