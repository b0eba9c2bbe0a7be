import assert from "node:assert/strict";
import { deniedBy } from "./webhooks.ts";

Deno.test("a refusal is attributed to the webhook that made it, not to schema validation", () => {
  assert.equal(
    deniedBy('admission webhook "weft-sp-validator.weft.io" denied the request: ServiceProfile x is invalid'),
    "weft-sp-validator.weft.io",
  );
  assert.equal(deniedBy('ServiceProfile.linkerd.io "x" is invalid: spec.routes: Required value'), undefined);
  assert.equal(
    deniedBy('failed calling webhook "weft-sp-validator.weft.io": connection refused'),
    undefined,
  );
});
