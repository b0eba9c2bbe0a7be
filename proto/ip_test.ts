import assert from "node:assert/strict";
import {
  formatIpv6Bytes,
  fromTcpAddress,
  parseIpv4,
  parseIpv6Bytes,
  toIpNetwork,
  toTcpAddress,
} from "./ip.ts";

Deno.test("parseIpv4 accepts dotted quads and rejects everything else with a reason", () => {
  assert.equal(parseIpv4("255.255.255.255"), 0xffffffff);
  assert.equal(parseIpv4("0.0.0.0"), 0);
  assert.throws(() => parseIpv4("1.2.3"), /want 4 octets, got 3/);
  assert.throws(() => parseIpv4("1.2.3.256"), /bad octet "256"/);
  assert.throws(() => parseIpv4("01.2.3.4"), /bad octet "01"/);
});

Deno.test("IPv6 parsing handles ::, embedded IPv4 and canonical formatting", () => {
  const cases: [string, string][] = [
    ["::", "::"],
    ["::1", "::1"],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
    ["fe80::1:0:0:0", "fe80::1:0:0:0"],
    ["1:0:0:2:0:0:3:4", "1::2:0:0:3:4"],
    ["::ffff:10.0.0.1", "::ffff:a00:1"],
    ["1:0:0:2:0:0:0:3", "1:0:0:2::3"],
    ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
  ];
  for (const [input, canonical] of cases) {
    assert.equal(formatIpv6Bytes(parseIpv6Bytes(input)), canonical, input);
  }
  assert.throws(() => parseIpv6Bytes("1::2::3"), /more than one '::'/);
  assert.throws(() => parseIpv6Bytes("1:2:3"), /want 8 groups/);
  assert.throws(() => parseIpv6Bytes("12345::"), /bad group "12345"/);
});

Deno.test("TcpAddress and IPNetwork helpers round-trip and validate", () => {
  assert.equal(fromTcpAddress(toTcpAddress("10.1.2.3", 8080)), "10.1.2.3:8080");
  assert.equal(fromTcpAddress(toTcpAddress("fd00::5", 443)), "[fd00::5]:443");
  assert.throws(() => toTcpAddress("10.0.0.1", 70000), /port 70000 is out of range/);
  assert.deepEqual(toIpNetwork("10.0.0.0/8"), {
    ip: { ip: { $case: "ipv4", value: 0x0a000000 } },
    prefixLen: 8,
  });
  assert.throws(() => toIpNetwork("10.0.0.0/33"), /prefix length "33" is not in 0\.\.32/);
  assert.throws(() => toIpNetwork("10.0.0.0"), /missing/);
});
