import assert from "node:assert/strict";
import { DurationError, formatDuration, parseDurationMs, parseGoDuration } from "./go_duration.ts";

/**
 * [input, Go's result in nanoseconds, or null where Go refuses it]. Produced once with go1.26.8 by a
 * program that prints `time.ParseDuration(input)` for each input (int64(d), or its error), pinned
 * here so the test needs no Go toolchain.
 */
const GO: [string, string | null][] = [
  ["0", "0"],
  ["-0", "0"],
  ["+0", "0"],
  ["", null],
  ["-", null],
  ["+", null],
  ["1", null],
  ["10", null],
  ["0s", "0"],
  ["1s", "1000000000"],
  ["300ms", "300000000"],
  ["1.5s", "1500000000"],
  ["1.5us", "1500"],
  ["1.5µs", "1500"],
  ["1.5μs", "1500"],
  ["2ns", "2"],
  ["1h2m3.5s", "3723500000000"],
  ["1h2m3s4ms5us6ns", "3723004005006"],
  ["1.5h", "5400000000000"],
  [".5s", "500000000"],
  ["1.s", "1000000000"],
  [".s", null],
  ["-1s", "-1000000000"],
  ["+1s", "1000000000"],
  ["-1.5h", "-5400000000000"],
  ["1d", null],
  ["1 s", null],
  [" 1s", null],
  ["1s ", null],
  ["1S", null],
  ["1m30", null],
  ["s", null],
  ["1e3s", null],
  ["0.000000001s", "1"],
  ["0.0000000001s", "0"],
  ["1.0000000001s", "1000000000"],
  ["100000h", "360000000000000000"],
  ["2562047h", "9223369200000000000"],
  ["2562048h", null],
  ["9223372036854775807ns", "9223372036854775807"],
  ["9223372036854775808ns", null],
  ["-9223372036854775808ns", "-9223372036854775808"],
  ["1.123456789s", "1123456789"],
  ["3.0000001h", "10800000360000"],
  ["1h1h", "7200000000000"],
  ["24h0m0s", "86400000000000"],
  ["87600h", "315360000000000000"],
  ["10m", "600000000000"],
  ["0.1ns", "0"],
  ["1.9ns", "1"],
  ["00001s", "1000000000"],
  ["1_0s", null],
  ["1,5s", null],
  ["ms", null],
  ["5m0.5s", "300500000000"],
  ["0.3333333333333333333h", "1200000000000"],
];

Deno.test("go duration: the same values and refusals as Go's time.ParseDuration", () => {
  for (const [input, want] of GO) {
    if (want === null) {
      assert.throws(() => parseGoDuration(input, "x"), DurationError, `Go refuses ${JSON.stringify(input)}`);
    } else {assert.equal(
        parseGoDuration(input, "x"),
        BigInt(want),
        `Go reads ${JSON.stringify(input)} as ${want}ns`,
      );}
  }
});

Deno.test("go duration: one error message naming what, the text and why", () => {
  const cases: [string, RegExp][] = [
    ["1d", /unknown unit "d"/],
    ["10", /a number has no unit/],
    ["", /empty/],
    ["2562048h", /out of range/],
    [".s", /a number has no digits/],
  ];
  for (const [text, why] of cases) {
    assert.throws(() => parseGoDuration(text, "--timeout"), (e: Error) => {
      assert.match(
        e.message,
        /^--timeout: ".*" is not a duration \(.*\); want e\.g\. 300ms, 1\.5s or 1h30m$/,
      );
      assert.match(e.message, why);
      assert.ok(e.message.includes(JSON.stringify(text)));
      return true;
    });
  }
});

Deno.test("go duration: milliseconds for timeouts refuse negatives; format reads back", () => {
  assert.equal(parseDurationMs("1.5us"), 0.0015);
  assert.equal(parseDurationMs("1h2m3.5s"), 3_723_500);
  assert.throws(
    () => parseDurationMs("-1s", "--detect-timeout"),
    /--detect-timeout: "-1s" is not a duration \(negative\)/,
  );
  for (const ms of [0, 250, 1500, 20_000, 5_400_000, 60 * 86_400_000, 3_723_500]) {
    const text = formatDuration(ms);
    assert.equal(parseDurationMs(text), ms, text);
  }
  assert.equal(formatDuration(60 * 86_400_000), "1440h");
  assert.equal(formatDuration(5_400_000), "1h30m");
});
