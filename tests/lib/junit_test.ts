import assert from "node:assert/strict";
import { countJunit } from "./junit.ts";

Deno.test("countJunit counts passed, failed and skipped test cases", () => {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="deno test" tests="4" failures="1" errors="0" time="0.1">
  <testsuite name="./a_test.ts" tests="4" disabled="0" errors="0" failures="1">
    <testcase name="ok" classname="./a_test.ts" time="0.001" line="3" col="6">
    </testcase>
    <testcase name="ok2" classname="./a_test.ts" time="0.001" line="4" col="6"/>
    <testcase name="bad" classname="./a_test.ts" time="0.001" line="5" col="6">
      <failure message="uncaught error">AssertionError</failure>
    </testcase>
    <testcase name="steps" classname="./a_test.ts" time="0.001" line="7" col="6">
    </testcase>
    <testcase name="steps &gt; one" classname="./a_test.ts" time="0.000" line="7" col="43">
    </testcase>
    <testcase name="later" classname="./a_test.ts" time="0" line="6" col="6">
      <skipped/>
    </testcase>
  </testsuite>
</testsuites>`;
  const out = countJunit(xml);
  assert.equal(out.passed, 3);
  assert.equal(out.failed, 1);
  assert.equal(out.skipped, 1);
  assert.deepEqual(out.failures, ["./a_test.ts > bad"]);
});
