import assert from "node:assert/strict";
import { HostPortError, splitHostPort } from "./host_port.ts";

Deno.test("host:port: names, IPv4, bracketed IPv6 and Go's :port", () => {
  assert.deepEqual(splitHostPort("0.0.0.0:8086", "--addr"), { host: "0.0.0.0", port: 8086 });
  assert.deepEqual(splitHostPort("localhost:0", "--addr"), { host: "localhost", port: 0 });
  assert.deepEqual(splitHostPort("[::1]:9990", "--addr"), { host: "::1", port: 9990 });
  assert.deepEqual(splitHostPort("[::]:8443", "--addr"), { host: "::", port: 8443 });
  assert.deepEqual(splitHostPort(":8090", "--addr"), { host: "0.0.0.0", port: 8090 });
  assert.deepEqual(splitHostPort("linkerd-dst.weft.svc:8086", "--addr"), {
    host: "linkerd-dst.weft.svc",
    port: 8086,
  });
});

Deno.test("host:port: each bad form says what is wrong and names the flag", () => {
  const cases: [string, RegExp][] = [
    ["nowhere", /no :port/],
    ["::1:80", /an IPv6 host needs brackets/],
    ["[::1]80", /no :port after the bracketed address/],
    ["[::1:80", /no closing \]/],
    ["[example]:80", /in brackets is not an IPv6 address/],
    ["host:", /no port/],
    ["host:70000", /"70000" is not a port in 0-65535/],
    ["host:-1", /"-1" is not a port/],
    ["ho st:80", /"ho st" is not a host name or address/],
  ];
  for (const [text, why] of cases) {
    assert.throws(() => splitHostPort(text, "--admin-addr"), (e: Error) => {
      assert.ok(e instanceof HostPortError);
      assert.ok(e.message.startsWith(`--admin-addr: ${JSON.stringify(text)} is not host:port (`), e.message);
      assert.match(e.message, why);
      return true;
    });
  }
});
