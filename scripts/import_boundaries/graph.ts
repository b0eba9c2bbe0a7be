/**
 * The import edges of a source tree, as Deno's own parser sees them: `deno info --json` on a
 * throwaway module that imports every file, so type-only imports, re-exports, multi-line imports
 * and literal dynamic imports all count, and nothing in comments or strings does.
 */
import type { ImportEdge } from "./engine.ts";

export interface GraphOptions {
  /** The Deno binary to run. */
  deno: string;
  /** Folders (relative, ending in `/`) not to walk, besides dot-folders and node_modules. */
  skip?: readonly string[];
}

/** Every `.ts` file under `root`, relative to it, sorted. */
export async function sourceFiles(root: string, skip: readonly string[] = []): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string) => {
    for await (const e of Deno.readDir(`${root}/${rel}`)) {
      if (e.name.startsWith(".") || e.name === "node_modules") continue;
      const p = `${rel}${e.name}`;
      if (e.isDirectory) {
        if (!skip.includes(`${p}/`)) await walk(`${p}/`);
      } else if (e.isFile && e.name.endsWith(".ts")) out.push(p);
    }
  };
  await walk("");
  return out.sort();
}

interface InfoSpan {
  start: { line: number; character: number };
}
interface InfoResolution {
  specifier?: string;
  span?: InfoSpan;
  error?: string;
}
interface InfoModule {
  specifier: string;
  dependencies?: { specifier: string; code?: InfoResolution; type?: InfoResolution }[];
}

/** Edges from each file under `root` to other files under `root` (npm:, node: and remote imports are not edges). */
export async function importEdges(root: string, o: GraphOptions): Promise<ImportEdge[]> {
  const absRoot = await Deno.realPath(root);
  const files = await sourceFiles(absRoot, o.skip);
  const base = new URL(`file://${absRoot}/`);
  const dir = await Deno.makeTempDir({ prefix: "weft-imports-" });
  try {
    const entry = `${dir}/entry.ts`;
    await Deno.writeTextFile(
      entry,
      files.map((f) => `import ${JSON.stringify(new URL(f, base).href)};\n`).join(""),
    );
    let config: string[] = ["--no-config"];
    try {
      await Deno.stat(`${absRoot}/deno.json`);
      config = ["--config", `${absRoot}/deno.json`]; // the import map resolves bare specifiers
    } catch {
      // No configuration: relative imports resolve without one.
    }
    const out = await new Deno.Command(o.deno, {
      args: ["info", "--json", ...config, entry],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    if (!out.success) {
      throw new Error(`deno info failed (exit ${out.code}): ${new TextDecoder().decode(out.stderr).trim()}`);
    }
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as { modules: InfoModule[] };
    const rel = (spec: string | undefined) =>
      spec?.startsWith(base.href) ? decodeURIComponent(spec.slice(base.href.length)) : undefined;
    const edges: ImportEdge[] = [];
    for (const m of info.modules) {
      const file = rel(m.specifier);
      if (file === undefined) continue;
      for (const d of m.dependencies ?? []) {
        // Deno reports one specifier once, with the span of its first value import (`code`) and of
        // its first type-only import (`type`): both are edges when both exist.
        const lines = new Set<number>();
        for (const r of [d.code, d.type]) {
          const target = rel(r?.specifier);
          if (target === undefined || !r?.span || lines.has(r.span.start.line)) continue;
          lines.add(r.span.start.line);
          edges.push({ file, line: r.span.start.line + 1, target });
        }
      }
    }
    return edges;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
