/**
 * The import-boundary check (part of `deno task check` and of the test runner's checks):
 * `deno run -A scripts/check_imports.ts [ROOT]` prints each import that breaks a rule of
 * `scripts/import_boundaries/rules.ts` as `file:line imports target: rule` and exits 1 if there is one.
 */
import { findViolations, formatViolation, unusedAllowances } from "./import_boundaries/engine.ts";
import { importEdges } from "./import_boundaries/graph.ts";
import { IMPORT_RULES, NOT_CHECKED } from "./import_boundaries/rules.ts";

export async function checkImports(root: string, deno: string): Promise<{ lines: string[]; ok: boolean }> {
  const edges = await importEdges(root, { deno, skip: NOT_CHECKED });
  const violations = findViolations(edges, IMPORT_RULES);
  const lines = violations.map(formatViolation);
  const unused = Map.groupBy(unusedAllowances(edges, IMPORT_RULES), (u) => u.rule.name);
  for (const [rule, entries] of unused) {
    lines.push(
      `note: allowlisted for "${rule}" but importing nothing it forbids (the entries can go): ${
        entries.map((u) => u.pattern).join(", ")
      }`,
    );
  }
  lines.push(
    violations.length
      ? `import boundaries: ${violations.length} violations in ${edges.length} imports (the rules: scripts/import_boundaries/rules.ts)`
      : `import boundaries: ${edges.length} imports, ${IMPORT_RULES.length} rules, no violation`,
  );
  return { lines, ok: violations.length === 0 };
}

if (import.meta.main) {
  const root = Deno.args[0] ?? new URL("..", import.meta.url).pathname;
  const { lines, ok } = await checkImports(root, Deno.execPath());
  for (const l of lines) console.log(l);
  Deno.exit(ok ? 0 : 1);
}
