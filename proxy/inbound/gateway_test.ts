import assert from "node:assert/strict";
import { parseGatewayName } from "./gateway.ts";

const SUFFIXES = ["svc.cluster.local"];

Deno.test("gateway names: <svc>.<ns>.svc.<domain> with a port, nothing else", () => {
  assert.deepEqual(parseGatewayName("web.shop.svc.cluster.local", 8080, SUFFIXES), {
    service: "web",
    namespace: "shop",
    authority: "web.shop.svc.cluster.local:8080",
  });
  // A final dot and upper case are the same name.
  assert.deepEqual(parseGatewayName("Web.Shop.svc.cluster.local.", 80, SUFFIXES), {
    service: "web",
    namespace: "shop",
    authority: "web.shop.svc.cluster.local:80",
  });
  for (
    const bad of [
      "evil.example.com",
      "shop.svc.cluster.local",
      "a.web.shop.svc.cluster.local",
      "web.shop.svc.other.local",
      "web_1.shop.svc.cluster.local",
      "-web.shop.svc.cluster.local",
      "web..svc.cluster.local",
      "",
      "svc.cluster.local",
    ]
  ) {
    assert.equal(typeof parseGatewayName(bad, 80, SUFFIXES), "string", bad);
  }
  assert.match(parseGatewayName("web.shop.svc.cluster.local", 0, SUFFIXES) as string, /port 0/);
  assert.equal(
    typeof parseGatewayName("web.shop.svc.east.local", 80, ["svc.cluster.local", "svc.east.local"]),
    "object",
  );
});
