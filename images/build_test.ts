import assert from "node:assert/strict";
import { defaultInjectorConfig } from "../control/injector/config.ts";
import { IMAGE_COMMANDS } from "./build.ts";

const launcher = await Deno.readTextFile(new URL("./launcher/main.go", import.meta.url));
const table = Object.fromEntries(
  [...launcher.matchAll(/^\s+"(weft-[a-z]+)":\s+"([^"]+)",$/gm)].map((m) => [m[1], m[2]]),
);

Deno.test("the launcher runs an existing entry point for every image command", async () => {
  assert.deepEqual(Object.keys(table).sort(), [...IMAGE_COMMANDS].sort());
  for (const [cmd, script] of Object.entries(table)) {
    const stat = await Deno.stat(new URL(`../${script}`, import.meta.url)).catch(() => undefined);
    assert.ok(stat?.isFile, `${cmd} → ${script} does not exist`);
  }
  assert.equal(table["weft-proxy"], "proxy/main.ts");
  assert.equal(table["weft-init"], "init/main.ts");
  assert.equal(table["weft-control"], "control/main.ts");
});

Deno.test("every command the injector's patch runs is one the image has", () => {
  const cfg = defaultInjectorConfig("");
  for (const c of [cfg.proxyCommand, cfg.initCommand, cfg.awaitCommand, cfg.sleepCommand]) {
    assert.ok((IMAGE_COMMANDS as readonly string[]).includes(c[0]), `${c[0]} is not an image command`);
  }
});
