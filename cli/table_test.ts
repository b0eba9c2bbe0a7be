import assert from "node:assert/strict";
import { fmtSuccess, renderTable, useColor } from "./table.ts";

Deno.test("colour only on a terminal, and not when NO_COLOR is set or TERM is dumb", () => {
  assert.equal(useColor(true, {}), true, "a terminal");
  assert.equal(useColor(true, { TERM: "xterm-256color" }), true);
  assert.equal(useColor(false, {}), false, "not a terminal (a pipe, a file)");
  assert.equal(useColor(true, { NO_COLOR: "1" }), false, "NO_COLOR");
  // no-color.org: only a non-empty NO_COLOR turns colour off.
  assert.equal(useColor(true, { NO_COLOR: "" }), true);
  assert.equal(useColor(true, { TERM: "dumb" }), false, "TERM=dumb");
  assert.equal(useColor(false, { TERM: "xterm" }), false);
});

Deno.test("a table carries escape codes only when colour is on, and aligns the same either way", () => {
  const rows = [["web", fmtSuccess(0.5)], ["api", fmtSuccess(1)]];
  const plain = renderTable(["NAME", "SUCCESS"], rows, false);
  const coloured = renderTable(["NAME", "SUCCESS"], rows, true);
  assert.equal(plain, "NAME   SUCCESS\nweb    50.00%\napi    100.00%\n");
  assert.ok(!plain.includes("\x1b"));
  assert.ok(coloured.includes("\x1b[31m50.00%\x1b[0m"), "a bad success rate in red");
  assert.ok(coloured.includes("\x1b[32m100.00%\x1b[0m"), "a good one in green");
  const sgr = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");
  assert.equal(coloured.replace(sgr, ""), plain);
});
