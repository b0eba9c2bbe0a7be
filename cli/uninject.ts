/**
 * `weft uninject FILE|-`: removes from Kubernetes YAML or JSON what the proxy injector adds (to a
 * manifest with `weft inject`, or to a live pod: `kubectl get deploy web -o yaml | weft uninject -`):
 * the `linkerd-proxy` container (regular or native sidecar), the `linkerd-init` container, the
 * injected volumes, the `linkerd.io/*` annotations and labels the patch records (as Linkerd's
 * uninject does, `linkerd.io/inject` stays) and `weft.io/injected-defaults`. The opaque-ports
 * annotation goes only when injected-defaults says the injector chose it. Maps and lists the
 * patch had to create are removed when they end up empty, so `inject` then `uninject` gives back
 * the input. YAML documents are edited in place (comments and key order survive); documents
 * without an injected pod spec pass through byte for byte, each with a note.
 */
import { type Document, isMap, isSeq, parseAllDocuments, type YAMLMap, type YAMLSeq } from "yaml";
import { Annotations } from "../proto/annotations.ts";
import { TRUST_ROOTS_VOLUME } from "../proto/trust_roots.ts";
import { INIT_CONTAINER, PROXY_CONTAINER } from "../control/injector/decision.ts";
import { TEMPLATE_PATHS } from "../control/injector/yaml_inject.ts";
import type { CliContext, Command } from "./context.ts";
import { UsageError } from "./context.ts";

export interface UninjectResult {
  output: string;
  notes: string[];
  errors: string[];
  uninjected: number;
}

type Path = (string | number)[];
type Json = Record<string, unknown>;

const LINKERD_PREFIX = "linkerd.io/";

/** The volumes the injector's patch adds (uninject_test checks this list against the patch). */
export const INJECTED_VOLUMES: readonly string[] = [
  "linkerd-proxy-init-xtables-lock",
  "linkerd-identity-end-entity",
  "linkerd-identity-token",
  TRUST_ROOTS_VOLUME,
];

/** Removes list items of `path` whose `name` is in `names`; the list itself goes when emptied. */
function removeNamed(doc: Document, path: Path, names: readonly string[]): number {
  const seq = doc.getIn(path, true);
  if (!isSeq(seq)) return 0;
  const items = (seq as YAMLSeq).items;
  let removed = 0;
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i];
    if (isMap(it) && names.includes(String((it as YAMLMap).get("name")))) {
      items.splice(i, 1);
      removed++;
    }
  }
  if (removed > 0 && items.length === 0) doc.deleteIn(path);
  return removed;
}

/** Removes keys of the map at `path` for which `drop` holds; the map goes when emptied. */
function removeKeys(doc: Document, path: Path, drop: (key: string) => boolean): number {
  const map = doc.getIn(path, true);
  if (!isMap(map)) return 0;
  const m = map as YAMLMap;
  let removed = 0;
  for (const pair of [...m.items]) {
    const k = String((pair.key as { value?: unknown })?.value ?? pair.key);
    if (drop(k)) {
      m.delete(pair.key);
      removed++;
    }
  }
  if (removed > 0 && m.items.length === 0) doc.deleteIn(path);
  return removed;
}

function injectedAnnotation(annotations: Json | undefined): (k: string) => boolean {
  let chosenOpaque = false;
  const defaults = annotations?.[Annotations.injectedDefaults];
  if (typeof defaults === "string") {
    try {
      chosenOpaque = "opaque-ports" in (JSON.parse(defaults) as Json);
    } catch { /* a damaged record: keep the opaque-ports annotation, it may be the user's */ }
  }
  return (k) =>
    (k.startsWith(LINKERD_PREFIX) && k !== Annotations.inject) ||
    k === Annotations.injectedDefaults ||
    (chosenOpaque && k === Annotations.opaquePorts);
}

function getPath(obj: unknown, path: readonly (string | number)[]): unknown {
  let cur = obj;
  for (const p of path) {
    if (typeof cur !== "object" || cur === null) return undefined;
    cur = (cur as Json)[p as string];
  }
  return cur;
}

