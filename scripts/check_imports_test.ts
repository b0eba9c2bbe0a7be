import assert from "node:assert/strict";
import { checkImports } from "./check_imports.ts";

async function tree(files: Record<string, string>): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "weft-imports-tree-" });
  for (const [path, text] of Object.entries(files)) {
    await Deno.mkdir(`${root}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true });
    await Deno.writeTextFile(`${root}/${path}`, text);
  }
  return root;
}

Deno.test("the check fails on a tree that breaks a boundary, naming file, line, import and rule", async () => {
  const root = await tree({
    "proxy/log.ts": "export const log = 1;\nexport type Level = number;\n",
    "proto/gen/net.ts": "export interface Net { a: number }\n",
    "control/bad.ts": [
      "// import { log } from '../proxy/log.ts' in a comment is not an import",
      "const s = \"import x from '../proxy/log.ts'\";",
      "import type {",
      "  Level,",
      '} from "../proxy/log.ts";',
      'export { log } from "../proxy/log.ts";',
      "export const v: Level = s.length;",
      "",
    ].join("\n"),
    "init/fine.ts": 'import type { Net } from "../proto/gen/net.ts";\nexport type N = Net;\n',
  });
  try {
    const { lines, ok } = await checkImports(root, Deno.execPath());
    assert.equal(ok, false);
    // The type-only import and the re-export, each at its own line; the comment and the string are not imports.
    assert.deepEqual(lines.filter((l) => l.startsWith("control/")).sort(), [
      "control/bad.ts:5 imports proxy/log.ts: control/ never imports proxy/",
      "control/bad.ts:6 imports proxy/log.ts: control/ never imports proxy/",
    ]);
    assert.ok(
      lines.includes(
        "init/fine.ts:1 imports proto/gen/net.ts: generated code (proto/gen/) is imported only through the contract modules in proto/",
      ),
      lines.join("\n"),
    );
    assert.match(
      lines.at(-1)!,
      /^import boundaries: 3 violations in \d+ imports \(the rules: scripts\/import_boundaries\/rules.ts\)$/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("the check passes on a tree that keeps the boundaries", async () => {
  const root = await tree({
    "proto/ports.ts": "export const P = 4143;\n",
    "control/a.ts": 'import { P } from "../proto/ports.ts";\nexport const a = P;\n',
    "proxy/b.ts": 'import { P } from "../proto/ports.ts";\nexport const b = P;\n',
    "init/c.ts": 'import { P } from "../proto/ports.ts";\nexport const c = P;\n',
  });
  try {
    const { lines, ok } = await checkImports(root, Deno.execPath());
    assert.equal(ok, true, lines.join("\n"));
    assert.match(lines.at(-1)!, /no violation$/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
