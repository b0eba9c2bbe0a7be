import assert from "node:assert/strict";
import { isLoopbackAddr } from "./certify_client.ts";

Deno.test("loopback identity addresses get plaintext, as linkerd2-proxy decides", () => {
  for (const a of ["127.0.0.1:8080", "127.3.2.1:8080", "[::1]:8080", "localhost.:8080"]) {
    assert.equal(isLoopbackAddr(a), true, a);
  }
  for (
    const a of [
      "localhost:8080",
      "10.0.0.1:8080",
      "linkerd-identity.linkerd.svc.cluster.local.:8080",
      "[::2]:1",
      "128.0.0.1:1",
    ]
  ) {
    assert.equal(isLoopbackAddr(a), false, a);
  }
  assert.throws(() => isLoopbackAddr("nohostport"), /is not host:port/);
});