/** Uninjects one pod template at `base` in `doc`; returns whether anything was removed. */
function uninjectTemplate(doc: Document, js: unknown, base: Path): boolean {
  const meta = getPath(js, [...base, "metadata"]) as Json | undefined;
  let n = 0;
  n += removeNamed(doc, [...base, "spec", "containers"], [PROXY_CONTAINER]);
  n += removeNamed(doc, [...base, "spec", "initContainers"], [INIT_CONTAINER, PROXY_CONTAINER]);
  if (n === 0) return false;
  removeNamed(doc, [...base, "spec", "volumes"], INJECTED_VOLUMES);
  removeKeys(doc, [...base, "metadata", "annotations"], injectedAnnotation(meta?.annotations as Json));
  removeKeys(doc, [...base, "metadata", "labels"], (k) => k.startsWith(LINKERD_PREFIX));
  const m = doc.getIn([...base, "metadata"], true);
  if (isMap(m) && (m as YAMLMap).items.length === 0) doc.deleteIn([...base, "metadata"]);
  return true;
}

function templates(js: Json, base: Path, where: string, notes: string[]): { path: Path; label: string }[] {
  const kind = typeof js.kind === "string" ? js.kind : "";
  const name = (js.metadata as Json | undefined)?.name;
  const label = `${where} (${kind || "no kind"}${name ? ` ${name}` : ""})`;
  if (kind === "List" && Array.isArray(js.items)) {
    return js.items.flatMap((item, i) =>
      typeof item === "object" && item !== null
        ? templates(item as Json, [...base, "items", i], `${where} item ${i + 1}`, notes)
        : []
    );
  }
  const path = TEMPLATE_PATHS[kind];
  if (!path) {
    notes.push(`${label}: passed through: kind ${kind || "(none)"} has no pod template`);
    return [];
  }
  return [{ path: [...base, ...path], label }];
}

export function uninjectText(text: string): UninjectResult {
  const notes: string[] = [];
  const errors: string[] = [];
  const pieces: string[] = [];
  let uninjected = 0;
  let at = 0;
  const asJson = /^\s*[{[]/.test(text);
  const docs = parseAllDocuments(text);
  for (const [i, doc] of (Array.isArray(docs) ? docs : [docs]).entries()) {
    const where = `document ${i + 1}`;
    const original = text.slice(at, doc.range[2]);
    at = doc.range[2];
    if (doc.errors.length > 0) {
      errors.push(`${where}: YAML error: ${doc.errors[0].message}`);
      continue;
    }
    const js = doc.toJS() as unknown;
    if (typeof js !== "object" || js === null || Array.isArray(js)) {
      if (js !== null && js !== undefined) notes.push(`${where}: passed through: not a Kubernetes object`);
      pieces.push(original);
      continue;
    }
    let changed = false;
    for (const t of templates(js as Json, [], where, notes)) {
      if (uninjectTemplate(doc, js, t.path)) {
        changed = true;
        uninjected++;
      } else notes.push(`${t.label}: passed through: no injected proxy`);
    }
    if (!changed) pieces.push(original);
    else pieces.push(asJson ? JSON.stringify(doc.toJS(), null, 2) + "\n" : doc.toString());
  }
  pieces.push(text.slice(at));
  let output = "";
  for (const p of pieces) {
    if (p === "") continue;
    if (output !== "" && !output.endsWith("\n")) output += "\n";
    output += p;
  }
  return { output: errors.length > 0 ? "" : output, notes, errors, uninjected };
}

const HELP = `usage: weft uninject FILE|-

Removes the proxy, its init container, volumes, annotations and labels added by the injector from
Kubernetes YAML or JSON (a file, or - for stdin) and prints the result. Exit 1 on invalid YAML
(nothing printed).
`;

export async function runUninject(args: string[], ctx: CliContext): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    await ctx.out(HELP);
    return 0;
  }
  if (args.length !== 1) throw new UsageError("uninject takes one FILE (or - for stdin)");
  const text = args[0] === "-" ? await ctx.readStdin() : await ctx.readFile(args[0]);
  const r = uninjectText(text);
  for (const n of r.notes) ctx.err(`uninject: ${n}`);
  if (r.errors.length > 0) {
    for (const e of r.errors) ctx.err(`uninject: error: ${e}`);
    return 1;
  }
  await ctx.out(r.output);
  ctx.err(`uninject: ${r.uninjected} pod spec(s) uninjected`);
  return 0;
}

export const uninjectCommand: Command = {
  name: "uninject",
  summary: "remove the injected proxy from Kubernetes YAML or JSON: weft uninject FILE|-",
  run: runUninject,
};
