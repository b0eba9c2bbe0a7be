/**
 * The rule engine of the import-boundary check: pure, over import edges already resolved to paths
 * relative to the repository root. The rules themselves are data (`rules.ts`).
 */

/** One import: `file` (line 1-based) imports `target`; both relative to the repository root. */
export interface ImportEdge {
  file: string;
  line: number;
  target: string;
}

/**
 * A path pattern: a folder when it ends with `/` (everything below it), `""` for every file,
 * otherwise one exact file.
 */
export type PathPattern = string;

export interface ImportRule {
  /** Printed after each violation, so it says what must hold. */
  name: string;
  /** Importing files the rule covers. */
  files: readonly PathPattern[];
  /** Imported paths the rule forbids to those files. */
  forbid: readonly PathPattern[];
  /** Importing files exempt from the rule: an explicit allowlist, meant to shrink. */
  allow?: readonly PathPattern[];
  /**
   * Only product code is held to the rule: tests (`*_test.ts`) and test and benchmark helpers
   * (`testing.ts`, `bench.ts`, `*_bench.ts`) may reach across layers to set a scene.
   */
  productCodeOnly?: boolean;
}

/** Tests and their helpers, by file name. */
export function isTestCode(path: string): boolean {
  const name = path.slice(path.lastIndexOf("/") + 1);
  return name.endsWith("_test.ts") || name === "testing.ts" || name === "bench.ts" ||
    name.endsWith("_bench.ts");
}

export interface Violation {
  edge: ImportEdge;
  rule: ImportRule;
}

export function matchesPath(path: string, pattern: PathPattern): boolean {
  if (pattern === "") return true;
  return pattern.endsWith("/") ? path.startsWith(pattern) : path === pattern;
}

function any(path: string, patterns: readonly PathPattern[] | undefined): boolean {
  return (patterns ?? []).some((p) => matchesPath(path, p));
}

/** Every (edge, rule) pair that breaks the rule, ordered by file, line, then rule order. */
export function findViolations(edges: readonly ImportEdge[], rules: readonly ImportRule[]): Violation[] {
  const out: Violation[] = [];
  for (const edge of edges) {
    for (const rule of rules) {
      if (
        any(edge.file, rule.files) && any(edge.target, rule.forbid) && !any(edge.file, rule.allow) &&
        !(rule.productCodeOnly && isTestCode(edge.file))
      ) {
        out.push({ edge, rule });
      }
    }
  }
  return out.sort((a, b) =>
    a.edge.file < b.edge.file ? -1 : a.edge.file > b.edge.file ? 1 : a.edge.line - b.edge.line
  );
}

export function formatViolation(v: Violation): string {
  return `${v.edge.file}:${v.edge.line} imports ${v.edge.target}: ${v.rule.name}`;
}

/**
 * Allowlisted files that exempt nothing today (the file moved, or stopped importing the forbidden
 * code): the entry can go. Folder entries are left out: they state a layer (e.g. `proto/` for the
 * contract modules), which may have no importer yet. Reported, not failed, so a move does not need
 * two edits at once.
 */
export function unusedAllowances(
  edges: readonly ImportEdge[],
  rules: readonly ImportRule[],
): { rule: ImportRule; pattern: PathPattern }[] {
  const out: { rule: ImportRule; pattern: PathPattern }[] = [];
  for (const rule of rules) {
    for (const pattern of rule.allow ?? []) {
      if (pattern === "" || pattern.endsWith("/")) continue;
      const used = edges.some((e) =>
        matchesPath(e.file, pattern) && any(e.file, rule.files) && any(e.target, rule.forbid)
      );
      if (!used) out.push({ rule, pattern });
    }
  }
  return out;
}
